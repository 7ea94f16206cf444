package sparse

// StrictUpper returns the entries (i, j) of a with i < j, in a's order
// within each row, as a new matrix of a's shape (values kept; a pattern
// stays a pattern). For a symmetric adjacency it is the undirected graph
// with each edge stored once, as many edge lists store it.
func StrictUpper[T Scalar](a *Matrix[T]) *Matrix[T] {
	out := &Matrix[T]{NRows: a.NRows, NCols: a.NCols, Indptr: make([]int64, a.NRows+1), Indices: []int64{}}
	if a.Values != nil {
		out.Values = []T{}
	}
	for i := range a.NRows {
		for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
			if j := a.Indices[e]; j > i {
				out.Indices = append(out.Indices, j)
				if a.Values != nil {
					out.Values = append(out.Values, a.Values[e])
				}
			}
		}
		out.Indptr[i+1] = int64(len(out.Indices))
	}
	return out
}
