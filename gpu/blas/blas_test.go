package blas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/gpu/internal/cublasdl"
	"gnnmpi/internal/dl"
	"gnnmpi/internal/testutil"
	"gnnmpi/sparse"
)

// randSlice returns n values uniform in [-1, 1).
func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 2*r.Float32() - 1
	}
	return s
}

// Sgemm on the fake cuBLAS (OpenBLAS, column-major, with cuBLAS's checks
// of the leading dimensions) equals dense.Gemm on the host for every
// transpose combination, on odd shapes and the empty ones.
func TestSgemm(t *testing.T) {
	fakeDir := useFakes(t)
	b, err := NewBLAS(0x1234) // the fake only records the stream
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	if !strings.HasPrefix(b.Library(), fakeDir) {
		t.Fatalf("opened %s, want the fake in %s", b.Library(), fakeDir)
	}
	r := rand.New(rand.NewPCG(1, 2))
	trans := []blas.Transpose{blas.NoTrans, blas.Trans}
	for _, sh := range []struct{ m, n, k int }{
		{1, 1, 1}, {3, 5, 7}, {17, 1, 9}, {2, 13, 1}, {31, 29, 33}, {0, 3, 4}, {4, 0, 3}, {4, 3, 0},
	} {
		for _, tA := range trans {
			for _, tB := range trans {
				for _, beta := range []float32{0, -0.5} {
					name := fmt.Sprintf("m=%d/n=%d/k=%d/%c%c/beta=%g", sh.m, sh.n, sh.k, tA, tB, beta)
					t.Run(name, func(t *testing.T) {
						a := randSlice(r, sh.m*sh.k)
						bm := randSlice(r, sh.k*sh.n)
						c := randSlice(r, sh.m*sh.n)
						want := append([]float32(nil), c...)
						dense.Gemm(dense.BLASOrDefault(nil), tA, tB, sh.m, sh.n, sh.k, 1.5, a, bm, beta, want)
						if err := b.Sgemm(tA, tB, sh.m, sh.n, sh.k, 1.5, dev(t, a), dev(t, bm), beta, dev(t, c)); err != nil {
							t.Fatal(err)
						}
						// float32 sums of up to 33 products of numbers below 1.5.
						if !testutil.Close(c, want, 1e-5) {
							t.Errorf("got: %v want: %v", c, want)
						}
					})
				}
			}
		}
	}
}

// randCSR returns a random rows×cols matrix with about a third of its
// entries stored (zero rows and columns included), as the float64 CSR of
// package sparse and as the int32/float32 arrays of CSR.
func randCSR(r *rand.Rand, rows, cols int) (ref *sparse.CSR, off, ind []int32, val []float32) {
	d := make([]float64, rows*cols)
	for i := range d {
		if r.IntN(3) == 0 {
			d[i] = float64(2*r.Float32() - 1)
		}
	}
	ref = sparse.FromDense(rows, cols, d)
	off = make([]int32, rows+1)
	for i, p := range ref.Indptr {
		off[i] = int32(p)
	}
	ind = make([]int32, len(ref.Indices))
	val = make([]float32, len(ref.Values))
	for i := range ind {
		ind[i] = int32(ref.Indices[i])
		val[i] = float32(ref.Values[i])
	}
	return ref, off, ind, val
}

// transposed returns Aᵀ as a new CSR.
func transposed(a *sparse.CSR) *sparse.CSR {
	d := make([]float64, a.NRows*a.NCols)
	for i := range a.NRows {
		for p := a.Indptr[i]; p < a.Indptr[i+1]; p++ {
			d[a.Indices[p]*a.NRows+i] = a.Values[p]
		}
	}
	return sparse.FromDense(int(a.NCols), int(a.NRows), d)
}

