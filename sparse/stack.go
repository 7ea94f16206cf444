package sparse

// VStack stacks the pieces, which have ncols columns each, into one
// matrix: the rows of pieces[0], then those of pieces[1], and so on. The
// result has values (copied from every piece, all of which must then have
// them) if valued is true, else it is a pattern. The pieces are not
// modified and the result shares no memory with them.
func VStack[T Scalar](pieces []*Matrix[T], ncols int64, valued bool) *Matrix[T] {
	var m, nnz int64
	for _, pc := range pieces {
		m += pc.NRows
		nnz += pc.NNZ()
	}
	out := &Matrix[T]{NRows: m, NCols: ncols, Indptr: make([]int64, 1, m+1), Indices: make([]int64, 0, nnz)}
	if valued {
		out.Values = make([]T, 0, nnz)
	}
	for _, pc := range pieces {
		base := int64(len(out.Indices))
		for _, x := range pc.Indptr[1:] {
			out.Indptr = append(out.Indptr, base+x)
		}
		out.Indices = append(out.Indices, pc.Indices...)
		if valued {
			out.Values = append(out.Values, pc.Values...)
		}
	}
	return out
}
