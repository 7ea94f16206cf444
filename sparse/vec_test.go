package sparse

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVec(t *testing.T) {
	x := []float64{0, 2.5, 0, -1, math.Copysign(0, -1), 7}
	v := VecFromDense(x)
	assert.Equal(t, &Vec{N: 6, Indices: []int64{1, 3, 5}, Values: []float64{2.5, -1, 7}}, v)
	require.NoError(t, v.Validate())
	for i, a := range x {
		assert.Equal(t, a == 0, v.At(int64(i)) == 0)
		if a != 0 {
			assert.Equal(t, a, v.At(int64(i)))
		}
	}
	assert.Equal(t, []float64{0, 2.5, 0, -1, 0, 7}, v.Dense())
	assert.Zero(t, v.At(99))
	assert.Empty(t, (&Vec{}).Dense())

	for _, tc := range []struct {
		name string
		v    Vec
		msg  string
	}{
		{"lengths", Vec{N: 3, Indices: []int64{1}}, "1 indices and 0 values"},
		{"range", Vec{N: 3, Indices: []int64{3}, Values: []float64{1}}, "index 3 outside [0, 3)"},
		{"negative", Vec{N: 3, Indices: []int64{-1}, Values: []float64{1}}, "index -1 outside"},
		{"order", Vec{N: 3, Indices: []int64{2, 1}, Values: []float64{1, 1}}, "not strictly ascending (1 after 2)"},
		{"repeat", Vec{N: 3, Indices: []int64{1, 1}, Values: []float64{1, 1}}, "not strictly ascending"},
		{"nan", Vec{N: 3, Indices: []int64{2}, Values: []float64{math.NaN()}}, "entry 2 is NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.v.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}
