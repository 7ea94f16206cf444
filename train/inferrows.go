package train

import (
	"slices"

	"gnnmpi/dense"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

// Layer-wise inference in place. On one rank that holds the whole graph, a
// SAGE layer's chunks are rows of the graph's own adjacency, whose global
// column ids index the whole previous layer (model.RowPass, rowPass), so
// no chunk is relabelled and no input row is copied. The rows are those of
// the layer in one chunk (the whole graph's block): bit for bit where the
// BLAS computes a row of a product apart from the others, else to the last
// bits. On several ranks a hidden layer whose chunks share one fetch of
// the halo does the same over the rank's own rows and the halo's
// (haloRowPass). The same chunks give the same bits every time.

// rowPass returns layer l's row pass over the whole graph, or nil when the
// layer takes the chunks: it needs one rank computing on the host, its
// vertices 0…n−1 in order as the adjacency's rows (wholeRows), a layer
// with a row form (SAGE) and the layer's input whole in place (the
// store's own float32 rows for the input layer, the previous layer's
// output otherwise). The pass projects every vertex first, where that
// order is the cheaper, only when those n rows fit a chunk's bound, which
// the memory check counts twice (two chunks' gathered inputs, which the
// pass never gathers); else it aggregates first.
func (t *trainer) rowPass(l int, owned []int64, h *dense.Matrix) *model.RowPass {
	if noRowPass || t.c.Size() != 1 || t.dev != nil || !t.wholeRows(owned) {
		return nil
	}
	x := h
	if l == 0 {
		rows, ok := t.store.OwnRowsF32()
		if !ok {
			return nil
		}
		x = &dense.Matrix{Rows: len(owned), Cols: t.store.Cols(), Data: rows}
	}
	return t.m.RowPass(l, x, nil, t.d.Adj.NNZ(), t.evalValues())
}

// haloRowPass returns hidden layer l's row pass over the rank's own rows h
// (owned's order) and its halo's hx (t.halo's order), for a layer computed
// in several chunks that share one fetch of the halo (the chunks
// communicate nothing then, so a rank may compute them either way), on
// the host, with a row form (SAGE; projecting first within a chunk's
// bound, as rowPass); nil otherwise. Its chunks are haloChunk's: the
// rank's adjacency rows over its own rows and the halo's in place,
// nothing relabelled or copied.
func (t *trainer) haloRowPass(l int, owned []int64, h, hx *dense.Matrix) *model.RowPass {
	if noRowPass || t.dev != nil || l == 0 || hx == nil || h.Rows != len(owned) {
		return nil
	}
	if t.ownedNNZ == 0 {
		for _, g := range owned {
			t.ownedNNZ += int64(len(t.d.Row(g)))
		}
	}
	return t.m.RowPass(l, h, hx, t.ownedNNZ, t.evalValues())
}

// noRowPass, set by tests, makes every layer take the chunks.
var noRowPass = false

// inferRows computes layer l's output for the rank's n vertices with
// pass, over the layer's chunk boundaries (they bound the layer's scratch:
// a chunk's neighbour means and output rows), chunk lo…hi taking
// rows(lo, hi) (rowChunk on a whole graph, haloChunk otherwise).
func (t *trainer) inferRows(pass *model.RowPass, l, n int, rows func(lo, hi int) *sparse.CSR) *dense.Matrix {
	out := dense.New(n, t.m.Layers[l].OutDim())
	b := t.evalChunks[l]
	for k := range len(b) - 1 {
		lo, hi := b[k], min(b[k+1], n)
		if lo >= hi {
			continue
		}
		y := pass.Rows(rows(lo, hi), lo)
		copy(out.Data[lo*y.Cols:], y.Data)
	}
	return out
}

// rowChunk returns adjacency rows lo…hi−1 with global column ids, each
// sorted without repeats, as the whole graph's block has them: a view of
// the adjacency when its rows are (rowsSorted), else a sorted,
// deduplicated copy (keepRows).
func (t *trainer) rowChunk(lo, hi int) *sparse.CSR {
	adj := t.d.Adj
	if t.rowsSorted {
		return &sparse.CSR{NRows: int64(hi - lo), NCols: adj.NCols, Indptr: adj.Indptr[lo : hi+1], Indices: adj.Indices[:adj.Indptr[hi]]}
	}
	return t.keepRows(lo, hi, adj.NCols, adj.Indptr[hi]-adj.Indptr[lo], func(i int, row []int64) []int64 {
		return append(row, adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]]...)
	})
}

