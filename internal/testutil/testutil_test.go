package testutil

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckGrad(t *testing.T) {
	// f(w) = w0² + 3·w0·w1, so ∇f = (2·w0 + 3·w1, 3·w0).
	w := []float32{0.5, -1.25}
	f := func() float64 {
		a, b := float64(w[0]), float64(w[1])
		return a*a + 3*a*b
	}
	for _, tc := range []struct {
		name string
		g    []float32
		bad  []int
	}{
		{name: "right", g: []float32{2*0.5 + 3*-1.25, 3 * 0.5}},
		{name: "wrong", g: []float32{2*0.5 + 3*-1.25, 3*0.5 + 0.1}, bad: []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			for _, m := range CheckGrad(f, w, tc.g, 1e-3, 1e-3) {
				got = append(got, m.Index)
			}
			assert.Equal(t, tc.bad, got)
			assert.Equal(t, []float32{0.5, -1.25}, w, "w restored")
		})
	}
	assert.True(t, GradCheck(t, "w", f, w, []float32{2*0.5 + 3*-1.25, 3 * 0.5}, 1e-3, 1e-3))
}

func TestClose(t *testing.T) {
	assert.True(t, Close([]float32{1, 100}, []float32{1.0005, 100.05}, 1e-3))
	assert.False(t, Close([]float32{1, 100}, []float32{1.01, 100}, 1e-3))
	assert.False(t, Close([]float32{1}, []float32{1, 2}, 1e-3))
}

func TestCheckGradKink(t *testing.T) {
	// f(w) = relu(w0) + 2·w1, with w0 = 0.004 closer to the kink than eps.
	w := []float32{0.004, 1}
	f := func() float64 { return math.Max(float64(w[0]), 0) + 2*float64(w[1]) }
	assert.Empty(t, CheckGrad(f, w, []float32{1, 2}, 1e-2, 1e-2), "right gradient passes at the kink")
	assert.Len(t, CheckGrad(f, w, []float32{0.5, 2}, 1e-2, 1e-2), 1, "half the slope fails")
	assert.Len(t, CheckGrad(f, w, []float32{1, 2.1}, 1e-2, 1e-2), 1, "smooth entry still checked")
}
