package sparse

// FromDense returns the nonzero elements of the rows×cols row-major matrix
// data as a new matrix with values: row i holds the columns j, in
// increasing order, where data[i*cols+j] is not T's zero value. data is not
// retained. It will panic if rows or cols is negative or len(data) !=
// rows·cols.
func FromDense[T Scalar](rows, cols int, data []T) *Matrix[T] {
	if rows < 0 || cols < 0 || len(data) != rows*cols {
		panic("sparse: FromDense shape does not match the data")
	}
	var zero T
	nnz := 0
	for _, v := range data {
		if v != zero {
			nnz++
		}
	}
	a := &Matrix[T]{
		NRows:   int64(rows),
		NCols:   int64(cols),
		Indptr:  make([]int64, rows+1),
		Indices: make([]int64, 0, nnz),
		Values:  make([]T, 0, nnz),
	}
	for i := range rows {
		for j, v := range data[i*cols : (i+1)*cols] {
			if v != zero {
				a.Indices = append(a.Indices, int64(j))
				a.Values = append(a.Values, v)
			}
		}
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	return a
}
