package dense

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// vec supplies the level-1 kernels (SSE assembly in gonum) of Axpy and
// Dot; matrix products go through the blas.Float32Level3 their caller
// injects.
var vec gonum.Implementation

// BLASOrDefault returns impl, or gonum's pure Go BLAS when impl is nil.
func BLASOrDefault(impl blas.Float32Level3) blas.Float32Level3 {
	if impl == nil {
		return gonum.Implementation{}
	}
	return impl
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C with impl on contiguous
// row-major storage: op(A) is m×k, op(B) is k×n and C is m×n. A is stored
// m×k (tA NoTrans) or k×m (Trans); B is stored k×n or n×k. It does nothing
// when m or n is 0 and only scales C (Scale) when k is 0. It will panic if
// a, b or c is shorter than its shape.
func Gemm(impl blas.Float32Level3, tA, tB blas.Transpose, m, n, k int, alpha float32, a, b []float32, beta float32, c []float32) {
	if m == 0 || n == 0 {
		return
	}
	c = c[:m*n]
	if k == 0 {
		Scale(beta, c)
		return
	}
	lda, ldb := k, n
	if tA == blas.Trans {
		lda = m
	}
	if tB == blas.Trans {
		ldb = k
	}
	impl.Sgemm(tA, tB, m, n, k, alpha, a[:m*k], lda, b[:k*n], ldb, beta, c, n)
}

// Scale sets x = alpha·x (x = 0 when alpha is 0, whatever x held, NaNs
// included).
func Scale(alpha float32, x []float32) {
	if alpha == 0 {
		clear(x)
		return
	}
	if alpha != 1 {
		for i := range x {
			x[i] *= alpha
		}
	}
}

// Axpy computes y += alpha·x over the first len(x) elements of y, which
// needs len(y) ≥ len(x): with gonum's Saxpy for 16 elements or more, else
// in a plain loop in index order.
func Axpy(alpha float32, x, y []float32) {
	n := len(x)
	if n >= 16 {
		vec.Saxpy(n, alpha, x, 1, y, 1)
		return
	}
	y = y[:n]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// Dot returns x·y over the first len(x) elements of y, which needs
// len(y) ≥ len(x): with gonum's Sdot for 16 elements or more, else summed
// in index order.
func Dot(x, y []float32) float32 {
	n := len(x)
	if n >= 16 {
		return vec.Sdot(n, x, 1, y, 1)
	}
	y = y[:n]
	var s float32
	for i, v := range x {
		s += v * y[i]
	}
	return s
}
