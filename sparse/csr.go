package sparse

import "fmt"

// Number is the set of element types with ordinary arithmetic, on which
// PlusTimes is defined.
type Number interface {
	~int32 | ~int64 | ~float32 | ~float64
}

// Float is the set of floating-point element types, on which MinPlus is
// defined (its additive identity is +Inf).
type Float interface {
	~float32 | ~float64
}

// Scalar is the set of element types a Matrix may hold: the Number types and
// booleans (for OrAnd).
type Scalar interface {
	Number | ~bool
}

// Matrix is a compressed sparse row matrix with elements of type T, 64-bit
// row offsets and 64-bit column indices, sized for graphs with more than 2³¹
// vertices or edges.
//
// Row i holds the columns Indices[Indptr[i]:Indptr[i+1]]. Values is nil for
// a pattern (unweighted) matrix; otherwise len(Values) == len(Indices). What
// value the entries of a pattern matrix take depends on the operation: the
// products of this package read them as the semiring's One.
// Unless a constructor says otherwise, the columns of a row are not required
// to be sorted or unique; Validate checks the structural invariants only.
type Matrix[T Scalar] struct {
	NRows, NCols int64
	Indptr       []int64
	Indices      []int64
	Values       []T
}

// CSR is the float64 matrix used throughout gnnmpi. It is an alias, so CSR
// literals, Matrix[float64] and the generic functions of this package mix
// freely.
type CSR = Matrix[float64]

// NNZ returns the number of stored entries.
func (a *Matrix[T]) NNZ() int64 { return int64(len(a.Indices)) }

// Row returns the column indices of row i. The slice aliases a.Indices.
// It will panic if i is out of range.
func (a *Matrix[T]) Row(i int64) []int64 { return a.Indices[a.Indptr[i]:a.Indptr[i+1]] }

// Degree returns the number of entries in row i.
func (a *Matrix[T]) Degree(i int64) int64 { return a.Indptr[i+1] - a.Indptr[i] }

// Validate reports whether the structure of a is consistent: Indptr has
// NRows+1 non-decreasing entries starting at 0 and ending at NNZ, every column
// index lies in [0, NCols), and Values is nil or as long as Indices.
func (a *Matrix[T]) Validate() error {
	if a.NRows < 0 || a.NCols < 0 {
		return fmt.Errorf("sparse: negative dimension %d×%d", a.NRows, a.NCols)
	}
	if int64(len(a.Indptr)) != a.NRows+1 {
		return fmt.Errorf("sparse: len(Indptr)=%d, want NRows+1=%d", len(a.Indptr), a.NRows+1)
	}
	if a.Indptr[0] != 0 || a.Indptr[a.NRows] != int64(len(a.Indices)) {
		return fmt.Errorf("sparse: Indptr spans [%d,%d], want [0,%d]", a.Indptr[0], a.Indptr[a.NRows], len(a.Indices))
	}
	for i := int64(0); i < a.NRows; i++ {
		if a.Indptr[i+1] < a.Indptr[i] {
			return fmt.Errorf("sparse: Indptr decreases at row %d", i)
		}
	}
	for k, j := range a.Indices {
		if j < 0 || j >= a.NCols {
			return fmt.Errorf("sparse: entry %d has column %d outside [0,%d)", k, j, a.NCols)
		}
	}
	if a.Values != nil && len(a.Values) != len(a.Indices) {
		return fmt.Errorf("sparse: len(Values)=%d, want %d", len(a.Values), len(a.Indices))
	}
	return nil
}
