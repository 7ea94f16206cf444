package dense

// Matrix is a row-major float32 matrix: element (i, j) is Data[i*Cols+j].
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// New returns a zeroed r×c matrix. It will panic if r or c is negative.
func New(r, c int) *Matrix {
	if r < 0 || c < 0 {
		panic("dense: negative dimension")
	}
	return &Matrix{Rows: r, Cols: c, Data: make([]float32, r*c)}
}

// Row returns row i as a slice aliasing m.Data.
// It will panic if i is out of range.
func (m *Matrix) Row(i int) []float32 {
	if i < 0 || i >= m.Rows {
		panic("dense: row index out of range")
	}
	return m.Data[i*m.Cols : (i+1)*m.Cols]
}

// RowNormalized returns a copy of x with every row divided by its sum,
// clamped below at 1 as PyG's NormalizeFeatures does (rows of 0/1 or count
// features then sum to 1; rows summing to less than 1 are left as they
// are). The sum is taken in float64 in column order.
func RowNormalized(x *Matrix) *Matrix {
	y := New(x.Rows, x.Cols)
	for i := range x.Rows {
		var s float64
		for _, v := range x.Row(i) {
			s += float64(v)
		}
		inv := RowScale(s)
		row := y.Row(i)
		for j, v := range x.Row(i) {
			row[j] = float32(float64(v) * inv)
		}
	}
	return y
}

// NormalizeRows divides every row of x by its sum clamped below at 1, in
// place: x ends as RowNormalized(x) would be, bit for bit, without a
// second matrix.
func NormalizeRows(x *Matrix) {
	for i := range x.Rows {
		row := x.Row(i)
		var s float64
		for _, v := range row {
			s += float64(v)
		}
		inv := RowScale(s)
		for j, v := range row {
			row[j] = float32(float64(v) * inv)
		}
	}
}

// RowScale is the factor RowNormalized multiplies a row summing to s by.
func RowScale(s float64) float64 { return 1 / max(s, 1) }
