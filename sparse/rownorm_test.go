package sparse

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRowNormalized(t *testing.T) {
	// Rows summing to 4, 0.5 (left alone: the sum is clamped at 1), none,
	// and -2 (clamped too).
	a := &Matrix[float32]{NRows: 4, NCols: 5, Indptr: []int64{0, 3, 4, 4, 6},
		Indices: []int64{0, 2, 4, 1, 0, 3}, Values: []float32{1, 2, 1, 0.5, -1, -1}}
	got := RowNormalized(a)
	assert.Equal(t, []float32{0.25, 0.5, 0.25, 0.5, -1, -1}, got.Values)
	assert.Equal(t, a.Indptr, got.Indptr)
	assert.Equal(t, a.Indices, got.Indices)
	assert.Equal(t, []float32{1, 2, 1, 0.5, -1, -1}, a.Values, "input unchanged")
	got.Indices[0] = 3
	assert.Equal(t, int64(0), a.Indices[0], "no shared memory")

	// A pattern gets values 1/degree.
	p := &Matrix[float32]{NRows: 3, NCols: 4, Indptr: []int64{0, 4, 4, 5}, Indices: []int64{0, 1, 2, 3, 2}}
	got = RowNormalized(p)
	assert.Equal(t, []float32{0.25, 0.25, 0.25, 0.25, 1}, got.Values)
	assert.Nil(t, p.Values)
}
