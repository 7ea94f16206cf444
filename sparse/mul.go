package sparse

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// ErrShape is wrapped by the errors returned for operands whose dimensions
// do not conform.
var ErrShape = errors.New("sparse: dimension mismatch")

// Accumulator choice. The dense accumulator costs 9 bytes per column of B,
// allocated once per product; it is used when that is small next to the
// work of the product, and never above maxDenseCols columns.
const (
	denseMinCols = 1 << 12 // always dense up to this many columns
	maxDenseCols = 1 << 25 // 288 MiB of accumulator
	maxPrealloc  = 1 << 26 // 1 GiB of C preallocated at most
)

// Mul returns the product C = A·B over the ordinary (+, ×) semiring, computed
// row by row with Gustavson's algorithm: row i of C is the sum of the rows k
// of B scaled by A(i,k).
//
// A nil Values slice stands for all ones, so the product of two pattern
// matrices counts paths: C(i,j) = number of k with A(i,k) and B(k,j) stored.
// C always has Values. It holds an entry for every (i, j) reached by at least
// one product term, even if the terms sum to zero, and the columns of each
// row of C are sorted and distinct. The rows of A and B need not be sorted,
// and repeated entries are summed. For every (i, j) the terms are added in
// the order of the entries of row i of A, so the result is deterministic.
//
// Mul takes O(flops + Σ_i c_i·log c_i) time, where flops is the number of
// scalar products (Σ over the entries A(i,k) of the length of row k of B)
// and c_i the length of row i of C; a row of A with a single entry whose
// row of B is sorted and distinct (a selection) is copied in O(c_i). The
// inputs are not modified and C shares no memory with them.
//
// Mul returns an error wrapping ErrShape if A.NCols != B.NRows.
// It will panic if a or b is not a valid CSR (see Validate).
func Mul(a, b *CSR) (*CSR, error) {
	if a.NCols != b.NRows {
		return nil, fmt.Errorf("%w: %d×%d times %d×%d", ErrShape, a.NRows, a.NCols, b.NRows, b.NCols)
	}
	f := flops(a, b)
	return mul(a, b, f, useDense(b.NCols, f)), nil
}

// useDense reports whether a product with ncols columns and f scalar
// products should use the dense accumulator.
func useDense(ncols, f int64) bool {
	return ncols <= denseMinCols || (ncols <= maxDenseCols && ncols <= 2*f)
}

// flops returns the number of scalar products of A·B.
func flops(a, b *CSR) int64 {
	var f int64
	for _, k := range a.Indices {
		f += b.Indptr[k+1] - b.Indptr[k]
	}
	return f
}

// mul computes A·B, which takes f scalar products, with a dense
// accumulator (dense) or a hash accumulator.
func mul(a, b *CSR, f int64, dense bool) *CSR {
	// f bounds nnz(C); beyond maxPrealloc entries, append grows C.
	nnzHint := min(f, maxPrealloc)
	c := &CSR{
		NRows:   a.NRows,
		NCols:   b.NCols,
		Indptr:  make([]int64, a.NRows+1),
		Indices: make([]int64, 0, nnzHint),
		Values:  make([]float64, 0, nnzHint),
	}
	var acc accumulator // made on first use: selection rows may not need one
	for i := range a.NRows {
		lo, hi := a.Indptr[i], a.Indptr[i+1]
		if hi-lo == 1 && copyRow(c, b, a.Indices[lo], valueAt(a.Values, lo)) {
			c.Indptr[i+1] = int64(len(c.Indices))
			continue
		}
		var rowFlops int64
		for _, k := range a.Indices[lo:hi] {
			rowFlops += b.Indptr[k+1] - b.Indptr[k]
		}
		if acc == nil {
			if dense {
				acc = newDenseAcc(b.NCols)
			} else {
				acc = new(hashAcc)
			}
		}
		acc.reset(rowFlops)
		for p := lo; p < hi; p++ {
			k, av := a.Indices[p], valueAt(a.Values, p)
			for q := b.Indptr[k]; q < b.Indptr[k+1]; q++ {
				acc.add(b.Indices[q], av*valueAt(b.Values, q))
			}
		}
		c.Indices, c.Values = acc.flush(c.Indices, c.Values)
		c.Indptr[i+1] = int64(len(c.Indices))
	}
	return c
}

