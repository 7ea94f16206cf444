package sparse

import (
	"fmt"
	"slices"
	"sort"
)

// FromCOO returns the nrows×ncols CSR matrix holding the coordinate-format
// entries (rows[k], cols[k]) with value vals[k]. vals may be nil, giving a
// pattern matrix.
//
// The conversion is a stable counting sort by row: within a row, entries keep
// the order they have in the input, and duplicates are kept. It takes
// O(nrows + len(rows)) time. The inputs are not modified and the result
// shares no memory with them.
//
// FromCOO returns an error if a dimension is negative, the slices' lengths
// differ, or an index lies outside the matrix.
func FromCOO(nrows, ncols int64, rows, cols []int64, vals []float64) (*CSR, error) {
	if nrows < 0 || ncols < 0 {
		return nil, fmt.Errorf("sparse: negative dimension %d×%d", nrows, ncols)
	}
	if len(rows) != len(cols) {
		return nil, fmt.Errorf("sparse: %d row indices but %d column indices", len(rows), len(cols))
	}
	if vals != nil && len(vals) != len(rows) {
		return nil, fmt.Errorf("sparse: %d values for %d entries", len(vals), len(rows))
	}
	for k, i := range rows {
		if j := cols[k]; i < 0 || i >= nrows || j < 0 || j >= ncols {
			return nil, fmt.Errorf("sparse: entry %d at (%d,%d) outside %d×%d", k, i, j, nrows, ncols)
		}
	}

	// Classic two-shift counting sort: count row i at ptr[i+2], take the
	// prefix sum so that ptr[i+1] is the start of row i, then advance
	// ptr[i+1] while placing; afterwards ptr[:nrows+1] is the row pointer.
	ptr := make([]int64, nrows+2)
	for _, i := range rows {
		ptr[i+2]++
	}
	for i := int64(2); i < nrows+2; i++ {
		ptr[i] += ptr[i-1]
	}
	ind := make([]int64, len(cols))
	var val []float64
	if vals != nil {
		val = make([]float64, len(vals))
	}
	for k, i := range rows {
		dst := ptr[i+1]
		ptr[i+1]++
		ind[dst] = cols[k]
		if val != nil {
			val[dst] = vals[k]
		}
	}
	return &CSR{NRows: nrows, NCols: ncols, Indptr: ptr[: nrows+1 : nrows+1], Indices: ind, Values: val}, nil
}

// SortRows sorts the column indices of every row of a in ascending order,
// permuting Values along with them. The sort is stable, so entries with
// equal columns keep their relative order (and duplicates are kept). Rows
// that are already sorted are left untouched.
//
// SortRows modifies a in place; SortedRows leaves its input intact.
func (a *Matrix[T]) SortRows() {
	for i := int64(0); i < a.NRows; i++ {
		lo, hi := a.Indptr[i], a.Indptr[i+1]
		ind := a.Indices[lo:hi]
		if slices.IsSorted(ind) {
			continue
		}
		if a.Values == nil {
			slices.Sort(ind)
			continue
		}
		sortPairs(ind, a.Values[lo:hi])
	}
}

// SortedRows returns a copy of a in which the column indices of every row
// are sorted ascending, Values permuted along with them. Entries with equal
// columns keep their relative order. a is not modified.
func SortedRows[T Scalar](a *Matrix[T]) *Matrix[T] {
	c := &Matrix[T]{
		NRows:   a.NRows,
		NCols:   a.NCols,
		Indptr:  slices.Clone(a.Indptr),
		Indices: slices.Clone(a.Indices),
		Values:  slices.Clone(a.Values),
	}
	c.SortRows()
	return c
}

// RowsSorted reports whether the column indices of every row of a are in
// non-decreasing order. Repeated columns are allowed.
func (a *Matrix[T]) RowsSorted() bool {
	for i := int64(0); i < a.NRows; i++ {
		if !slices.IsSorted(a.Indices[a.Indptr[i]:a.Indptr[i+1]]) {
			return false
		}
	}
	return true
}

// sortPairs stably sorts ind ascending, applying the same permutation to val.
func sortPairs[T any](ind []int64, val []T) {
	if len(ind) <= 16 {
		// Insertion sort: stable and fastest for the short rows that
		// dominate sparse graphs.
		for k := 1; k < len(ind); k++ {
			j, v := ind[k], val[k]
			m := k
			for ; m > 0 && ind[m-1] > j; m-- {
				ind[m], val[m] = ind[m-1], val[m-1]
			}
			ind[m], val[m] = j, v
		}
		return
	}
	sort.Stable(pairs[T]{ind, val})
}

// pairs sorts a row's columns and values together.
type pairs[T any] struct {
	ind []int64
	val []T
}

func (p pairs[T]) Len() int           { return len(p.ind) }
func (p pairs[T]) Less(i, j int) bool { return p.ind[i] < p.ind[j] }
func (p pairs[T]) Swap(i, j int) {
	p.ind[i], p.ind[j] = p.ind[j], p.ind[i]
	p.val[i], p.val[j] = p.val[j], p.val[i]
}
