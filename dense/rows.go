package dense

// Grow returns a slice of length n on buf's storage when its capacity is at
// least n, else a new one of exactly n elements. The contents are
// unspecified: the caller writes what it reads.
func Grow(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	return buf[:n]
}

// Reuse returns a rows×cols matrix: dst itself when it has that shape, a
// matrix on dst's storage when its capacity suffices (dst may be nil), else
// a new one. Its contents are unspecified: the caller writes every row. The
// result aliases dst's storage whenever it is not new; dst is not modified.
func Reuse(dst *Matrix, rows, cols int) *Matrix {
	if dst != nil && dst.Rows == rows && dst.Cols == cols {
		return dst
	}
	if n := rows * cols; dst != nil && cap(dst.Data) >= n {
		return &Matrix{Rows: rows, Cols: cols, Data: dst.Data[:n]}
	}
	return New(rows, cols)
}

// GatherRows returns a new len(ids)×src.Cols matrix whose row i is row
// ids[i] of src. It will panic if an id is out of range.
func GatherRows(src *Matrix, ids []int32) *Matrix {
	out := New(len(ids), src.Cols)
	GatherRowsTo(out, 0, src, ids)
	return out
}

// GatherRowsTo copies row ids[i] of src into row off+i of dst, for every i.
// dst and src have the same number of columns. It will panic if a row is
// out of range.
func GatherRowsTo(dst *Matrix, off int, src *Matrix, ids []int32) {
	f := dst.Cols
	for i, id := range ids {
		copy(dst.Data[(off+i)*f:(off+i+1)*f], src.Data[int(id)*f:(int(id)+1)*f])
	}
}

// ScatterRowsTo copies row i of src into row ids[i] of dst, for every i
// (a later i wins a repeated id). dst and src have the same number of
// columns. It will panic if a row is out of range.
func ScatterRowsTo(dst *Matrix, ids []int32, src *Matrix) {
	f := dst.Cols
	for i, id := range ids {
		copy(dst.Data[int(id)*f:(int(id)+1)*f], src.Data[i*f:(i+1)*f])
	}
}

// AddRowsTo adds row off+i of src into row ids[i] of dst, for every i in
// order (a repeated id accumulates). dst and src have the same number of
// columns. It will panic if a row is out of range.
func AddRowsTo(dst *Matrix, ids []int32, src *Matrix, off int) {
	f := dst.Cols
	for i, id := range ids {
		d := dst.Data[int(id)*f : (int(id)+1)*f]
		s := src.Data[(off+i)*f : (off+i+1)*f]
		for j, v := range s {
			d[j] += v
		}
	}
}

// AddTo adds src into dst element by element; src has at most dst's
// number of elements (the same shape, in practice). It will panic if src
// is longer.
func AddTo(dst, src *Matrix) {
	d := dst.Data[:len(src.Data)]
	for i, v := range src.Data {
		d[i] += v
	}
}
