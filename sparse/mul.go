package sparse

import "errors"

// ErrShape is wrapped by the errors returned for operands whose dimensions
// do not conform.
var ErrShape = errors.New("sparse: dimension mismatch")

// Mul returns the product C = A·B over the ordinary (+, ×) semiring, computed
// row by row with Gustavson's algorithm: row i of C is the sum of the rows k
// of B scaled by A(i,k). It is MulSR(PlusTimes[float64]{}, a, b, nil), so it
// runs on up to GOMAXPROCS goroutines.
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
	return MulSR(PlusTimes[float64]{}, a, b, nil)
}
