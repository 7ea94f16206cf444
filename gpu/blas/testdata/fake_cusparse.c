// A fake libcusparse for the tests of gnnmpi/gpu/blas: "device" memory is
// host memory, handles and descriptors are small structs, streams are
// only recorded, and cusparseSpMM is a plain CSR loop for op(A) = A and
// op(A) = Aᵀ. It accepts only what gnnmpi uses (32-bit indices, base
// zero, float values, row-major dense matrices) and checks the shapes as
// cuSPARSE does. cusparseSpMM_bufferSize asks for a small workspace that
// cusparseSpMM requires and writes over entirely, so a missing or short
// buffer shows.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
	SUCCESS = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 2, INVALID_VALUE = 3,
	NOT_SUPPORTED = 10
};
enum { OP_N = 0, OP_T = 1 };
enum { INDEX_32I = 2, BASE_ZERO = 0, R_32F = 0, ORDER_ROW = 2, ALG_DEFAULT = 0 };
enum { HANDLE = 0x5A1, SPMAT = 0x5A2, DNMAT = 0x5A3 };

// WORKSPACE is the size cusparseSpMM_bufferSize reports.
#define WORKSPACE 96

struct handle { uint32_t magic; void *stream; };
struct spmat {
	uint32_t magic;
	int64_t rows, cols, nnz;
	const int32_t *off, *ind;
	const float *val;
};
struct dnmat { uint32_t magic; int64_t rows, cols, ld; float *val; };

int cusparseCreate(struct handle **out) {
	if (out == NULL) return INVALID_VALUE;
	struct handle *h = malloc(sizeof *h);
	if (h == NULL) return ALLOC_FAILED;
	h->magic = HANDLE;
	h->stream = NULL;
	*out = h;
	return SUCCESS;
}

int cusparseDestroy(struct handle *h) {
	if (h == NULL || h->magic != HANDLE) return NOT_INITIALIZED;
	h->magic = 0;
	free(h);
	return SUCCESS;
}

int cusparseSetStream(struct handle *h, void *stream) {
	if (h == NULL || h->magic != HANDLE) return NOT_INITIALIZED;
	h->stream = stream;
	return SUCCESS;
}

const char *cusparseGetErrorString(int status) {
	switch (status) {
	case SUCCESS: return "success";
	case NOT_INITIALIZED: return "initialization error";
	case ALLOC_FAILED: return "out of memory";
	case INVALID_VALUE: return "invalid value";
	case NOT_SUPPORTED: return "operation not supported";
	}
	return "unknown error";
}

int cusparseCreateCsr(struct spmat **out, int64_t rows, int64_t cols,
		int64_t nnz, void *off, void *ind, void *val, int offType,
		int indType, int base, int valType) {
	if (out == NULL || rows < 0 || cols < 0 || nnz < 0) return INVALID_VALUE;
	if (off == NULL || (nnz > 0 && (ind == NULL || val == NULL))) return INVALID_VALUE;
	if (offType != INDEX_32I || indType != INDEX_32I || base != BASE_ZERO || valType != R_32F)
		return NOT_SUPPORTED;
	struct spmat *d = malloc(sizeof *d);
	if (d == NULL) return ALLOC_FAILED;
	*d = (struct spmat){SPMAT, rows, cols, nnz, off, ind, val};
	*out = d;
	return SUCCESS;
}

int cusparseDestroySpMat(struct spmat *d) {
	if (d == NULL || d->magic != SPMAT) return INVALID_VALUE;
	d->magic = 0;
	free(d);
	return SUCCESS;
}

int cusparseCreateDnMat(struct dnmat **out, int64_t rows, int64_t cols,
		int64_t ld, void *val, int valType, int order) {
	if (out == NULL || rows < 0 || cols < 0) return INVALID_VALUE;
	if (valType != R_32F || order != ORDER_ROW) return NOT_SUPPORTED;
	if (ld < cols || (rows > 0 && cols > 0 && val == NULL)) return INVALID_VALUE;
	struct dnmat *d = malloc(sizeof *d);
	if (d == NULL) return ALLOC_FAILED;
	*d = (struct dnmat){DNMAT, rows, cols, ld, val};
	*out = d;
	return SUCCESS;
}

int cusparseDestroyDnMat(struct dnmat *d) {
	if (d == NULL || d->magic != DNMAT) return INVALID_VALUE;
	d->magic = 0;
	free(d);
	return SUCCESS;
}

// check validates the arguments of SpMM and its buffer size.
static int check(struct handle *h, int opA, int opB, const void *alpha,
		struct spmat *a, struct dnmat *b, const void *beta, struct dnmat *c,
		int computeType, int alg) {
	if (h == NULL || h->magic != HANDLE) return NOT_INITIALIZED;
	if (a == NULL || a->magic != SPMAT || b == NULL || b->magic != DNMAT ||
			c == NULL || c->magic != DNMAT || alpha == NULL || beta == NULL)
		return INVALID_VALUE;
	if ((opA != OP_N && opA != OP_T) || opB != OP_N) return NOT_SUPPORTED;
	if (computeType != R_32F || alg != ALG_DEFAULT) return NOT_SUPPORTED;
	int64_t m = opA == OP_N ? a->rows : a->cols;
	int64_t k = opA == OP_N ? a->cols : a->rows;
	if (c->rows != m || b->rows != k || b->cols != c->cols) return INVALID_VALUE;
	return SUCCESS;
}

int cusparseSpMM_bufferSize(struct handle *h, int opA, int opB,
		const void *alpha, struct spmat *a, struct dnmat *b, const void *beta,
		struct dnmat *c, int computeType, int alg, size_t *size) {
	int st = check(h, opA, opB, alpha, a, b, beta, c, computeType, alg);
	if (st != SUCCESS) return st;
	if (size == NULL) return INVALID_VALUE;
	*size = WORKSPACE;
	return SUCCESS;
}

int cusparseSpMM(struct handle *h, int opA, int opB, const void *alpha,
		struct spmat *a, struct dnmat *b, const void *beta, struct dnmat *c,
		int computeType, int alg, void *buf) {
	int st = check(h, opA, opB, alpha, a, b, beta, c, computeType, alg);
	if (st != SUCCESS) return st;
	// The workspace of cusparseSpMM_bufferSize's size is required.
	if (buf == NULL) return INVALID_VALUE;
	memset(buf, 0xA5, WORKSPACE);
	float al = *(const float *)alpha, be = *(const float *)beta;
	int64_t n = c->cols;
	for (int64_t i = 0; i < c->rows; i++) {
		float *y = c->val + i * c->ld;
		for (int64_t j = 0; j < n; j++)
			y[j] = be == 0 ? 0 : be * y[j];
	}
	for (int64_t r = 0; r < a->rows; r++) {
		for (int32_t p = a->off[r]; p < a->off[r + 1]; p++) {
			int64_t col = a->ind[p];
			if (col < 0 || col >= a->cols) return INVALID_VALUE;
			float v = al * a->val[p];
			// op(A) = A: Y[r] += v·X[col]; op(A) = Aᵀ: Y[col] += v·X[r].
			int64_t yi = opA == OP_N ? r : col, xi = opA == OP_N ? col : r;
			float *y = c->val + yi * c->ld;
			const float *x = b->val + xi * b->ld;
			for (int64_t j = 0; j < n; j++) y[j] += v * x[j];
		}
	}
	return SUCCESS;
}
