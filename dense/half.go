package dense

// Half is a row-major matrix of IEEE half-precision words (binary16,
// as internal/f16 encodes them): element (i, j) is Data[i*Cols+j]. It
// holds features stored in half precision without widening them; Data
// may alias a read-only file mapping.
type Half struct {
	Rows, Cols int
	Data       []uint16
}

// NewHalf returns a zeroed r×c half matrix. It will panic if r or c is
// negative.
func NewHalf(r, c int) *Half {
	if r < 0 || c < 0 {
		panic("dense: negative dimension")
	}
	return &Half{Rows: r, Cols: c, Data: make([]uint16, r*c)}
}

// Row returns row i as a slice aliasing h.Data.
// It will panic if i is out of range.
func (h *Half) Row(i int) []uint16 {
	if i < 0 || i >= h.Rows {
		panic("dense: row index out of range")
	}
	return h.Data[i*h.Cols : (i+1)*h.Cols]
}
