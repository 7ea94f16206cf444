package sparse

import (
	"fmt"
	"math"
	"slices"
)

// Vec is a sparse float64 vector of length N: Values[k] is entry
// Indices[k], the indices strictly ascending in [0, N), and every index not
// listed is 0. Cache scores are Vecs (a rank scores only the vertices it
// knows, never all of them). The zero Vec is the empty vector of length 0.
type Vec struct {
	N       int64
	Indices []int64
	Values  []float64
}

// VecFromDense returns the sparse vector of the nonzero entries of x, in
// index order (a negative zero counts as zero). The result shares no
// memory with x.
func VecFromDense(x []float64) *Vec {
	v := &Vec{N: int64(len(x))}
	for i, a := range x {
		if a != 0 {
			v.Indices = append(v.Indices, int64(i))
			v.Values = append(v.Values, a)
		}
	}
	return v
}

// Validate returns an error unless v's indices and values have the same
// length and the indices lie strictly ascending in [0, N), and no value is
// NaN.
func (v *Vec) Validate() error {
	if len(v.Indices) != len(v.Values) {
		return fmt.Errorf("sparse: vector with %d indices and %d values", len(v.Indices), len(v.Values))
	}
	for k, i := range v.Indices {
		if i < 0 || i >= v.N {
			return fmt.Errorf("sparse: vector index %d outside [0, %d)", i, v.N)
		}
		if k > 0 && i <= v.Indices[k-1] {
			return fmt.Errorf("sparse: vector indices not strictly ascending (%d after %d)", i, v.Indices[k-1])
		}
		if math.IsNaN(v.Values[k]) {
			return fmt.Errorf("sparse: vector entry %d is NaN", i)
		}
	}
	return nil
}

// At returns entry i of v (0 if it is not listed), by binary search.
func (v *Vec) At(i int64) float64 {
	if k, ok := slices.BinarySearch(v.Indices, i); ok {
		return v.Values[k]
	}
	return 0
}

// Dense returns v as a slice of length N. It allocates N float64s: for
// tests and small vectors.
func (v *Vec) Dense() []float64 {
	x := make([]float64, v.N)
	for k, i := range v.Indices {
		x[i] = v.Values[k]
	}
	return x
}