// haloChunk returns the adjacency rows of owned[lo:hi] with their columns
// as a haloRowPass names them: a vertex the rank owns under ebook by its
// local id, a halo vertex by len(owned) plus its place in t.halo; each
// row sorted without repeats (keepRows).
func (t *trainer) haloChunk(owned []int64, lo, hi int) *sparse.CSR {
	r, own := t.c.Rank(), int64(len(owned))
	var nnz int64
	for _, g := range owned[lo:hi] {
		nnz += int64(len(t.d.Row(g)))
	}
	return t.keepRows(lo, hi, own+int64(len(t.halo)), nnz, func(i int, row []int64) []int64 {
		for _, g := range t.d.Row(owned[i]) {
			if q, lid := t.ebook.Locate(g); q == r {
				row = append(row, lid)
				continue
			}
			k, ok := slices.BinarySearch(t.halo, g)
			if !ok {
				panic("train: an inference source outside the halo")
			}
			row = append(row, own+int64(k))
		}
		return row
	})
}

// keepRows returns rows lo…hi−1 of ncols columns that add(i, row)
// appends to row (nnz entries in all), each then sorted and deduplicated
// (sortedCopy), kept for the next
// evaluations (keyed by lo, hi) while the rows kept fit the chunks' cache
// budget (trainer.chunk's).
func (t *trainer) keepRows(lo, hi int, ncols, nnz int64, add func(i int, row []int64) []int64) *sparse.CSR {
	key := [2]int{lo, hi}
	if a, ok := t.rowCache[key]; ok {
		return a
	}
	a := sortedCopy(hi-lo, ncols, nnz, func(i int, row []int64) []int64 { return add(lo+i, row) })
	if size := 8 * (int64(len(a.Indices)) + a.NRows + 1); t.chunkCached+size <= 4*t.evalValues() {
		if t.rowCache == nil {
			t.rowCache = map[[2]int]*sparse.CSR{}
		}
		t.rowCache[key] = a
		t.chunkCached += size
	}
	return a
}

// sortedCopy returns n rows of ncols columns, row i the entries add(i,
// row) appends to row, sorted and deduplicated, as one CSR whose indices
// start with room for nnz entries (the rows' entries before
// deduplication).
func sortedCopy(n int, ncols, nnz int64, add func(i int, row []int64) []int64) *sparse.CSR {
	a := &sparse.CSR{NRows: int64(n), NCols: ncols, Indptr: make([]int64, n+1), Indices: make([]int64, 0, nnz)}
	for i := range n {
		s := len(a.Indices)
		a.Indices = add(i, a.Indices)
		row := a.Indices[s:]
		slices.Sort(row)
		a.Indices = a.Indices[:s+len(slices.Compact(row))]
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	return a
}

// wholeRows reports whether this rank's inference vertices owned are the
// whole graph's 0…n−1 in order, held as adjacency rows 0…n−1 of n
// columns. It checks once, and notes whether every row is sorted without
// repeats (rowsSorted).
func (t *trainer) wholeRows(owned []int64) bool {
	if t.rowsWhole == 0 {
		t.rowsWhole = 2
		if adj, n := t.d.Adj, int64(len(owned)); t.d.RowLo == 0 && adj.NRows == n && adj.NCols == n && ascending(owned) {
			t.rowsWhole, t.rowsSorted = 1, sortedRows(adj)
		}
	}
	return t.rowsWhole == 1
}

// ascending reports whether ids is 0, 1, …, len(ids)−1.
func ascending(ids []int64) bool {
	for i, v := range ids {
		if v != int64(i) {
			return false
		}
	}
	return true
}

// sortedRows reports whether every row of adj is strictly ascending.
func sortedRows(adj *sparse.CSR) bool {
	for i := range adj.NRows {
		if !strictlyAscending(adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]]) {
			return false
		}
	}
	return true
}
