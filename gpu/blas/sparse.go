package blas

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/gpu/internal/cublasdl"
)

// Allocator allocates device memory for the workspaces of cuSPARSE:
// gpu/cuda supplies device memory, the tests host memory.
type Allocator interface {
	// Alloc returns the address of bytes (> 0) bytes of device memory.
	Alloc(bytes int) (uintptr, error)
	// Free releases memory Alloc returned. Sparse calls it only when
	// the work queued on its stream that used the memory no longer needs
	// it: freeing must wait for that work or be ordered after it on the
	// stream (cuMemFree does the first, cuMemFreeAsync on the stream the
	// second). Its error is returned by the Sparse call that freed.
	Free(ptr uintptr) error
}

// CSR is an m×k sparse matrix in device memory in compressed sparse row
// form with zero-based int32 indices: row i holds the columns
// ColIndices[RowOffsets[i]:RowOffsets[i+1]] with the float32 Values at
// the same positions.
type CSR struct {
	Rows, Cols int     // m, k
	NNZ        int     // stored entries
	RowOffsets uintptr // int32[Rows+1]
	ColIndices uintptr // int32[NNZ]
	Values     uintptr // float32[NNZ]
}

// Sparse computes sparse-dense products with cuSPARSE on one handle. It
// keeps one workspace, grown as needed. It is not safe for concurrent
// use; bind it to one locked goroutine.
type Sparse struct {
	lib   *cublasdl.CUSPARSE
	h     cublasdl.SparseHandle
	alloc Allocator
	ws    uintptr // workspace, 0 when none
	wsLen int
}

// NewSparse loads cuSPARSE (from $GNNMPI_CUDA_LIBDIR first, then the
// loader's path) and creates a handle queueing its work on stream (0: the
// default stream); alloc supplies the workspaces. The calling thread must
// have the CUDA context current. A missing library or function is an
// error naming it that wraps ErrNoCUSPARSE.
func NewSparse(alloc Allocator, stream uintptr) (*Sparse, error) {
	lib, h, err := openHandle(cublasdl.OpenCUSPARSE, ErrNoCUSPARSE, stream)
	if err != nil {
		return nil, err
	}
	return &Sparse{lib: lib, h: h, alloc: alloc}, nil
}

// Library returns the name the cuSPARSE library was opened by.
func (s *Sparse) Library() string { return s.lib.Path() }

// SetStream makes the following calls queue their work on stream. The
// workspace is shared by all streams: work queued on the previous stream
// must be complete, or ordered before the next call's, first.
func (s *Sparse) SetStream(stream uintptr) error { return s.lib.SetStream(s.h, stream) }

// Close frees the workspace, destroys the handle and unloads the library.
func (s *Sparse) Close() error {
	var err error
	if s.ws != 0 {
		err = s.alloc.Free(s.ws)
		s.ws, s.wsLen = 0, 0
	}
	return errors.Join(err, s.lib.Destroy(s.h), s.lib.Close())
}

// workspace returns a workspace of at least n bytes (0 when n is 0).
func (s *Sparse) workspace(n int) (uintptr, error) {
	if n <= s.wsLen {
		return s.ws, nil
	}
	if s.ws != 0 {
		err := s.alloc.Free(s.ws)
		s.ws, s.wsLen = 0, 0
		if err != nil {
			return 0, fmt.Errorf("gpu/blas: freeing the SpMM workspace: %w", err)
		}
	}
	p, err := s.alloc.Alloc(n)
	if err != nil {
		return 0, fmt.Errorf("gpu/blas: SpMM workspace of %d bytes: %w", n, err)
	}
	s.ws, s.wsLen = p, n
	return p, nil
}

// SpMM computes Y = alpha·op(A)·X + beta·Y, with A in CSR and X and Y
// dense row-major device matrices: op(A) is A (tA NoTrans, Y is
// A.Rows×n and X is A.Cols×n) or Aᵀ (tA Trans, Y is A.Cols×n and X is
// A.Rows×n). x and y are device addresses; they must not overlap. The
// work is queued on the handle's stream. It does nothing when Y is empty.
//
// It will panic if n, a's dimensions or a.NNZ is negative or tA is not
// NoTrans or Trans.
func (s *Sparse) SpMM(tA blas.Transpose, alpha float32, a CSR, x uintptr, n int, beta float32, y uintptr) (err error) {
	if n < 0 || a.Rows < 0 || a.Cols < 0 || a.NNZ < 0 {
		panic("gpu/blas: negative dimension")
	}
	oa := op(tA)
	m, k := a.Rows, a.Cols
	if tA == blas.Trans {
		m, k = k, m
	}
	if m == 0 || n == 0 {
		return nil
	}
	l := s.lib
	ad, err := l.CreateCSR(int64(a.Rows), int64(a.Cols), int64(a.NNZ), a.RowOffsets, a.ColIndices, a.Values,
		cublasdl.Index32I, cublasdl.Index32I, cublasdl.IndexBaseZero, cublasdl.R32F)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, l.DestroySpMat(ad)) }()
	xd, err := l.CreateDnMat(int64(k), int64(n), int64(n), x, cublasdl.R32F, cublasdl.OrderRow)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, l.DestroyDnMat(xd)) }()
	yd, err := l.CreateDnMat(int64(m), int64(n), int64(n), y, cublasdl.R32F, cublasdl.OrderRow)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, l.DestroyDnMat(yd)) }()
	size, err := l.SpMMBufferSize(s.h, oa, cublasdl.OpN, alpha, ad, xd, beta, yd, cublasdl.SpMMAlgDefault)
	if err != nil {
		return err
	}
	buf, err := s.workspace(size)
	if err != nil {
		return err
	}
	return l.SpMM(s.h, oa, cublasdl.OpN, alpha, ad, xd, beta, yd, cublasdl.SpMMAlgDefault, buf)
}
