package model

import (
	"math/rand/v2"
	"sync"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Sparse input rows.
//
// Bag-of-words features are 0.4–1.3% nonzero, so the input layer takes them
// as CSR rows (*sparse.Matrix[float32]: Values nil for a pattern, every
// stored value 1) and projects first: X·W costs nnz(X)·fout multiply-adds
// instead of rows·fin·fout, and the weight gradient Xᵀ·dZ is a scatter of
// dZ's rows, one per stored entry. X is never densified, and a pattern's
// ones are never materialised.

// SparseLayer is a Layer that also takes its input as sparse rows. SAGE,
// GCN and GAT implement it.
type SparseLayer interface {
	Layer
	// ForwardSparse is Forward with x (NSrc×fin) given as CSR rows; it
	// projects first (Z = X·W), then aggregates. Backward after it adds the
	// parameter gradients as after Forward and panics if needInput is true:
	// sparse inputs get no gradient. x must not change until Backward
	// returns.
	ForwardSparse(a *sparse.CSR, x *sparse.Matrix[float32], train bool, rng *rand.Rand) *dense.Matrix
}

var (
	_ SparseLayer = (*SAGE)(nil)
	_ SparseLayer = (*GCN)(nil)
	_ SparseLayer = (*GAT)(nil)
)

// checkSparseBlock panics unless a and the sparse rows x conform to the
// block convention.
func checkSparseBlock(a *sparse.CSR, x *sparse.Matrix[float32], fin int) {
	switch {
	case a == nil || x == nil:
		panic("model: nil block or input")
	case x.NRows != a.NCols:
		panic("model: x.NRows != block NSrc")
	case a.NRows > a.NCols:
		panic("model: block NDst > NSrc")
	case x.NCols != int64(fin):
		panic("model: x.NCols != layer input width")
	case int64(len(a.Indptr)) != a.NRows+1:
		panic("model: malformed block Indptr")
	}
	checkRows(x)
}

// checkRows panics unless x's arrays have the lengths of a CSR matrix.
func checkRows(x *sparse.Matrix[float32]) {
	switch {
	case int64(len(x.Indptr)) != x.NRows+1 || x.Indptr[x.NRows] != x.NNZ():
		panic("model: malformed sparse input Indptr")
	case x.Values != nil && len(x.Values) != len(x.Indices):
		panic("model: sparse input Values length != NNZ")
	}
}

// noInputGrad panics if needInput: a layer run by ForwardSparse has no
// dL/dx.
func noInputGrad(needInput bool) {
	if needInput {
		panic("model: no dL/dx for a sparse input")
	}
}

// sparseMulAdd computes dst += X[:n]·w: X's first n rows (entries of
// column c multiplying row c of w, a row-major X.NCols×f matrix) into dst,
// n×f. Row i of dst adds its entries in stored order, skipping stored
// zeros; a pattern's entries add w's rows as they are. Rows run in parallel,
// each on one goroutine, so the result does not depend on GOMAXPROCS. Each
// row of dst stays in registers while its entries' rows of w are added
// (dense.AxpyGather): the kernel reads nnz·f·4 bytes of w.
func sparseMulAdd(dst []float32, x *sparse.Matrix[float32], n int, w []float32, f int) {
	sparseMul(dst, x, n, w, f, dense.AxpyGather)
}

// sparseMulTo computes dst = X[:n]·w, overwriting dst (n×f) without
// reading it: bit for bit clear(dst[:n·f]) and then sparseMulAdd, with one
// pass over dst instead of three (dense.AxpyGatherTo).
func sparseMulTo(dst []float32, x *sparse.Matrix[float32], n int, w []float32, f int) {
	sparseMul(dst, x, n, w, f, dense.AxpyGatherTo)
}

// sparseMul runs sparseMulAdd's rows with the row kernel gather.
func sparseMul(dst []float32, x *sparse.Matrix[float32], n int, w []float32, f int,
	gather func(dst, alpha []float32, idx []int64, x []float32, ld int)) {
	dst = dst[:n*f]
	w = w[:int(x.NCols)*f]
	parallel(n, 1, (x.Indptr[n]-x.Indptr[0])*int64(f), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			e0, e1 := x.Indptr[i], x.Indptr[i+1]
			var a []float32
			if x.Values != nil {
				a = x.Values[e0:e1]
			}
			gather(dst[i*f:(i+1)*f], a, x.Indices[e0:e1], w, f)
		}
	})
}

