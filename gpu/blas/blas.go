package blas

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/gpu/internal/cublasdl"
)

// ErrNoCUBLAS is wrapped by NewBLAS when cuBLAS cannot be loaded.
var ErrNoCUBLAS = errors.New("gpu/blas: cuBLAS not available")

// ErrNoCUSPARSE is wrapped by NewSparse when cuSPARSE cannot be loaded.
var ErrNoCUSPARSE = errors.New("gpu/blas: cuSPARSE not available")

// BLAS computes dense products with cuBLAS on one handle. It is not safe
// for concurrent use; bind it, like the CUDA context it runs in, to one
// locked goroutine.
type BLAS struct {
	lib *cublasdl.CUBLAS
	h   cublasdl.BLASHandle
}

// NewBLAS loads cuBLAS (from $GNNMPI_CUDA_LIBDIR first, then the loader's
// path) and creates a handle queueing its work on stream, a CUstream or
// cudaStream_t (0: the default stream). The calling thread must have the
// CUDA context current. A missing library or function is an error naming
// it that wraps ErrNoCUBLAS.
func NewBLAS(stream uintptr) (*BLAS, error) {
	lib, h, err := openHandle(cublasdl.OpenCUBLAS, ErrNoCUBLAS, stream)
	if err != nil {
		return nil, err
	}
	return &BLAS{lib: lib, h: h}, nil
}

// handleLib is a loaded NVIDIA library that works through handles of type
// H: cuBLAS or cuSPARSE.
type handleLib[H any] interface {
	Create() (H, error)
	Destroy(H) error
	SetStream(h H, stream uintptr) error
	Close() error
}

// openHandle loads a library with open, creates a handle and makes it
// queue its work on stream. A failure to load is wrapped in noLib; on any
// failure what was already made is released.
func openHandle[L handleLib[H], H any](open func(names ...string) (L, error), noLib error, stream uintptr) (L, H, error) {
	var (
		zl L
		zh H
	)
	lib, err := open()
	if err != nil {
		return zl, zh, fmt.Errorf("%w: %w", noLib, err)
	}
	h, err := lib.Create()
	if err != nil {
		lib.Close()
		return zl, zh, err
	}
	if err := lib.SetStream(h, stream); err != nil {
		lib.Destroy(h)
		lib.Close()
		return zl, zh, err
	}
	return lib, h, nil
}

// Library returns the name the cuBLAS library was opened by.
func (b *BLAS) Library() string { return b.lib.Path() }

// SetStream makes the following calls queue their work on stream.
func (b *BLAS) SetStream(stream uintptr) error { return b.lib.SetStream(b.h, stream) }

// Close destroys the handle and unloads the library.
func (b *BLAS) Close() error {
	return errors.Join(b.lib.Destroy(b.h), b.lib.Close())
}

// op maps gonum's transpose flags onto cuBLAS's.
func op(t blas.Transpose) cublasdl.Operation {
	switch t {
	case blas.NoTrans:
		return cublasdl.OpN
	case blas.Trans:
		return cublasdl.OpT
	}
	panic("gpu/blas: bad transpose")
}

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on contiguous row-major
// device matrices, as dense.Gemm does on the host: op(A) is m×k, op(B) is
// k×n and C is m×n. A is stored m×k (tA NoTrans) or k×m (Trans); B is
// stored k×n or n×k. a, b and c are device addresses. It does nothing when
// m or n is 0 and sets C = beta·C when k is 0. The work is queued on the
// handle's stream: C is ready when the stream has reached it.
//
// cuBLAS is column-major. A row-major r×s matrix with leading dimension s
// is, read column-major, its transpose (s×r, same leading dimension). So
// the row-major product C = op(A)·op(B) is the column-major product
// Cᵀ = op(B)ᵀ·op(A)ᵀ, and Sgemm calls cublasSgemm with the operands
// swapped, m and n swapped and the transpose flags unchanged:
// cublasSgemm(tB, tA, n, m, k, alpha, B, ldb, A, lda, beta, C, n), with
// lda = k (NoTrans) or m (Trans) and ldb = n (NoTrans) or k (Trans), the
// row lengths of the stored matrices.
//
// It will panic if m, n or k is negative or tA or tB is not NoTrans or
// Trans.
func (b *BLAS) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a, bm uintptr, beta float32, c uintptr) error {
	if m < 0 || n < 0 || k < 0 {
		panic("gpu/blas: negative dimension")
	}
	oa, ob := op(tA), op(tB)
	if m == 0 || n == 0 {
		return nil
	}
	lda, ldb := k, n
	if tA == blas.Trans {
		lda = m
	}
	if tB == blas.Trans {
		ldb = k
	}
	// cuBLAS wants every leading dimension ≥ 1, even when k is 0.
	return b.lib.Sgemm(b.h, ob, oa, n, m, k, alpha, bm, max(ldb, 1), a, max(lda, 1), beta, c, n)
}
