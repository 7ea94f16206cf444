package openblas_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"

	"gnnmpi/internal/openblas"
)

func TestSgemm(t *testing.T) {
	impl := openblas.Implementation()
	require.NotNil(t, impl)
	if openblas.Available {
		assert.Equal(t, "openblas", openblas.Name())
	} else {
		assert.Equal(t, "gonum", openblas.Name())
	}
	// a is 2×3, b is 3×2 (both row-major); small integers so the product is exact.
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{7, 8, 9, 10, 11, 12}
	for _, tc := range []struct {
		name    string
		tA, tB  blas.Transpose
		m, n, k int
	}{
		{name: "NN", tA: blas.NoTrans, tB: blas.NoTrans, m: 2, n: 2, k: 3},
		{name: "TT", tA: blas.Trans, tB: blas.Trans, m: 3, n: 3, k: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// at returns op(x)[i][j] for x stored row-major with cols columns.
			at := func(x []float32, cols int, tr blas.Transpose, i, j int) float32 {
				if tr == blas.Trans {
					return x[j*cols+i]
				}
				return x[i*cols+j]
			}
			want := make([]float32, tc.m*tc.n)
			for i := 0; i < tc.m; i++ {
				for j := 0; j < tc.n; j++ {
					var s float32
					for l := 0; l < tc.k; l++ {
						s += at(a, 3, tc.tA, i, l) * at(b, 2, tc.tB, l, j)
					}
					want[i*tc.n+j] = s
				}
			}
			got := make([]float32, tc.m*tc.n)
			for i := range got {
				got[i] = 100 // beta = 0 must overwrite
			}
			impl.Sgemm(tc.tA, tc.tB, tc.m, tc.n, tc.k, 1, a, 3, b, 2, 0, got, tc.n)
			assert.Equal(t, want, got, "got: %v want: %v", got, want)
		})
	}
}