// tmulTerm is one weight gradient dw += X[:n]ᵀ·dy of sparseTMulAdd: dw is
// X.NCols×f, dy n×f. With fresh, dw counts as zero whatever it holds
// (Param.gradDst), and sparseTMulAddTerms overwrites all of it: dw =
// X[:n]ᵀ·dy, the same bits as adding into a cleared dw.
type tmulTerm struct {
	dw, dy []float32
	n      int
	fresh  bool
}

// sparseTMulAdd computes dw += X[:n]ᵀ·dy: for every stored entry (i, c, a)
// of X's first n rows, row c of dw (X.NCols×f) gets a·(row i of dy, n×f),
// stored zeros skipped, a pattern's entries adding dy's rows as they are.
// Each row of dw adds its entries in row-major stored order.
func sparseTMulAdd(dw []float32, x *sparse.Matrix[float32], n int, dy []float32, f int) {
	sparseTMulAddTerms(x, f, tmulTerm{dw: dw, dy: dy, n: n})
}

// tmulTile is the width of the column tiles of sparseTMulAddTerms: 32
// floats, so that a tile of a weight gradient with 8,415 rows (1.1 MB)
// about fits a core's L2 cache while the scatter reads and writes it. On
// the physics-like shapes of BenchmarkSparseFirstLayer the tiles took about
// two thirds of the CPU time of one pass with whole rows (measured on a
// 2-core AMD EPYC with 1 MB of L2 per core; 16- and 64-wide tiles were
// slower).
const tmulTile = 32

// tileBufs holds the packed tiles of sparseTMulAddTerms (*[]float32), one
// per goroutine.
var tileBufs sync.Pool

// sparseTMulAddTerms computes every term's dw += X[:n]ᵀ·dy (see
// sparseTMulAdd): entry (i, c, a) of X adds a·(row i of dy) to row c of
// each term's dw whose n exceeds i. It scatters row i of dy, read once,
// into the rows of dw (dense.ScatterRows: each entry reads and writes
// f·4 bytes of dw), tile by tile of tmulTile columns and term by term, so
// that the rows of dw it hits stay in cache; goroutines take blocks of
// columns. Each element of dw adds its terms in row-major stored order,
// whatever GOMAXPROCS is, and no transpose of X is built. (One pass over
// X's rows feeding both terms of a SAGE layer read the indices once but
// kept twice the rows of dw live: slower.)
//
// When f is wider than a tile, the tile is copied into a packed buffer
// (row stride tmulTile) for the scatter and back: in dw its rows lie f·4
// bytes apart (1 KB for f = 256), so they all fall in the few cache sets
// of the same offsets within a page and evict each other long before the
// tile fills L2. Packed, the physics-like tile's scatter took about 11%
// less CPU time, the copies included, and checking X's indices once per
// term instead of once per tile (dense.ScatterRows) another 13% (28.5,
// 25.3 then 21.6 ms of CPU for BenchmarkFirstLayerKernels' sparse-tmul
// shapes on one core of a 2-core AMD EPYC with 1 MB of L2 per core). The
// sums are the same, bit for bit. A fresh term's tile starts from a
// cleared buffer instead of a copy of dw, so that dw is only written.
func sparseTMulAddTerms(x *sparse.Matrix[float32], f int, terms ...tmulTerm) {
	nc := int(x.NCols)
	rows := 0
	for k := range terms {
		t := &terms[k]
		t.dw, t.dy = t.dw[:nc*f], t.dy[:t.n*f]
		rows = max(rows, t.n)
	}
	nnz := x.Indptr[rows] - x.Indptr[0]
	if f <= tmulTile {
		// Goroutines add straight into dw, by blocks of its columns.
		for k := range terms {
			if terms[k].fresh {
				clear(terms[k].dw)
			}
		}
	}
	// X's rows checked once, not once per tile and goroutine.
	xr := make([]*dense.ScatterRows, len(terms))
	for k, t := range terms {
		xr[k] = dense.NewScatterRows(x.Indptr[:t.n+1], x.Indices, x.Values)
	}
	// Blocks of 16 columns: 64-byte lines, so no two goroutines write one.
	parallel(f, 16, nnz*int64(f)*int64(len(terms)), func(lo, hi int) {
		if f <= tmulTile {
			for k, t := range terms {
				xr[k].AddTo(t.dw[lo:], f, t.dy[lo:], f, hi-lo)
			}
			return
		}
		bp, _ := tileBufs.Get().(*[]float32)
		if bp == nil {
			bp = new([]float32)
		}
		*bp = dense.Grow(*bp, nc*tmulTile)
		buf := *bp
		for tlo := lo; tlo < hi; tlo += tmulTile {
			thi := min(tlo+tmulTile, hi)
			w := thi - tlo
			for k, t := range terms {
				if t.fresh {
					clear(buf[:nc*w])
				} else {
					for c := range nc {
						copy(buf[c*w:(c+1)*w], t.dw[c*f+tlo:c*f+thi])
					}
				}
				xr[k].AddTo(buf, w, t.dy[tlo:], f, w)
				for c := range nc {
					copy(t.dw[c*f+tlo:c*f+thi], buf[c*w:(c+1)*w])
				}
			}
		}
		tileBufs.Put(bp)
	})
}

