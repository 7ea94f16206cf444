// Package blas runs gnnmpi's dense and sparse products on an NVIDIA GPU:
// GEMM on cuBLAS and the CSR aggregation (SpMM) on cuSPARSE, both loaded
// at run time, so that no build needs CUDA.
//
// # Overview
//
// BLAS.Sgemm computes C = α·op(A)·op(B) + β·C on row-major device
// matrices with the same arguments as dense.Gemm on the host (gonum's
// blas.Transpose, m, n, k, contiguous storage); cuBLAS is column-major,
// and Sgemm maps the row-major product onto it by the transpose identity
// (Cᵀ = op(B)ᵀ·op(A)ᵀ; see Sgemm). Sparse.SpMM computes
// Y = α·op(A)·X + β·Y with A in CSR (int32 offsets and columns, float32
// values) and X, Y dense row-major, for op(A) = A (aggregation) and Aᵀ
// (its backward).
//
// Matrices are device addresses (uintptr), which gpu/cuda allocates;
// the package allocates nothing itself except cuSPARSE's workspace, which
// it takes from the Allocator its caller passes to NewSparse (on a GPU,
// gpu/cuda's Memory) and keeps,
// grown as needed, until Close. Work is queued on the stream given to
// NewBLAS and NewSparse (or SetStream) and is complete when the stream
// is; the calling thread must have the CUDA context current, so a BLAS
// or Sparse belongs to one locked goroutine.
//
// # Libraries
//
// The C side is the cgo leaf gnnmpi/gpu/internal/cublasdl, which dlopens
// libcublas.so.13 (or .12, .11, unversioned) and libcusparse.so.12 (or
// .11, unversioned) as gnnmpi/internal/dl's CUBLAS and CUSPARSE searches
// say: in $GNNMPI_CUDA_LIBDIR first, then $CUDA_HOME/lib64,
// $CUDA_PATH/lib64, the Python wheels and the loader's path. Without them NewBLAS and NewSparse return an error naming
// the library, wrapping ErrNoCUBLAS or ErrNoCUSPARSE. A call the library
// refuses returns a *cublasdl.Error naming the library, the function and
// the status.
//
// # Testing
//
// The tests build fake libraries from testdata/ with gcc and point
// $GNNMPI_CUDA_LIBDIR at them: a libcublas whose cublasSgemm_v2 is
// OpenBLAS's column-major cblas_sgemm behind cuBLAS's argument checks, and
// a libcusparse whose SpMM is a CSR loop for both op(A). "Device"
// addresses are then host addresses (pinned Go memory). The products are
// checked against dense.Gemm and sparse.Mul; the real libraries are only
// loaded, given handles and asked for a workspace size, by a test that
// skips without them.
package blas