// copyRow appends row k of b scaled by v to c when that row is already
// sorted and free of repeats, the common case of a row of A with a single
// entry (a selection matrix), and reports whether it did.
func copyRow(c, b *CSR, k int64, v float64) bool {
	lo, hi := b.Indptr[k], b.Indptr[k+1]
	row := b.Indices[lo:hi]
	for p := 1; p < len(row); p++ {
		if row[p] <= row[p-1] {
			return false
		}
	}
	c.Indices = append(c.Indices, row...)
	start := len(c.Values)
	c.Values = slices.Grow(c.Values, len(row))[:start+len(row)]
	vals := c.Values[start:]
	if b.Values == nil {
		for k := range vals {
			vals[k] = v
		}
	} else {
		for k, bv := range b.Values[lo:hi] {
			vals[k] = v * bv
		}
	}
	return true
}

// valueAt returns vals[p], or 1 for a pattern matrix (nil vals).
func valueAt(vals []float64, p int64) float64 {
	if vals == nil {
		return 1
	}
	return vals[p]
}

// accumulator sums the scaled rows of B that make up one row of C.
type accumulator interface {
	// reset prepares for a row with at most flops terms.
	reset(flops int64)
	// add adds v to column j.
	add(j int64, v float64)
	// flush appends the row's columns in ascending order and their sums,
	// and empties the accumulator.
	flush(ind []int64, val []float64) ([]int64, []float64)
}

// denseAcc is Gustavson's sparse accumulator: a value per column of B, a
// mark telling which columns the current row has touched, and the list of
// touched columns.
type denseAcc struct {
	val  []float64
	mark []bool
	cols []int64
}

func newDenseAcc(ncols int64) *denseAcc {
	return &denseAcc{val: make([]float64, ncols), mark: make([]bool, ncols)}
}

func (d *denseAcc) reset(int64) {}

func (d *denseAcc) add(j int64, v float64) {
	if d.mark[j] {
		d.val[j] += v
		return
	}
	d.mark[j] = true
	d.val[j] = v
	d.cols = append(d.cols, j)
}

func (d *denseAcc) flush(ind []int64, val []float64) ([]int64, []float64) {
	slices.Sort(d.cols)
	for _, j := range d.cols {
		ind = append(ind, j)
		val = append(val, d.val[j])
		d.mark[j] = false
	}
	d.cols = d.cols[:0]
	return ind, val
}

// hashAcc is an open-addressing (linear probing) accumulator sized to the
// row's number of terms, for products whose B has too many columns for a
// dense accumulator.
type hashAcc struct {
	keys  []int64 // column, or -1 for an empty slot; all empty between rows
	val   []float64
	mask  uint64
	shift uint
	slots []int64 // occupied slots of the current row
	cols  []int64
}

// hashMul is the 64-bit golden-ratio constant of Fibonacci hashing.
const hashMul = 0x9e3779b97f4a7c15

func (h *hashAcc) reset(flops int64) {
	// A table at least twice the number of terms keeps the load ≤ 1/2.
	size := uint64(16)
	if need := uint64(2 * flops); need > size {
		size = 1 << bits.Len64(need-1)
	}
	if uint64(len(h.keys)) < size {
		h.keys = make([]int64, size)
		for s := range h.keys {
			h.keys[s] = -1
		}
		h.val = make([]float64, size)
	}
	// Use the first size slots; the rest stay empty.
	h.mask = size - 1
	h.shift = uint(64 - bits.Len64(h.mask))
}

func (h *hashAcc) slot(j int64) uint64 {
	s := (uint64(j) * hashMul) >> h.shift & h.mask
	for h.keys[s] != j && h.keys[s] != -1 {
		s = (s + 1) & h.mask
	}
	return s
}

func (h *hashAcc) add(j int64, v float64) {
	s := h.slot(j)
	if h.keys[s] == j {
		h.val[s] += v
		return
	}
	h.keys[s] = j
	h.val[s] = v
	h.slots = append(h.slots, int64(s))
	h.cols = append(h.cols, j)
}

func (h *hashAcc) flush(ind []int64, val []float64) ([]int64, []float64) {
	slices.Sort(h.cols)
	for _, j := range h.cols {
		ind = append(ind, j)
		val = append(val, h.val[h.slot(j)])
	}
	for _, s := range h.slots {
		h.keys[s] = -1
	}
	h.slots = h.slots[:0]
	h.cols = h.cols[:0]
	return ind, val
}
