package sparse

// RowNormalized returns a copy of the rows of a, each divided by its sum
// clamped below at 1, as dense.RowNormalized does for dense rows (PyG's
// NormalizeFeatures): the sum is taken in float64 over the stored entries
// in order, so the result equals normalising the dense rows, zeros adding
// nothing, when the columns of a row are ascending. A pattern matrix
// (Values nil) reads as all ones, and the result has values: each entry
// of a row of d entries is 1/max(d, 1). The result shares no memory with
// a.
func RowNormalized[T Float](a *Matrix[T]) *Matrix[T] {
	out := &Matrix[T]{NRows: a.NRows, NCols: a.NCols, Indptr: append([]int64{}, a.Indptr...),
		Indices: append([]int64{}, a.Indices...), Values: make([]T, len(a.Indices))}
	for i := range a.NRows {
		lo, hi := a.Indptr[i], a.Indptr[i+1]
		var s float64
		if a.Values == nil {
			s = float64(hi - lo)
		} else {
			for _, v := range a.Values[lo:hi] {
				s += float64(v)
			}
		}
		inv := 1 / max(s, 1)
		for e := lo; e < hi; e++ {
			v := 1.0
			if a.Values != nil {
				v = float64(a.Values[e])
			}
			out.Values[e] = T(v * inv)
		}
	}
	return out
}
