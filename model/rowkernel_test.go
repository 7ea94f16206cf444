package model

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// The row kernels' references: one dense.Axpy per stored entry, in the
// order the kernels before the row axpys used (rows in order, entries in
// stored order; the weight gradient scattered row by row, which gives
// each row of dw its entries in row-major stored order, as the transpose
// by columns did). The kernels must match them bit for bit.

// refMulAdd is sparseMulAdd entry by entry.
func refMulAdd(dst []float32, x *sparse.Matrix[float32], n int, w []float32, f int) {
	for i := range n {
		for e := x.Indptr[i]; e < x.Indptr[i+1]; e++ {
			a := float32(1)
			if x.Values != nil {
				if a = x.Values[e]; a == 0 {
					continue
				}
			}
			c := int(x.Indices[e])
			dense.Axpy(a, w[c*f:(c+1)*f], dst[i*f:(i+1)*f])
		}
	}
}

// refTMulAdd is sparseTMulAdd entry by entry.
func refTMulAdd(dw []float32, x *sparse.Matrix[float32], n int, dy []float32, f int) {
	for i := range n {
		for e := x.Indptr[i]; e < x.Indptr[i+1]; e++ {
			a := float32(1)
			if x.Values != nil {
				if a = x.Values[e]; a == 0 {
					continue
				}
			}
			c := int(x.Indices[e])
			dense.Axpy(a, dy[i*f:(i+1)*f], dw[c*f:(c+1)*f])
		}
	}
}

// refSpMM is spmm entry by entry.
func refSpMM(dst []float32, a *sparse.CSR, w, rowScale, x []float32, f int) {
	for i := range int(a.NRows) {
		out := dst[i*f : (i+1)*f]
		clear(out)
		s := float32(1)
		if rowScale != nil {
			s = rowScale[i]
		}
		for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
			al := s
			if w != nil {
				al *= w[e]
			}
			j := int(a.Indices[e])
			dense.Axpy(al, x[j*f:(j+1)*f], out)
		}
	}
}

// TestRowKernelsBitwise checks sparseMulAdd, the fused two-term
// sparseTMulAddTerms of SAGE's backward pass, spmm and the transposed
// block's mulAdd bit for bit against one Axpy per entry, for widths on and
// off the kernels' 8- and 16-column blocks and sparseTMulAddTerms' packed
// 32-column tiles (one tile, and several with a narrower last one),
// values with stored zeros, a pattern, weights with zeros, and GOMAXPROCS
// 1 to 8.
func TestRowKernelsBitwise(t *testing.T) {
	const nd, ns, fin = 70, 160, 90
	for _, f := range []int{3, 8, 21, 40, 128, 152} {
		for _, pattern := range []bool{false, true} {
			rnd := testRNG(2900 + uint64(f))
			x := randSparseRows(rnd, ns, fin, 0.15, pattern)
			if !pattern {
				for e := range x.Values {
					if e%11 == 0 {
						x.Values[e] = 0 // stored zeros (dropout's) are skipped
					}
				}
			}
			a := randBlock(rnd, nd, ns, 12)
			wt := make([]float32, a.NNZ())
			for e := range wt {
				if e%7 != 0 { // some zero weights take gatherRow's Axpy path
					wt[e] = 2*rnd.Float32() - 1
				}
			}
			inv := NewBlock(a).meanWeights().rowScale
			w := randMatrix(rnd, fin, f)
			dh, dz := randMatrix(rnd, nd, f), randMatrix(rnd, ns, f)
			z := randMatrix(rnd, ns, f)
			start := randMatrix(rnd, fin, f) // dw accumulates onto it
			var tr transposed
			tr.build(a, wt, inv)

			wantMul := make([]float32, ns*f)
			refMulAdd(wantMul, x, ns, w.Data, f)
			wantSelf, wantNeigh := clone(start).Data, clone(start).Data
			refTMulAdd(wantSelf, x, nd, dh.Data, f)
			refTMulAdd(wantNeigh, x, ns, dz.Data, f)
			freshSelf, freshNeigh := make([]float32, fin*f), make([]float32, fin*f)
			refTMulAdd(freshSelf, x, nd, dh.Data, f)
			refTMulAdd(freshNeigh, x, ns, dz.Data, f)
			wantSpMM := make([]float32, nd*f)
			refSpMM(wantSpMM, a, wt, inv, z.Data, f)
			wantMean := make([]float32, nd*f)
			refSpMM(wantMean, a, nil, inv, z.Data, f)
			wantT := make([]float32, ns*f)
			for i := range nd {
				for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
					j := int(a.Indices[e])
					dense.Axpy(inv[i]*wt[e], dh.Data[i*f:(i+1)*f], wantT[j*f:(j+1)*f])
				}
			}
			for _, procs := range []int{1, 2, 3, 8} {
				t.Run(fmt.Sprintf("f=%d/pattern=%t/procs=%d", f, pattern, procs), func(t *testing.T) {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
					mul := make([]float32, ns*f)
					sparseMulAdd(mul, x, ns, w.Data, f)
					assert.Equal(t, wantMul, mul, "X·W")
					self, neigh := clone(start).Data, clone(start).Data
					sparseTMulAddTerms(x, f, tmulTerm{dw: self, dy: dh.Data, n: nd}, tmulTerm{dw: neigh, dy: dz.Data, n: ns})
					assert.Equal(t, wantSelf, self, "X_dstᵀ·dh")
					assert.Equal(t, wantNeigh, neigh, "Xᵀ·dz")
					// Fresh terms overwrite what dw held: start's values
					// must not show.
					self, neigh = clone(start).Data, clone(start).Data
					sparseTMulAddTerms(x, f, tmulTerm{dw: self, dy: dh.Data, n: nd, fresh: true}, tmulTerm{dw: neigh, dy: dz.Data, n: ns, fresh: true})
					assert.Equal(t, freshSelf, self, "fresh X_dstᵀ·dh")
					assert.Equal(t, freshNeigh, neigh, "fresh Xᵀ·dz")
					got := make([]float32, nd*f)
					spmm(got, a, wt, inv, z.Data, f)
					assert.Equal(t, wantSpMM, got, "weighted spmm")
					spmm(got, a, nil, inv, z.Data, f)
					assert.Equal(t, wantMean, got, "mean spmm")
					gotT := make([]float32, ns*f)
					tr.mulAdd(gotT, dh.Data, f)
					assert.Equal(t, wantT, gotT, "Sᵀ·dy")
					// mulTo overwrites: dz's stale values must not show.
					stale := clone(dz).Data
					tr.mulTo(stale, dh.Data, f)
					assert.Equal(t, wantT, stale, "Sᵀ·dy over stale values")
				})
			}
		}
	}
}
