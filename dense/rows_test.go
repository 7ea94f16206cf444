package dense

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// seq returns an r×c matrix whose element (i, j) is 10·i + j.
func seq(r, c int) *Matrix {
	m := New(r, c)
	for i := range r {
		for j := range c {
			m.Data[i*c+j] = float32(10*i + j)
		}
	}
	return m
}

func TestGrow(t *testing.T) {
	buf := make([]float32, 3, 8)
	for _, tc := range []struct {
		name  string
		n     int
		alias bool
	}{{"shorter", 2, true}, {"capacity", 8, true}, {"larger", 9, false}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Grow(buf, tc.n)
			assert.Len(t, got, tc.n)
			assert.Equal(t, tc.alias, &got[0] == &buf[:1][0], "aliases buf")
		})
	}
}

func TestReuse(t *testing.T) {
	dst := New(3, 4)
	for _, tc := range []struct {
		name       string
		dst        *Matrix
		rows, cols int
		same       bool // the result is dst itself
		alias      bool // the result shares dst's storage
	}{
		{"nil", nil, 2, 2, false, false},
		{"same shape", dst, 3, 4, true, true},
		{"other shape, fits", dst, 2, 6, false, true},
		{"smaller", dst, 1, 5, false, true},
		{"too large", dst, 4, 4, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Reuse(tc.dst, tc.rows, tc.cols)
			assert.Equal(t, tc.rows, got.Rows)
			assert.Equal(t, tc.cols, got.Cols)
			assert.Len(t, got.Data, tc.rows*tc.cols)
			assert.Equal(t, tc.same, got == tc.dst, "same matrix")
			if tc.dst != nil {
				assert.Equal(t, tc.alias, &got.Data[0] == &tc.dst.Data[0], "aliases dst")
			}
		})
	}
	assert.Equal(t, 3, dst.Rows, "dst unchanged")
	assert.Equal(t, 4, dst.Cols, "dst unchanged")
}

func TestGatherRows(t *testing.T) {
	src := seq(4, 2)
	got := GatherRows(src, []int32{3, 0, 3})
	assert.Equal(t, &Matrix{Rows: 3, Cols: 2, Data: []float32{30, 31, 0, 1, 30, 31}}, got)
	assert.Equal(t, seq(4, 2), src, "src unchanged")
	assert.Equal(t, &Matrix{Rows: 0, Cols: 2, Data: []float32{}}, GatherRows(src, nil))
}

func TestGatherRowsTo(t *testing.T) {
	dst := New(4, 2)
	GatherRowsTo(dst, 1, seq(3, 2), []int32{2, 1})
	assert.Equal(t, []float32{0, 0, 20, 21, 10, 11, 0, 0}, dst.Data)
	assert.Panics(t, func() { GatherRowsTo(dst, 3, seq(3, 2), []int32{2, 1}) }, "past dst's last row")
}

func TestScatterRowsTo(t *testing.T) {
	dst := New(4, 2)
	ScatterRowsTo(dst, []int32{3, 1, 3}, seq(3, 2))
	// Row 3 is written twice; the later source row (2) wins.
	assert.Equal(t, []float32{0, 0, 10, 11, 0, 0, 20, 21}, dst.Data)
	assert.Panics(t, func() { ScatterRowsTo(dst, []int32{4}, seq(1, 2)) })
}

func TestAddRowsTo(t *testing.T) {
	dst := seq(3, 2)
	// Source rows 1 and 2 of seq(3, 2) go into rows 2 and 2: both accumulate.
	AddRowsTo(dst, []int32{2, 2}, seq(3, 2), 1)
	assert.Equal(t, []float32{0, 1, 10, 11, 20 + 10 + 20, 21 + 11 + 21}, dst.Data)
	// Rows gathered then added back at the same ids double them.
	m := seq(4, 3)
	ids := []int32{1, 3}
	AddRowsTo(m, ids, GatherRows(m, ids), 0)
	assert.Equal(t, []float32{20, 22, 24}, m.Row(1))
	assert.Equal(t, []float32{60, 62, 64}, m.Row(3))
	assert.Equal(t, []float32{0, 1, 2}, m.Row(0))
}

func TestAddTo(t *testing.T) {
	dst := seq(2, 2)
	AddTo(dst, seq(2, 2))
	assert.Equal(t, []float32{0, 2, 20, 22}, dst.Data)
	assert.Panics(t, func() { AddTo(New(1, 1), New(1, 2)) })
}
