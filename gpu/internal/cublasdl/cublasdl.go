// Package cublasdl loads cuBLAS and cuSPARSE at run time (dlopen through
// gnnmpi/internal/dl) and calls the few functions gnnmpi needs through C
// trampolines. It is a thin cgo leaf: the C types and enum values are
// declared by hand from the public headers (cublas_api.h, cusparse.h),
// which are never included, so no build needs CUDA.
//
// Handles, descriptors, streams and device pointers cross the boundary as
// integers (uintptr): they are addresses C owns, never Go pointers. Every
// function returns a Go error naming the library, the function and the
// status when the library does not return success.
//
// The libraries are looked for as dl.CUBLAS and dl.CUSPARSE say:
// GNNMPI_CUDA_LIBDIR names a directory searched first (the tests point it
// at fake libraries), then $CUDA_HOME/lib64, $CUDA_PATH/lib64, the Python
// wheels' directories and the loader's path.
package cublasdl

/*
#include <stddef.h>
#include <stdint.h>

// Hand-declared from cublas_api.h and cusparse.h: handles and descriptors
// are opaque pointers; statuses and enums are C ints.
typedef int gnn_status;
typedef gnn_status (*gnn_create_fn)(void **handle);
typedef gnn_status (*gnn_handle_fn)(void *handle);
typedef gnn_status (*gnn_set_stream_fn)(void *handle, void *stream);
typedef const char *(*gnn_string_fn)(int status);

typedef gnn_status (*gnn_sgemm_fn)(void *handle, int transa, int transb,
	int m, int n, int k, const float *alpha, const float *A, int lda,
	const float *B, int ldb, const float *beta, float *C, int ldc);

typedef gnn_status (*gnn_create_csr_fn)(void **descr, int64_t rows,
	int64_t cols, int64_t nnz, void *rowOffsets, void *colInd, void *values,
	int rowOffsetsType, int colIndType, int idxBase, int valueType);
typedef gnn_status (*gnn_create_dnmat_fn)(void **descr, int64_t rows,
	int64_t cols, int64_t ld, void *values, int valueType, int order);
typedef gnn_status (*gnn_spmm_buffer_size_fn)(void *handle, int opA, int opB,
	const void *alpha, void *matA, void *matB, const void *beta, void *matC,
	int computeType, int alg, size_t *bufferSize);
typedef gnn_status (*gnn_spmm_fn)(void *handle, int opA, int opB,
	const void *alpha, void *matA, void *matB, const void *beta, void *matC,
	int computeType, int alg, void *externalBuffer);

static int gnn_create(void *f, uintptr_t *h) {
	void *p = NULL;
	int st = ((gnn_create_fn)f)(&p);
	*h = (uintptr_t)p;
	return st;
}

static int gnn_handle(void *f, uintptr_t h) {
	return ((gnn_handle_fn)f)((void *)h);
}

static int gnn_set_stream(void *f, uintptr_t h, uintptr_t stream) {
	return ((gnn_set_stream_fn)f)((void *)h, (void *)stream);
}

static const char *gnn_string(void *f, int status) {
	return ((gnn_string_fn)f)(status);
}

static int gnn_sgemm(void *f, uintptr_t h, int ta, int tb, int m, int n,
		int k, float alpha, uintptr_t a, int lda, uintptr_t b, int ldb,
		float beta, uintptr_t c, int ldc) {
	return ((gnn_sgemm_fn)f)((void *)h, ta, tb, m, n, k, &alpha,
		(const float *)a, lda, (const float *)b, ldb, &beta, (float *)c, ldc);
}

static int gnn_create_csr(void *f, uintptr_t *d, int64_t rows, int64_t cols,
		int64_t nnz, uintptr_t off, uintptr_t ind, uintptr_t val, int offType,
		int indType, int base, int valType) {
	void *p = NULL;
	int st = ((gnn_create_csr_fn)f)(&p, rows, cols, nnz, (void *)off,
		(void *)ind, (void *)val, offType, indType, base, valType);
	*d = (uintptr_t)p;
	return st;
}

static int gnn_create_dnmat(void *f, uintptr_t *d, int64_t rows,
		int64_t cols, int64_t ld, uintptr_t val, int valType, int order) {
	void *p = NULL;
	int st = ((gnn_create_dnmat_fn)f)(&p, rows, cols, ld, (void *)val,
		valType, order);
	*d = (uintptr_t)p;
	return st;
}

static int gnn_spmm_buffer_size(void *f, uintptr_t h, int opA, int opB,
		float alpha, uintptr_t a, uintptr_t b, float beta, uintptr_t c,
		int computeType, int alg, size_t *size) {
	return ((gnn_spmm_buffer_size_fn)f)((void *)h, opA, opB, &alpha,
		(void *)a, (void *)b, &beta, (void *)c, computeType, alg, size);
}

static int gnn_spmm(void *f, uintptr_t h, int opA, int opB, float alpha,
		uintptr_t a, uintptr_t b, float beta, uintptr_t c, int computeType,
		int alg, uintptr_t buf) {
	return ((gnn_spmm_fn)f)((void *)h, opA, opB, &alpha, (void *)a,
		(void *)b, &beta, (void *)c, computeType, alg, (void *)buf);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gnnmpi/internal/dl"
)

// LibDirEnv names the environment variable holding a directory searched
// for the libraries first.
const LibDirEnv = dl.CUDALibDirEnv

// Operation is cublasOperation_t and cusparseOperation_t, which share
// their values.
type Operation int32

// The operations (cublas_api.h CUBLAS_OP_N/T, cusparse.h
// CUSPARSE_OPERATION_NON_TRANSPOSE/TRANSPOSE).
const (
	OpN Operation = 0 // CUBLAS_OP_N, CUSPARSE_OPERATION_NON_TRANSPOSE
	OpT Operation = 1 // CUBLAS_OP_T, CUSPARSE_OPERATION_TRANSPOSE
)

// IndexType is cusparseIndexType_t.
type IndexType int32

// Index32I is CUSPARSE_INDEX_32I (int32 offsets or indices).
const Index32I IndexType = 2

// IndexBase is cusparseIndexBase_t.
type IndexBase int32

// IndexBaseZero is CUSPARSE_INDEX_BASE_ZERO.
const IndexBaseZero IndexBase = 0

// DataType is cudaDataType (library_types.h).
type DataType int32

// R32F is CUDA_R_32F (float).
const R32F DataType = 0

// Order is cusparseOrder_t.
type Order int32

// OrderRow is CUSPARSE_ORDER_ROW (row-major dense matrices).
const OrderRow Order = 2

// SpMMAlg is cusparseSpMMAlg_t.
type SpMMAlg int32

// SpMMAlgDefault is CUSPARSE_SPMM_ALG_DEFAULT.
const SpMMAlgDefault SpMMAlg = 0

// Names returns the names OpenCUBLAS or OpenCUSPARSE tries for the library
// base, "libcublas" or "libcusparse" (dl.CUBLAS or dl.CUSPARSE's
// Candidates), or nil for another base.
func Names(base string) []string {
	if s, ok := searches[base]; ok {
		return s().Candidates()
	}
	return nil
}

// searches are the searches of the libraries by base name.
var searches = map[string]func() dl.Search{"libcublas": dl.CUBLAS, "libcusparse": dl.CUSPARSE}

// Error is a status other than success returned by a library function.
type Error struct {
	Lib    string // "cuBLAS" or "cuSPARSE"
	Func   string // the C function
	Status int    // cublasStatus_t or cusparseStatus_t
	Name   string // the status's enum name, "" when unknown
	Msg    string // the library's description, "" when it has none
}

// Error returns e as "cuBLAS: cublasSgemm_v2: CUBLAS_STATUS_INVALID_VALUE
// (7): description".
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s: %s (%d)", e.Lib, e.Func, e.Name, e.Status)
	if e.Name == "" {
		s = fmt.Sprintf("%s: %s: status %d", e.Lib, e.Func, e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// cublasStatus_t values (cublas_api.h).
var cublasStatus = map[int]string{
	0: "CUBLAS_STATUS_SUCCESS", 1: "CUBLAS_STATUS_NOT_INITIALIZED",
	3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
	8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR",
	13: "CUBLAS_STATUS_EXECUTION_FAILED", 14: "CUBLAS_STATUS_INTERNAL_ERROR",
	15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR",
}

// cusparseStatus_t values (cusparse.h).
var cusparseStatus = map[int]string{
	0: "CUSPARSE_STATUS_SUCCESS", 1: "CUSPARSE_STATUS_NOT_INITIALIZED",
	2: "CUSPARSE_STATUS_ALLOC_FAILED", 3: "CUSPARSE_STATUS_INVALID_VALUE",
	4: "CUSPARSE_STATUS_ARCH_MISMATCH", 5: "CUSPARSE_STATUS_MAPPING_ERROR",
	6: "CUSPARSE_STATUS_EXECUTION_FAILED", 7: "CUSPARSE_STATUS_INTERNAL_ERROR",
	8: "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED", 9: "CUSPARSE_STATUS_ZERO_PIVOT",
	10: "CUSPARSE_STATUS_NOT_SUPPORTED", 11: "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
}

// library is what both libraries share: the open library, its status
// names and its status-string function (cublasGetStatusString,
// cusparseGetErrorString), which is optional: cuBLAS before 11.4 lacks
// it.
type library struct {
	lib    *dl.Lib
	name   string
	status map[int]string
	str    unsafe.Pointer // nil when the library has none
}

// check turns the status st of function fn into an error.
func (l *library) check(fn string, st C.int) error { return l.statusError(fn, int(st)) }

// statusError returns the error for status st of function fn, nil for
// success.
func (l *library) statusError(fn string, st int) error {
	if st == 0 {
		return nil
	}
	e := &Error{Lib: l.name, Func: fn, Status: st, Name: l.status[st]}
	if l.str != nil {
		if s := C.gnn_string(l.str, C.int(st)); s != nil {
			e.Msg = C.GoString(s)
		}
	}
	return e
}

// open loads the first of names, or what search finds when names is
// empty, and looks up syms; the error names the library and the missing
// symbol, or every name tried.
func open(name string, search dl.Search, names []string, syms map[string]*unsafe.Pointer, strSym string) (library, error) {
	var lib *dl.Lib
	var err error
	if len(names) > 0 {
		lib, err = dl.Open(names...)
	} else {
		lib, err = search.Open()
	}
	if err != nil {
		return library{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := lib.Syms(syms); err != nil {
		lib.Close()
		return library{}, fmt.Errorf("%s: %w", name, err)
	}
	l := library{lib: lib, name: name}
	l.str, _ = lib.Sym(strSym)
	return l, nil
}

// Path returns the name the library was opened by.
func (l *library) Path() string { return l.lib.Name }

// Close unloads the library. Handles created from it must be destroyed
// first.
func (l *library) Close() error { return l.lib.Close() }

// BLASHandle is a cublasHandle_t.
type BLASHandle uintptr

// CUBLAS is an open cuBLAS library.
type CUBLAS struct {
	library
	create, destroy, setStream, sgemm unsafe.Pointer
}

// OpenCUBLAS loads the first of names that the loader finds, or what
// dl.CUBLAS finds (with its libcublasLt) when names is empty, and looks
// up the functions. The
// error names the library and what is missing, and wraps dl.ErrNotFound
// when no library was found.
func OpenCUBLAS(names ...string) (*CUBLAS, error) {
	l := &CUBLAS{}
	var err error
	l.library, err = open("cuBLAS", dl.CUBLAS(), names, map[string]*unsafe.Pointer{
		"cublasCreate_v2":    &l.create,
		"cublasDestroy_v2":   &l.destroy,
		"cublasSetStream_v2": &l.setStream,
		"cublasSgemm_v2":     &l.sgemm,
	}, "cublasGetStatusString")
	if err != nil {
		return nil, err
	}
	l.status = cublasStatus
	return l, nil
}

// Create returns a new handle (cublasCreate_v2).
func (l *CUBLAS) Create() (BLASHandle, error) {
	var h C.uintptr_t
	err := l.check("cublasCreate_v2", C.gnn_create(l.create, &h))
	return BLASHandle(h), err
}

// Destroy releases h (cublasDestroy_v2).
func (l *CUBLAS) Destroy(h BLASHandle) error {
	return l.check("cublasDestroy_v2", C.gnn_handle(l.destroy, C.uintptr_t(h)))
}

// SetStream makes h queue its work on stream, a cudaStream_t (0: the
// default stream) (cublasSetStream_v2).
func (l *CUBLAS) SetStream(h BLASHandle, stream uintptr) error {
	return l.check("cublasSetStream_v2", C.gnn_set_stream(l.setStream, C.uintptr_t(h), C.uintptr_t(stream)))
}

// Sgemm is cublasSgemm_v2 with alpha and beta on the host: C = alpha·
// op(A)·op(B) + beta·C for column-major device matrices, op(A) m×k,
// op(B) k×n, C m×n.
func (l *CUBLAS) Sgemm(h BLASHandle, ta, tb Operation, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) error {
	return l.check("cublasSgemm_v2", C.gnn_sgemm(l.sgemm, C.uintptr_t(h), C.int(ta), C.int(tb),
		C.int(m), C.int(n), C.int(k), C.float(alpha), C.uintptr_t(a), C.int(lda),
		C.uintptr_t(b), C.int(ldb), C.float(beta), C.uintptr_t(c), C.int(ldc)))
}

// SparseHandle is a cusparseHandle_t.
type SparseHandle uintptr

// SpMat is a cusparseSpMatDescr_t.
type SpMat uintptr

// DnMat is a cusparseDnMatDescr_t.
type DnMat uintptr

// CUSPARSE is an open cuSPARSE library.
type CUSPARSE struct {
	library
	create, destroy, setStream unsafe.Pointer
	createCSR, destroySpMat    unsafe.Pointer
	createDnMat, destroyDnMat  unsafe.Pointer
	spmmBufferSize, spmm       unsafe.Pointer
}

// OpenCUSPARSE loads the first of names that the loader finds, or what
// dl.CUSPARSE finds (with its libnvJitLink) when names is empty, and
// looks up the functions.
// The error names the library and what is missing, and wraps
// dl.ErrNotFound when no library was found.
func OpenCUSPARSE(names ...string) (*CUSPARSE, error) {
	l := &CUSPARSE{}
	var err error
	l.library, err = open("cuSPARSE", dl.CUSPARSE(), names, map[string]*unsafe.Pointer{
		"cusparseCreate":          &l.create,
		"cusparseDestroy":         &l.destroy,
		"cusparseSetStream":       &l.setStream,
		"cusparseCreateCsr":       &l.createCSR,
		"cusparseDestroySpMat":    &l.destroySpMat,
		"cusparseCreateDnMat":     &l.createDnMat,
		"cusparseDestroyDnMat":    &l.destroyDnMat,
		"cusparseSpMM_bufferSize": &l.spmmBufferSize,
		"cusparseSpMM":            &l.spmm,
	}, "cusparseGetErrorString")
	if err != nil {
		return nil, err
	}
	l.status = cusparseStatus
	return l, nil
}

// Create returns a new handle (cusparseCreate).
func (l *CUSPARSE) Create() (SparseHandle, error) {
	var h C.uintptr_t
	err := l.check("cusparseCreate", C.gnn_create(l.create, &h))
	return SparseHandle(h), err
}

// Destroy releases h (cusparseDestroy).
func (l *CUSPARSE) Destroy(h SparseHandle) error {
	return l.check("cusparseDestroy", C.gnn_handle(l.destroy, C.uintptr_t(h)))
}

// SetStream makes h queue its work on stream, a cudaStream_t (0: the
// default stream) (cusparseSetStream).
func (l *CUSPARSE) SetStream(h SparseHandle, stream uintptr) error {
	return l.check("cusparseSetStream", C.gnn_set_stream(l.setStream, C.uintptr_t(h), C.uintptr_t(stream)))
}

// CreateCSR describes a rows×cols CSR matrix with nnz entries in device
// memory (cusparseCreateCsr).
func (l *CUSPARSE) CreateCSR(rows, cols, nnz int64, rowOffsets, colInd, values uintptr, offType, indType IndexType, base IndexBase, valueType DataType) (SpMat, error) {
	var d C.uintptr_t
	err := l.check("cusparseCreateCsr", C.gnn_create_csr(l.createCSR, &d, C.int64_t(rows), C.int64_t(cols), C.int64_t(nnz),
		C.uintptr_t(rowOffsets), C.uintptr_t(colInd), C.uintptr_t(values), C.int(offType), C.int(indType), C.int(base), C.int(valueType)))
	return SpMat(d), err
}

// DestroySpMat releases d (cusparseDestroySpMat).
func (l *CUSPARSE) DestroySpMat(d SpMat) error {
	return l.check("cusparseDestroySpMat", C.gnn_handle(l.destroySpMat, C.uintptr_t(d)))
}

// CreateDnMat describes a rows×cols dense matrix in device memory with
// leading dimension ld (cusparseCreateDnMat).
func (l *CUSPARSE) CreateDnMat(rows, cols, ld int64, values uintptr, valueType DataType, order Order) (DnMat, error) {
	var d C.uintptr_t
	err := l.check("cusparseCreateDnMat", C.gnn_create_dnmat(l.createDnMat, &d, C.int64_t(rows), C.int64_t(cols), C.int64_t(ld),
		C.uintptr_t(values), C.int(valueType), C.int(order)))
	return DnMat(d), err
}

// DestroyDnMat releases d (cusparseDestroyDnMat).
func (l *CUSPARSE) DestroyDnMat(d DnMat) error {
	return l.check("cusparseDestroyDnMat", C.gnn_handle(l.destroyDnMat, C.uintptr_t(d)))
}

// SpMMBufferSize returns the workspace bytes that SpMM needs for the same
// arguments (cusparseSpMM_bufferSize, compute type CUDA_R_32F, alpha and
// beta on the host).
func (l *CUSPARSE) SpMMBufferSize(h SparseHandle, opA, opB Operation, alpha float32, a SpMat, b DnMat, beta float32, c DnMat, alg SpMMAlg) (int, error) {
	var size C.size_t
	err := l.check("cusparseSpMM_bufferSize", C.gnn_spmm_buffer_size(l.spmmBufferSize, C.uintptr_t(h), C.int(opA), C.int(opB),
		C.float(alpha), C.uintptr_t(a), C.uintptr_t(b), C.float(beta), C.uintptr_t(c), C.int(R32F), C.int(alg), &size))
	return int(size), err
}

// SpMM computes C = alpha·op(A)·op(B) + beta·C with the workspace buf of
// SpMMBufferSize bytes (cusparseSpMM, compute type CUDA_R_32F, alpha and
// beta on the host).
func (l *CUSPARSE) SpMM(h SparseHandle, opA, opB Operation, alpha float32, a SpMat, b DnMat, beta float32, c DnMat, alg SpMMAlg, buf uintptr) error {
	return l.check("cusparseSpMM", C.gnn_spmm(l.spmm, C.uintptr_t(h), C.int(opA), C.int(opB),
		C.float(alpha), C.uintptr_t(a), C.uintptr_t(b), C.float(beta), C.uintptr_t(c), C.int(R32F), C.int(alg), C.uintptr_t(buf)))
}
