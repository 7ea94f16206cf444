// A fake libcuda.so.1 for gnnmpi's tests: one device ("gnnmpi fake
// device", compute capability 8.0) whose memory is host memory. Device
// pointers are host pointers, mapped host memory's device pointer is the
// host pointer, streams and events are synchronous (an event records a
// clock). A module is a shared object built by the fake NVRTC: its "PTX"
// is the object's path, and a kernel NAME is run by the object's launcher
// NAME__gnnmpi_launch, which loops over every block and thread.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*launcher)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void **);

enum {
	OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
	INVALID_IMAGE = 200, INVALID_HANDLE = 400, NOT_FOUND = 500,
};

static int initialized;
static int ctx_token; // the primary context is the address of this

#define NEED_INIT if (!initialized) return NOT_INITIALIZED

CUresult cuInit(unsigned flags) { initialized = flags == 0; return flags == 0 ? OK : INVALID_VALUE; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return OK; }
CUresult cuDeviceGetCount(int *n) { NEED_INIT; *n = 1; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { NEED_INIT; if (ordinal != 0) return INVALID_DEVICE; *d = 0; return OK; }
CUresult cuDeviceGetName(char *name, int len, int d) {
	NEED_INIT;
	if (d != 0) return INVALID_DEVICE;
	snprintf(name, len, "gnnmpi fake device");
	return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
	NEED_INIT;
	if (d != 0) return INVALID_DEVICE;
	switch (attr) {
	case 75: *v = 8; return OK; // compute capability major
	case 76: *v = 0; return OK; // minor
	}
	return INVALID_VALUE;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { NEED_INIT; if (d != 0) return INVALID_DEVICE; *c = &ctx_token; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return d == 0 ? OK : INVALID_DEVICE; }
CUresult cuCtxSetCurrent(void *c) { return c == NULL || c == &ctx_token ? OK : INVALID_HANDLE; }
CUresult cuCtxCreate_v2(void **c, unsigned flags, int d) { (void)flags; return cuDevicePrimaryCtxRetain(c, d); }
CUresult cuCtxDestroy_v2(void *c) { return c == &ctx_token ? OK : INVALID_HANDLE; }

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	NEED_INIT;
	if (n == 0) return INVALID_VALUE;
	void *m = malloc(n);
	if (m == NULL) return OUT_OF_MEMORY;
	memset(m, 0xA5, n); // device memory is not zeroed: make stale reads visible
	*p = (CUdeviceptr)(size_t)m;
	return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(size_t)p); return OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { memcpy((void *)(size_t)dst, src, n); return OK; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { memcpy(dst, (const void *)(size_t)src, n); return OK; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) { (void)s; return cuMemcpyHtoD_v2(dst, src, n); }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
	NEED_INIT;
	if (flags & ~7u) return INVALID_VALUE;
	*p = malloc(n ? n : 1);
	return *p ? OK : OUT_OF_MEMORY;
}
CUresult cuMemFreeHost(void *p) { free(p); return OK; }
CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned flags) { (void)p; (void)n; return flags & ~15u ? INVALID_VALUE : OK; }
CUresult cuMemHostUnregister(void *p) { (void)p; return OK; }
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags) {
	if (flags != 0) return INVALID_VALUE;
	*d = (CUdeviceptr)(size_t)p;
	return OK;
}

static int stream_token;
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = &stream_token; return OK; }
CUresult cuStreamSynchronize(void *s) { (void)s; return OK; }
CUresult cuStreamDestroy_v2(void *s) { return s == &stream_token ? OK : INVALID_HANDLE; }

typedef struct { double ms; int recorded; } event;
static double now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
CUresult cuEventCreate(void **e, unsigned flags) { (void)flags; *e = calloc(1, sizeof(event)); return *e ? OK : OUT_OF_MEMORY; }
CUresult cuEventRecord(void *e, void *s) { (void)s; ((event *)e)->ms = now_ms(); ((event *)e)->recorded = 1; return OK; }
CUresult cuEventSynchronize(void *e) { return ((event *)e)->recorded ? OK : INVALID_HANDLE; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
	event *x = a, *y = b;
	if (!x->recorded || !y->recorded) return INVALID_HANDLE;
	*ms = (float)(y->ms - x->ms);
	return OK;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return OK; }

CUresult cuModuleLoadData(void **m, const void *image) {
	NEED_INIT;
	void *h = dlopen((const char *)image, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "fake cuModuleLoadData: %s\n", dlerror());
		return INVALID_IMAGE;
	}
	*m = h;
	return OK;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	char sym[512];
	snprintf(sym, sizeof sym, "%s__gnnmpi_launch", name);
	*f = dlsym(m, sym);
	return *f ? OK : NOT_FOUND;
}
CUresult cuModuleUnload(void *m) { return dlclose(m) == 0 ? OK : INVALID_HANDLE; }
CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned shared, void *s, void **params, void **extra) {
	(void)s;
	if (f == NULL) return INVALID_HANDLE;
	if (shared != 0 || extra != NULL) return INVALID_VALUE; // the shim has no shared memory
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || (unsigned long)bx * by * bz > 1024) return INVALID_VALUE;
	((launcher)f)(gx, gy, gz, bx, by, bz, params);
	return OK;
}

static const char *names[][2] = {
	{"CUDA_SUCCESS", "no error"},
	{"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
};
CUresult cuGetErrorName(CUresult r, const char **s) {
	switch (r) {
	case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return OK;
	case INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; return OK;
	case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; return OK;
	case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
	}
	if (r < 0 || r > 3) { *s = NULL; return INVALID_VALUE; }
	*s = names[r][0];
	return OK;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
	if (r < 0 || r > 3) { *s = NULL; return INVALID_VALUE; }
	*s = names[r][1];
	return OK;
}
