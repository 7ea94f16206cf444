// A fake libcublas for the tests of gnnmpi/gpu/blas: "device" memory is
// host memory, handles are small structs, streams are only recorded, and
// cublasSgemm_v2 runs OpenBLAS's cblas_sgemm in column-major order after
// the argument checks cuBLAS documents (so a wrong leading dimension fails
// with CUBLAS_STATUS_INVALID_VALUE as it would on a GPU).
#include <stdint.h>
#include <stdlib.h>

// cblas.h, declared by hand (CblasColMajor = 102, CblasNoTrans = 111,
// CblasTrans = 112).
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb,
	float beta, float *c, int ldc);

enum { SUCCESS = 0, NOT_INITIALIZED = 1, ALLOC_FAILED = 3, INVALID_VALUE = 7 };
enum { OP_N = 0, OP_T = 1 };
#define MAGIC 0xC0B1A5u

struct handle { uint32_t magic; void *stream; };

static int valid(struct handle *h) { return h != NULL && h->magic == MAGIC; }

int cublasCreate_v2(struct handle **out) {
	if (out == NULL) return INVALID_VALUE;
	struct handle *h = malloc(sizeof *h);
	if (h == NULL) return ALLOC_FAILED;
	h->magic = MAGIC;
	h->stream = NULL;
	*out = h;
	return SUCCESS;
}

int cublasDestroy_v2(struct handle *h) {
	if (!valid(h)) return NOT_INITIALIZED;
	h->magic = 0;
	free(h);
	return SUCCESS;
}

int cublasSetStream_v2(struct handle *h, void *stream) {
	if (!valid(h)) return NOT_INITIALIZED;
	h->stream = stream;
	return SUCCESS;
}

const char *cublasGetStatusString(int status) {
	switch (status) {
	case SUCCESS: return "the operation completed successfully";
	case NOT_INITIALIZED: return "the library was not initialized";
	case ALLOC_FAILED: return "the resource allocation failed";
	case INVALID_VALUE: return "an invalid numeric value was used as an argument";
	}
	return "unknown error";
}

static int maxi(int a, int b) { return a > b ? a : b; }

int cublasSgemm_v2(struct handle *h, int transa, int transb, int m, int n,
		int k, const float *alpha, const float *a, int lda, const float *b,
		int ldb, const float *beta, float *c, int ldc) {
	if (!valid(h)) return NOT_INITIALIZED;
	if ((transa != OP_N && transa != OP_T) || (transb != OP_N && transb != OP_T))
		return INVALID_VALUE;
	if (m < 0 || n < 0 || k < 0 || alpha == NULL || beta == NULL)
		return INVALID_VALUE;
	// Column-major: A is m×k (N) or k×m (T), B is k×n (N) or n×k (T).
	if (lda < maxi(1, transa == OP_N ? m : k)) return INVALID_VALUE;
	if (ldb < maxi(1, transb == OP_N ? k : n)) return INVALID_VALUE;
	if (ldc < maxi(1, m)) return INVALID_VALUE;
	if (m == 0 || n == 0) return SUCCESS;
	if (c == NULL || (k > 0 && (a == NULL || b == NULL))) return INVALID_VALUE;
	if (k == 0) {
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++)
				c[(size_t)j * ldc + i] = *beta == 0 ? 0 : *beta * c[(size_t)j * ldc + i];
		return SUCCESS;
	}
	cblas_sgemm(102, transa == OP_N ? 111 : 112, transb == OP_N ? 111 : 112,
		m, n, k, *alpha, a, lda, b, ldb, *beta, c, ldc);
	return SUCCESS;
}
