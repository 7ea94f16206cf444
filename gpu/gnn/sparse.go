package gnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	gblas "gnnmpi/gpu/blas"
	"gnnmpi/gpu/cuda"
	"gnnmpi/sparse"
)

// StepSparse is Step on input rows given as sparse rows x
// (blocks[0].NCols×In, Values nil for a pattern), as model.Model's
// ForwardSparse takes them: the input dropout is applied on the host
// (model.Dropout.ForwardSparseIDs, the same draws), the kept rows are
// uploaded once in CSR form, and the input layer projects first with
// cuSPARSE SpMM (X·W, and Xᵀ·dZ for the weight gradients; see the package
// doc). x gets no gradient.
func (m *Model) StepSparse(blocks []*sparse.CSR, ids [][]int64, x *sparse.Matrix[float32], labels []int32, scale float32, rng *rand.Rand) (Result, error) {
	if err := m.checkSparse(x); err != nil {
		return Result{}, err
	}
	var res Result
	err := m.ctx.Do(func() (err error) {
		res, err = m.step(blocks, ids, input{rows: int(x.NRows), xs: x}, labels, scale, rng)
		return err
	})
	return res, err
}

// checkSparse checks sparse input rows x for the input layer: present,
// as wide as the model's input, and well formed.
func (m *Model) checkSparse(x *sparse.Matrix[float32]) error {
	switch {
	case x == nil:
		return errors.New("gpu/gnn: nil sparse input")
	case x.NCols != int64(m.layers[0].fin):
		return fmt.Errorf("gpu/gnn: sparse input of %d columns for a model of %d inputs", x.NCols, m.layers[0].fin)
	case int64(len(x.Indptr)) != x.NRows+1 || x.Indptr[x.NRows] != x.NNZ() || (x.Values != nil && len(x.Values) != len(x.Indices)):
		return errors.New("gpu/gnn: malformed sparse input")
	}
	return nil
}

// inputCSR uploads the sparse input rows x (their stored values, or ones
// for a pattern) as layer 0's input matrix.
func (m *Model) inputCSR(x *sparse.Matrix[float32]) (gblas.CSR, error) {
	nnz := x.NNZ()
	if nnz > math.MaxInt32 || x.NRows >= math.MaxInt32 || x.NCols > math.MaxInt32 {
		return gblas.CSR{}, fmt.Errorf("gpu/gnn: sparse input has %d entries in %d×%d: over cuSPARSE's 32-bit indices", nnz, x.NRows, x.NCols)
	}
	ptr := make([]int32, x.NRows+1)
	base := x.Indptr[0]
	for i := range x.NRows {
		ptr[i+1] = int32(x.Indptr[i+1] - base)
	}
	col := make([]int32, nnz)
	for e := range col {
		col[e] = int32(x.Indices[base+int64(e)])
	}
	val := make([]float32, nnz)
	if x.Values != nil {
		copy(val, x.Values[base:])
	} else {
		for e := range val {
			val[e] = 1
		}
	}
	m.xsPtr = ptr
	return m.uploadCSR("x", int(x.NRows), int(x.NCols), ptr, col, val)
}

// prefix returns the CSR matrix of a's first rows rows (a block's
// destinations are the first rows of its sources), sharing a's memory.
func prefix(a gblas.CSR, ptr []int32, rows int) gblas.CSR {
	a.Rows, a.NNZ = rows, int(ptr[rows])
	return a
}

// forwardSparse runs layer 0 on the sparse rows xs (dropout applied),
// projecting first as model's ForwardSparse does:
//
//	SAGE: Z = X·W_neigh, out = X[:NDst]·W_self + M·Z + b,
//	GCN:  Z = X·W,       out = Â·Z + b,
//
// all products by cuSPARSE SpMM, and returns out after the hidden ReLU.
func (m *Model) forwardSparse(xs *sparse.Matrix[float32]) (cuda.DevicePtr, error) {
	ly, c := m.layers[0], &m.caches[0]
	fout, nd, ns := ly.fout, c.nd, c.ns
	var err error
	c.sparse = true
	if c.xs, err = m.inputCSR(xs); err != nil {
		return 0, err
	}
	if c.z, err = m.scratch("z0", int64(ns*fout)*4); err != nil {
		return 0, err
	}
	if c.out, err = m.scratch("out0", int64(nd*fout)*4); err != nil {
		return 0, err
	}
	var beta float32
	if !ly.gcn {
		if err := m.sp.SpMM(blas.NoTrans, 1, m.xsPrefix(nd), m.wAt(ly.wSelf), fout, 0, uintptr(c.out)); err != nil {
			return 0, err
		}
		beta = 1
	}
	if err := errors.Join(
		m.sp.SpMM(blas.NoTrans, 1, c.xs, m.wAt(ly.wNeigh), fout, 0, uintptr(c.z)),
		m.sp.SpMM(blas.NoTrans, 1, c.csr, uintptr(c.z), fout, beta, uintptr(c.out)),
	); err != nil {
		return 0, err
	}
	return m.finish(0, c.out, nd)
}

// xsPrefix returns the first nd rows of layer 0's sparse input.
func (m *Model) xsPrefix(nd int) gblas.CSR {
	return prefix(m.caches[0].xs, m.xsPtr, nd)
}

// backwardSparse is layer 0's backward pass after forwardSparse, dy being
// dL/dout (after the ReLU's backward): the weight gradients
//
//	SAGE: dW_self = X[:NDst]ᵀ·dy, dW_neigh = Xᵀ·(Mᵀ·dy),
//	GCN:  dW = Xᵀ·(Âᵀ·dy),
//
// by cuSPARSE SpMM with op(X) = Xᵀ; the bias gradient is backward's.
func (m *Model) backwardSparse(dy cuda.DevicePtr) error {
	ly, c := m.layers[0], &m.caches[0]
	fout, nd := ly.fout, c.nd
	if !ly.gcn {
		if err := m.sp.SpMM(blas.Trans, 1, m.xsPrefix(nd), uintptr(dy), fout, 0, m.gAt(ly.wSelf)); err != nil {
			return err
		}
	}
	// Z's storage takes dL/dZ: backward does not read Z.
	return errors.Join(
		m.sp.SpMM(blas.Trans, 1, c.csr, uintptr(dy), fout, 0, uintptr(c.z)),
		m.sp.SpMM(blas.Trans, 1, c.xs, uintptr(c.z), fout, 0, m.gAt(ly.wNeigh)),
	)
}
