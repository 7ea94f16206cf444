// A fake libcuda.so.1 for gnnmpi's tests: one device ("gnnmpi fake
// device", compute capability 8.0) whose memory is host memory. Device
// pointers are host pointers, mapped host memory's device pointer is the
// host pointer, streams and events are synchronous (an event records a
// clock). A module is a shared object built by the fake NVRTC, named by
// the image (see fakenvrtc.c), and a kernel NAME is run by the object's
// launcher NAME__gnnmpi_launch, which loops over every block and thread.
//
// cuModuleLoadData checks an image as the real driver does: a CUBIN
// loads only on a device of its major capability and no lower minor
// (else CUDA_ERROR_NO_BINARY_FOR_GPU); PTX whose .version is newer than
// the driver's PTX ISA (7.x for a CUDA 11.x driver, 8.x for 12.x) is
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION, and PTX whose .target is above the
// device is CUDA_ERROR_INVALID_PTX (the JIT cannot compile down).
// (Capabilities above 9.9 take three digits: "12.1" is sm_121.)
//
// GNNMPI_FAKE_CC sets the device's compute capability ("8.9"; default
// 8.0) and GNNMPI_FAKE_DRIVER the driver's CUDA version (cuDriverGetVersion's
// number, e.g. 11080; default 12040).
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
	INVALID_IMAGE = 200, NO_BINARY_FOR_GPU = 209, INVALID_PTX = 218, UNSUPPORTED_PTX_VERSION = 222,
	INVALID_HANDLE = 400, NOT_FOUND = 500,
};

// capability returns the device's compute capability as 10·major + minor.
static int capability(void) {
	const char *s = getenv("GNNMPI_FAKE_CC");
	int major, minor;
	if (s == NULL || *s == 0) return 80;
	if (sscanf(s, "%d.%d", &major, &minor) != 2) {
		fprintf(stderr, "fake libcuda: bad GNNMPI_FAKE_CC=%s\n", s);
		abort();
	}
	return 10 * major + minor;
}

// driver_version returns the driver's CUDA version, 1000·major + 10·minor.
static int driver_version(void) {
	const char *s = getenv("GNNMPI_FAKE_DRIVER");
	return s && *s ? atoi(s) : 12040;
}

static int initialized;
static int ctx_token; // the primary context is the address of this

#define NEED_INIT if (!initialized) return NOT_INITIALIZED

CUresult cuInit(unsigned flags) { initialized = flags == 0; return flags == 0 ? OK : INVALID_VALUE; }
CUresult cuDriverGetVersion(int *v) { *v = driver_version(); return OK; }
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
	case 75: *v = capability() / 10; return OK; // compute capability major
	case 76: *v = capability() % 10; return OK; // minor
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

// object returns the path of the compiled object an image names after
// marker, or NULL.
static const char *object(const char *image, const char *marker, char *path, size_t n) {
	const char *at = strstr(image, marker);
	if (at == NULL) return NULL;
	at += strlen(marker);
	size_t k = strcspn(at, "\n");
	if (k == 0 || k >= n) return NULL;
	memcpy(path, at, k);
	path[k] = 0;
	return path;
}

// ptx_isa sets the newest PTX ISA version the driver compiles: 7.x for
// CUDA 11.x, 8.0 to 8.5 for 12.0 to 12.5, then 8.5 for 12.6, 8.7 for 12.8,
// 8.8 for 12.9, 9.x for 13.x.
static void ptx_isa(int *major, int *minor) {
	int v = driver_version(), cuda_major = v / 1000, cuda_minor = v % 1000 / 10;
	*major = cuda_major - 4;
	*minor = cuda_minor;
	if (cuda_major == 12 && cuda_minor >= 6) *minor = cuda_minor - 1;
}

// check returns whether the driver can load image on the device, and
// the object it names.
static CUresult check(const char *image, char *path, size_t n) {
	int cc = capability(), arch, major, minor;
	if (memcmp(image, "\177ELF", 4) == 0) { // a CUBIN
		if (sscanf(image + 4, "gnnmpi-fake-cubin sm_%d", &arch) != 1) return INVALID_IMAGE;
		if (arch / 10 != cc / 10 || arch % 10 > cc % 10) return NO_BINARY_FOR_GPU;
		const char *sp = strchr(image + 4 + strlen("gnnmpi-fake-cubin "), ' ');
		return sp && object(sp, " ", path, n) ? OK : INVALID_IMAGE;
	}
	const char *v = strstr(image, "\n.version "), *t = strstr(image, "\n.target sm_");
	if (v == NULL || t == NULL || sscanf(v, "\n.version %d.%d", &major, &minor) != 2 || sscanf(t, "\n.target sm_%d", &arch) != 1)
		return INVALID_IMAGE;
	int isa_major, isa_minor;
	ptx_isa(&isa_major, &isa_minor);
	if (major > isa_major || (major == isa_major && minor > isa_minor)) return UNSUPPORTED_PTX_VERSION;
	if (arch > cc) return INVALID_PTX;
	return object(image, "// gnnmpi-fake-object ", path, n) ? OK : INVALID_IMAGE;
}

CUresult cuModuleLoadData(void **m, const void *image) {
	NEED_INIT;
	char path[4096];
	CUresult r = check(image, path, sizeof path);
	if (r != OK) return r;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
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
	case NO_BINARY_FOR_GPU: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; return OK;
	case INVALID_PTX: *s = "CUDA_ERROR_INVALID_PTX"; return OK;
	case UNSUPPORTED_PTX_VERSION: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; return OK;
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