// ForwardSparse is Forward with x given as sparse rows (x.NRows =
// blocks[0].NCols sources, x.NCols = Config.In): dropout on x's stored
// nonzeros, then the input layer's ForwardSparse, then the other layers as
// in Forward. It draws the same random numbers as Forward on x's dense form
// (each row's columns sorted and distinct), so the two agree up to float32
// rounding. Backward works after it, as after Forward.
// It will panic if len(blocks) != len(m.Layers) or the shapes do not
// conform.
func (m *Model) ForwardSparse(blocks []*sparse.CSR, x *sparse.Matrix[float32], train bool, rng *rand.Rand) *dense.Matrix {
	return m.ForwardSparseIDs(blocks, nil, x, train, rng)
}

// ForwardSparseIDs is ForwardSparse with the dropout masks keyed by
// vertex, as ForwardIDs: ids[l] holds the global ids of layer l's input
// rows; nil ids is ForwardSparse.
// It will panic if ids is not nil and len(ids) != len(blocks) or
// len(ids[l]) != blocks[l].NCols, as ForwardSparse otherwise.
func (m *Model) ForwardSparseIDs(blocks []*sparse.CSR, ids [][]int64, x *sparse.Matrix[float32], train bool, rng *rand.Rand) *dense.Matrix {
	if len(blocks) != len(m.Layers) {
		panic("model: len(blocks) != number of layers")
	}
	if x == nil {
		panic("model: nil block or input")
	}
	checkRows(x)
	checkLayerIDs(blocks, ids)
	xs := m.drops[0].ForwardSparseIDs(x, layerIDs(ids, 0), train, rng)
	m.setIDs(0, layerIDs(ids, 0))
	h := m.sparseLayer(0).ForwardSparse(blocks[0], xs, train, rng)
	if m.acts[0] != nil {
		h = m.acts[0].Forward(h)
	}
	return m.forwardFrom(1, blocks, ids, h, train, rng)
}

// ForwardLayerSparse is ForwardLayer with x given as sparse rows (the
// input of layer 0 in layer-wise inference).
// It will panic if l is out of range or the shapes do not conform.
func (m *Model) ForwardLayerSparse(l int, a *sparse.CSR, x *sparse.Matrix[float32]) *dense.Matrix {
	h := m.sparseLayer(l).ForwardSparse(a, x, false, nil)
	if m.acts[l] != nil {
		h = m.acts[l].Forward(h)
	}
	m.ready = false
	return h
}

// sparseLayer returns layer l as a SparseLayer.
func (m *Model) sparseLayer(l int) SparseLayer {
	s, ok := m.Layers[l].(SparseLayer)
	if !ok {
		panic("model: layer does not take sparse input")
	}
	return s
}

// ForwardSparse returns x·W + b for sparse rows x (n×fin, Values nil for
// a pattern) as a new n×fout matrix and caches x for Backward, which then
// adds dL/dW = xᵀ·dy without densifying x and panics if needInput is true.
// Row i starts from b and adds x's entries in stored order.
// It will panic if x is nil, malformed or x.NCols != fin.
func (l *Linear) ForwardSparse(x *sparse.Matrix[float32]) *dense.Matrix {
	if x == nil || x.NCols != int64(l.fin) {
		panic("model: x.NCols != layer input width")
	}
	checkRows(x)
	l.x, l.xs = nil, x
	n := int(x.NRows)
	out := dense.New(n, l.fout)
	for i := range n {
		copy(out.Data[i*l.fout:(i+1)*l.fout], l.b.W)
	}
	sparseMulAdd(out.Data, x, n, l.w.W, l.fout)
	return out
}
