// Package spgemmtest provides what the tests of distributed SpGEMM share:
// random operands with exactly representable values, conversion between
// element types, and exact comparison of products.
//
// # Overview
//
// Random makes matrices with empty rows and columns, unsorted rows and
// small integer values, so that every semiring's sums are exact in any
// order and a distributed product must equal the local one bit for bit.
// Equal compares two matrices entry by entry, structure and values.
package spgemmtest

import (
	"fmt"
	"math/rand/v2"

	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// Random returns an m×n matrix with about perRow entries in each non-empty
// row, drawn from the stream rng.New(seed). About one row in six and one
// column in six are empty; the columns of a row are distinct but in random
// order unless sorted; values are integers in [1, 4] (nil Values when
// pattern).
func Random(seed uint64, m, n int64, perRow float64, pattern, sorted bool) *sparse.CSR {
	r := rng.New(seed)
	deadCol := make([]bool, n)
	for j := range deadCol {
		deadCol[j] = r.IntN(6) == 0
	}
	a := &sparse.CSR{NRows: m, NCols: n, Indptr: make([]int64, m+1)}
	seen := map[int64]bool{}
	for i := range m {
		if n > 0 && r.IntN(6) != 0 {
			want := int64(r.Float64()*2*perRow + 0.5)
			clear(seen)
			for t := int64(0); t < 4*want && int64(len(seen)) < want; t++ {
				j := r.Int64N(n)
				if deadCol[j] || seen[j] {
					continue
				}
				seen[j] = true
				a.Indices = append(a.Indices, j)
				if !pattern {
					a.Values = append(a.Values, float64(1+r.IntN(4)))
				}
			}
		}
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	if !pattern && a.Values == nil {
		a.Values = []float64{}
	}
	if sorted {
		a.SortRows()
	} else {
		shuffleRows(r, a)
	}
	return a
}

func shuffleRows(r *rand.Rand, a *sparse.CSR) {
	for i := range a.NRows {
		lo, hi := a.Indptr[i], a.Indptr[i+1]
		r.Shuffle(int(hi-lo), func(x, y int) {
			x, y = x+int(lo), y+int(lo)
			a.Indices[x], a.Indices[y] = a.Indices[y], a.Indices[x]
			if a.Values != nil {
				a.Values[x], a.Values[y] = a.Values[y], a.Values[x]
			}
		})
	}
}

// Convert returns a with every value converted by f; a pattern stays a
// pattern. The structure is shared with a.
func Convert[T sparse.Scalar](a *sparse.CSR, f func(float64) T) *sparse.Matrix[T] {
	out := &sparse.Matrix[T]{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices}
	if a.Values != nil {
		out.Values = make([]T, len(a.Values))
		for q, v := range a.Values {
			out.Values[q] = f(v)
		}
	}
	return out
}

// Equal returns nil if got and want have the same shape, the same row
// offsets, the same columns in the same order and equal values (==, with
// nil Values equal only to nil), and otherwise an error describing the
// first difference.
func Equal[T sparse.Scalar](got, want *sparse.Matrix[T]) error {
	if got.NRows != want.NRows || got.NCols != want.NCols {
		return fmt.Errorf("shape: got: %d×%d want: %d×%d", got.NRows, got.NCols, want.NRows, want.NCols)
	}
	if (got.Values == nil) != (want.Values == nil) {
		return fmt.Errorf("values: got nil %v want nil %v", got.Values == nil, want.Values == nil)
	}
	for i := range want.NRows {
		if got.Indptr[i+1]-got.Indptr[i] != want.Indptr[i+1]-want.Indptr[i] {
			return fmt.Errorf("row %d: got: %d entries want: %d", i, got.Indptr[i+1]-got.Indptr[i], want.Indptr[i+1]-want.Indptr[i])
		}
		g, w := got.Indptr[i], want.Indptr[i]
		for k := range want.Indptr[i+1] - w {
			if got.Indices[g+k] != want.Indices[w+k] {
				return fmt.Errorf("row %d entry %d: got: column %d want: %d", i, k, got.Indices[g+k], want.Indices[w+k])
			}
			if want.Values != nil && got.Values[g+k] != want.Values[w+k] {
				return fmt.Errorf("(%d,%d): got: %v want: %v", i, want.Indices[w+k], got.Values[g+k], want.Values[w+k])
			}
		}
	}
	return nil
}
