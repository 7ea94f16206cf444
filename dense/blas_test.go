package dense

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// naiveGemm returns alpha·op(A)·op(B) + beta·C by the definition, in float64.
func naiveGemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a, b []float32, beta float32, c []float32) []float32 {
	at := func(i, l int) float64 {
		if tA == blas.Trans {
			return float64(a[l*m+i])
		}
		return float64(a[i*k+l])
	}
	bt := func(l, j int) float64 {
		if tB == blas.Trans {
			return float64(b[j*k+l])
		}
		return float64(b[l*n+j])
	}
	out := make([]float32, m*n)
	for i := range m {
		for j := range n {
			var s float64
			for l := range k {
				s += at(i, l) * bt(l, j)
			}
			out[i*n+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*n+j]))
		}
	}
	return out
}

func TestGemm(t *testing.T) {
	const m, n, k = 3, 4, 5
	a, b := seq(m, k).Data, seq(k, n).Data
	for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			c := seq(m, n).Data
			want := naiveGemm(tA, tB, m, n, k, 0.5, a, b, 2, c)
			Gemm(BLASOrDefault(nil), tA, tB, m, n, k, 0.5, a, b, 2, c)
			assert.InDeltaSlice(t, want, c, 1e-3, "tA %c tB %c", tA, tB)
		}
	}
}

func TestGemmEmpty(t *testing.T) {
	c := []float32{1, 2, 3, 4}
	Gemm(BLASOrDefault(nil), blas.NoTrans, blas.NoTrans, 2, 2, 0, 1, nil, nil, 3, c)
	assert.Equal(t, []float32{3, 6, 9, 12}, c, "k = 0 scales C by beta")
	Gemm(nil, blas.NoTrans, blas.NoTrans, 0, 2, 3, 1, nil, nil, 0, c)
	assert.Equal(t, []float32{3, 6, 9, 12}, c, "m = 0 does nothing (and needs no BLAS)")
}

func TestBLASOrDefault(t *testing.T) {
	assert.Equal(t, blas.Float32Level3(gonum.Implementation{}), BLASOrDefault(nil))
	var impl blas.Float32Level3 = gonum.Implementation{}
	assert.Equal(t, impl, BLASOrDefault(impl))
}

func TestScale(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name  string
		alpha float32
		x     []float32
		want  []float32
	}{
		{"zero clears NaN", 0, []float32{1, nan}, []float32{0, 0}},
		{"one", 1, []float32{1, 2}, []float32{1, 2}},
		{"two", 2, []float32{1, -3}, []float32{2, -6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Scale(tc.alpha, tc.x)
			assert.Equal(t, tc.want, tc.x)
		})
	}
}

// TestAxpyDot covers both paths of Axpy and Dot (plain loop below 16
// elements, gonum's kernel from 16 on) on integer-valued data, where both
// are exact.
func TestAxpyDot(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 33} {
		x, y := make([]float32, n), make([]float32, n+1)
		var dot float32
		for i := range n {
			x[i], y[i] = float32(i), float32(2*i+1)
			dot += float32(i * (2*i + 1))
		}
		assert.Equal(t, dot, Dot(x, y), "n=%d", n)
		Axpy(3, x, y)
		for i := range n {
			assert.Equal(t, float32(3*i+2*i+1), y[i], "n=%d i=%d", n, i)
		}
		assert.Zero(t, y[n], "y past len(x) is untouched")
		assert.Panics(t, func() { Axpy(1, append(x, 1), y[:n:n]) }, "n=%d: short y", n)
	}
}