// spmmRef returns alpha·op(A)·X + beta·Y through sparse.Mul, X and Y
// row-major with n columns.
func spmmRef(t *testing.T, opA *sparse.CSR, x []float32, n int, alpha, beta float32, y []float32) []float32 {
	xd := make([]float64, len(x))
	for i, v := range x {
		xd[i] = float64(v)
	}
	p, err := sparse.Mul(opA, sparse.FromDense(int(opA.NCols), n, xd))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(y))
	for i := range out {
		out[i] = beta * y[i]
	}
	for i := range p.NRows {
		for q := p.Indptr[i]; q < p.Indptr[i+1]; q++ {
			out[i*int64(n)+p.Indices[q]] += alpha * float32(p.Values[q])
		}
	}
	return out
}

// SpMM on the fake cuSPARSE equals sparse.Mul for op(A) = A and Aᵀ, with
// the workspace taken from the caller's allocator (the fake overwrites
// the whole size it asked for; the allocator's canary shows an overrun),
// grown once and freed by Close.
func TestSpMM(t *testing.T) {
	fakeDir := useFakes(t)
	alloc := newHostAlloc(t)
	s, err := NewSparse(alloc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Library(), fakeDir) {
		t.Fatalf("opened %s, want the fake in %s", s.Library(), fakeDir)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct{ rows, cols, n int }{
		{1, 1, 1}, {7, 5, 3}, {5, 7, 1}, {13, 29, 9}, {29, 13, 16}, {4, 6, 0}, {0, 6, 2},
	} {
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, beta := range []float32{0, 0.75} {
				name := fmt.Sprintf("%dx%d/n=%d/%c/beta=%g", sh.rows, sh.cols, sh.n, tA, beta)
				t.Run(name, func(t *testing.T) {
					ref, off, ind, val := randCSR(r, sh.rows, sh.cols)
					opA := ref
					if tA == blas.Trans {
						opA = transposed(ref)
					}
					m, k := int(opA.NRows), int(opA.NCols)
					x := randSlice(r, k*sh.n)
					y := randSlice(r, m*sh.n)
					want := spmmRef(t, opA, x, sh.n, -1.25, beta, y)
					a := CSR{Rows: sh.rows, Cols: sh.cols, NNZ: len(ind), RowOffsets: dev(t, off), ColIndices: dev(t, ind), Values: dev(t, val)}
					if err := s.SpMM(tA, -1.25, a, dev(t, x), sh.n, beta, dev(t, y)); err != nil {
						t.Fatal(err)
					}
					if !testutil.Close(y, want, 1e-5) {
						t.Errorf("got: %v want: %v", y, want)
					}
				})
			}
		}
	}
	// The fake asks for the same size every time: one allocation.
	if alloc.allocs != 1 {
		t.Errorf("workspace allocations: got: %d want: 1", alloc.allocs)
	}
	if err := s.Close(); err != nil {
		t.Error(err)
	}
	alloc.checkFreed()
}

// A status other than success becomes an error naming the library, the
// function and the status: a CSR that uses 64-bit indices is refused by
// the fake cuSPARSE as by the real one's checks, and a leading dimension
// below the row count by cuBLAS.
func TestStatusError(t *testing.T) {
	useFakes(t)
	l, err := cublasdl.OpenCUSPARSE()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	off := []int32{0, 0}
	_, err = l.CreateCSR(1, 1, 0, dev(t, off), 0, 0, 3 /* CUSPARSE_INDEX_64I */, cublasdl.Index32I, cublasdl.IndexBaseZero, cublasdl.R32F)
	var e *cublasdl.Error
	if !errors.As(err, &e) || e.Status != 10 {
		t.Fatalf("got: %v want: CUSPARSE_STATUS_NOT_SUPPORTED", err)
	}
	for _, w := range []string{"cuSPARSE", "cusparseCreateCsr", "CUSPARSE_STATUS_NOT_SUPPORTED (10)", "operation not supported"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}

	b, err := cublasdl.OpenCUBLAS()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	h, err := b.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Destroy(h)
	a := make([]float32, 6)
	err = b.Sgemm(h, cublasdl.OpN, cublasdl.OpN, 3, 2, 1, 1, dev(t, a), 2, dev(t, a), 1, 0, dev(t, a), 3)
	if err == nil || !strings.Contains(err.Error(), "cuBLAS: cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE (7)") {
		t.Errorf("lda 2 < m 3: got: %v want: CUBLAS_STATUS_INVALID_VALUE", err)
	}
}

