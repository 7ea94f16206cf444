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