// Without the libraries, NewBLAS and NewSparse fail with an error that
// names the library and wraps the sentinels. It looks only in an empty
// directory: a machine with CUDA installed would find the real ones on
// the loader's path.
func TestMissingLibrary(t *testing.T) {
	empty := t.TempDir()
	t.Setenv(cublasdl.LibDirEnv, empty)
	if _, err := dl.Open("libcublas.so.12", "libcublas.so.11", "libcublas.so", "libcusparse.so.12", "libcusparse.so.11", "libcusparse.so"); err == nil {
		t.Skip("cuBLAS or cuSPARSE is installed: nothing is missing")
	}
	_, err := NewBLAS(0)
	if !errors.Is(err, ErrNoCUBLAS) || !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libcublas.so.12") {
		t.Errorf("NewBLAS: got: %v want: ErrNoCUBLAS naming libcublas.so.12", err)
	}
	_, err = NewSparse(newHostAlloc(t), 0)
	if !errors.Is(err, ErrNoCUSPARSE) || !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libcusparse.so.12") {
		t.Errorf("NewSparse: got: %v want: ErrNoCUSPARSE naming libcusparse.so.12", err)
	}
}

// A library without a function gnnmpi needs is as good as missing: the
// error names the function. The fake cuSPARSE stands in for an old cuBLAS.
func TestMissingSymbol(t *testing.T) {
	fakeDir := useFakes(t)
	_, err := cublasdl.OpenCUBLAS(fakeDir + "/libcusparse.so.12")
	if err == nil || !strings.Contains(err.Error(), "cuBLAS") || !strings.Contains(err.Error(), "has no symbol cublas") {
		t.Errorf("got: %v want: an error naming a missing cuBLAS function", err)
	}
}

// The real libraries, where installed: loading, handles and streams, and
// the SpMM descriptors and workspace query (which read no device memory;
// the products themselves need device memory from gpu/cuda and are
// checked by gnnmpi gpucheck). Skips without the libraries or a GPU.
func TestRealLibraries(t *testing.T) {
	t.Setenv(cublasdl.LibDirEnv, "")
	b, err := NewBLAS(0)
	if errors.Is(err, ErrNoCUBLAS) {
		t.Skipf("no cuBLAS: %v", err)
	}
	var e *cublasdl.Error
	if errors.As(err, &e) && e.Func == "cublasCreate_v2" {
		t.Skipf("cuBLAS without a usable GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cuBLAS: %s", b.Library())
	if err := b.Close(); err != nil {
		t.Error(err)
	}

	l, err := cublasdl.OpenCUSPARSE()
	if errors.Is(err, dl.ErrNotFound) {
		t.Skipf("no cuSPARSE: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	t.Logf("cuSPARSE: %s", l.Path())
	h, err := l.Create()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Destroy(h)
	// Descriptors of a 4×3 CSR with 5 entries and 3×2, 4×2 dense
	// matrices; the addresses are never dereferenced by the size query.
	const fake = 0x10000
	a, err := l.CreateCSR(4, 3, 5, fake, fake, fake, cublasdl.Index32I, cublasdl.Index32I, cublasdl.IndexBaseZero, cublasdl.R32F)
	if err != nil {
		t.Fatal(err)
	}
	defer l.DestroySpMat(a)
	x, err := l.CreateDnMat(3, 2, 2, fake, cublasdl.R32F, cublasdl.OrderRow)
	if err != nil {
		t.Fatal(err)
	}
	defer l.DestroyDnMat(x)
	y, err := l.CreateDnMat(4, 2, 2, fake, cublasdl.R32F, cublasdl.OrderRow)
	if err != nil {
		t.Fatal(err)
	}
	defer l.DestroyDnMat(y)
	size, err := l.SpMMBufferSize(h, cublasdl.OpN, cublasdl.OpN, 1, a, x, 0, y, cublasdl.SpMMAlgDefault)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SpMM workspace: %d bytes", size)
}
