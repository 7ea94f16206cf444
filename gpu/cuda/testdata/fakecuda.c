// A fake libcuda.so.1 for gnnmpi's tests: GNNMPI_FAKE_CUDA_DEVICES devices
// (default 1, at most 8; "gnnmpi fake device", PCI bus id 0000:0N:00.0)
// whose memory is host memory. Device pointers are host pointers, mapped
// host memory's device pointer is the host pointer, events record a clock.
// Each device has one primary context, current per OS thread as in CUDA
// (cuCtxSetCurrent, cuCtxGetCurrent, cuCtxGetDevice).
//
// Streams model CUDA's ordering where it can block: each stream, and the
// legacy default stream (NULL), is a queue worked by its own thread. Async
// copies and the work other fake libraries enqueue
// (gnnmpiFakeStreamEnqueue: the fake NCCL's collectives, which block until
// the peers post theirs) run in order on it; cuStreamSynchronize waits
// for it and cuStreamQuery reports CUDA_ERROR_NOT_READY until it drains.
// As with the legacy default stream, synchronous copies and work on NULL
// first wait for NULL and every stream created without
// CU_STREAM_NON_BLOCKING. Kernels run when launched, after their stream
// drains. A module is a shared object built by the fake NVRTC, named by
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
// Device memory is GNNMPI_FAKE_CUDA_MEMORY bytes (default 16 GiB), one
// pool the devices share: cuMemAlloc_v2 beyond it is
// CUDA_ERROR_OUT_OF_MEMORY, and cuMemGetInfo_v2 reports it and what is not
// allocated.
//
// GNNMPI_FAKE_CC sets the devices' compute capability ("8.9"; default
// 8.0) and GNNMPI_FAKE_DRIVER the driver's CUDA version (cuDriverGetVersion's
// number, e.g. 11080; default 12040).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void (*launcher)(unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void **);

enum {
	OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
	INVALID_IMAGE = 200, INVALID_CONTEXT = 201, NO_BINARY_FOR_GPU = 209, INVALID_PTX = 218,
	UNSUPPORTED_PTX_VERSION = 222, INVALID_HANDLE = 400, NOT_FOUND = 500, NOT_READY = 600,
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

#define MAX_DEVICES 8
static int initialized, ndevices = 1;
static int ctx_token[MAX_DEVICES]; // device d's primary context is &ctx_token[d]
static __thread void *current;     // the calling thread's current context

#define NEED_INIT if (!initialized) return NOT_INITIALIZED
#define CHECK_DEVICE(d) if ((d) < 0 || (d) >= ndevices) return INVALID_DEVICE

CUresult cuInit(unsigned flags) {
	const char *e = getenv("GNNMPI_FAKE_CUDA_DEVICES");
	if (e != NULL && atoi(e) >= 1) ndevices = atoi(e) > MAX_DEVICES ? MAX_DEVICES : atoi(e);
	initialized = flags == 0;
	return flags == 0 ? OK : INVALID_VALUE;
}
CUresult cuDriverGetVersion(int *v) { *v = driver_version(); return OK; }
CUresult cuDeviceGetCount(int *n) { NEED_INIT; *n = ndevices; return OK; }
CUresult cuDeviceGet(int *d, int ordinal) { NEED_INIT; CHECK_DEVICE(ordinal); *d = ordinal; return OK; }
CUresult cuDeviceGetName(char *name, int len, int d) {
	NEED_INIT;
	CHECK_DEVICE(d);
	snprintf(name, len, "gnnmpi fake device");
	return OK;
}
CUresult cuDeviceGetPCIBusId(char *id, int len, int d) {
	NEED_INIT;
	CHECK_DEVICE(d);
	snprintf(id, len, "0000:%02x:00.0", d + 1);
	return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
	NEED_INIT;
	CHECK_DEVICE(d);
	switch (attr) {
	case 75: *v = capability() / 10; return OK; // compute capability major
	case 76: *v = capability() % 10; return OK; // minor
	}
	return INVALID_VALUE;
}
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { NEED_INIT; CHECK_DEVICE(d); *c = &ctx_token[d]; return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { CHECK_DEVICE(d); return OK; }
// ctxDevice returns the device of context c, or -1.
static int ctxDevice(const void *c) {
	for (int d = 0; d < ndevices; d++)
		if (c == &ctx_token[d]) return d;
	return -1;
}
CUresult cuCtxSetCurrent(void *c) {
	if (c != NULL && ctxDevice(c) < 0) return INVALID_HANDLE;
	current = c;
	return OK;
}
CUresult cuCtxGetCurrent(void **c) { NEED_INIT; *c = current; return OK; }
CUresult cuCtxGetDevice(int *d) {
	NEED_INIT;
	if (current == NULL) return INVALID_CONTEXT;
	*d = ctxDevice(current);
	return OK;
}
CUresult cuCtxCreate_v2(void **c, unsigned flags, int d) { (void)flags; return cuDevicePrimaryCtxRetain(c, d); }
CUresult cuCtxDestroy_v2(void *c) { return ctxDevice(c) >= 0 ? OK : INVALID_HANDLE; }

// A stream is a queue of work run in order by its own thread.
typedef struct work {
	void (*fn)(void *);
	void *arg;
	struct work *next;
} work;
typedef struct stream {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	work *head, *tail;
	int busy;        // a work item is running
	int nonblocking; // CU_STREAM_NON_BLOCKING: no implicit wait with NULL
	int device;
	int quit;
	pthread_t thread;
	struct stream *next; // all streams, for the legacy stream's waits
} stream;

static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;
static stream *streams;   // created streams
static stream *legacy;    // the NULL stream, made on first use

static void *worker(void *arg) {
	stream *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->head == NULL && !s->quit) pthread_cond_wait(&s->cv, &s->mu);
		if (s->head == NULL) break;
		work *w = s->head;
		s->head = w->next;
		if (s->head == NULL) s->tail = NULL;
		s->busy = 1;
		pthread_mutex_unlock(&s->mu);
		w->fn(w->arg);
		free(w);
		pthread_mutex_lock(&s->mu);
		s->busy = 0;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static stream *newStream(int nonblocking, int device) {
	stream *s = calloc(1, sizeof *s);
	if (s == NULL) return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->nonblocking = nonblocking;
	s->device = device;
	if (pthread_create(&s->thread, NULL, worker, s) != 0) {
		free(s);
		return NULL;
	}
	return s;
}

// streamOf maps a handle to its stream; NULL is the legacy stream.
static stream *streamOf(void *h) {
	if (h != NULL) return h;
	pthread_mutex_lock(&streams_mu);
	if (legacy == NULL) legacy = newStream(0, ctxDevice(current));
	pthread_mutex_unlock(&streams_mu);
	return legacy;
}

static int pending(stream *s) {
	pthread_mutex_lock(&s->mu);
	int p = s->head != NULL || s->busy;
	pthread_mutex_unlock(&s->mu);
	return p;
}

static void drain(stream *s) {
	pthread_mutex_lock(&s->mu);
	while (s->head != NULL || s->busy) pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

// waitFor waits until the work before now on h has run: for the legacy
// stream, also that of every blocking stream.
static void waitFor(void *h) {
	drain(streamOf(h));
	if (h != NULL) return;
	pthread_mutex_lock(&streams_mu);
	for (stream *s = streams; s != NULL; s = s->next)
		if (!s->nonblocking) drain(s);
	pthread_mutex_unlock(&streams_mu);
}

// gnnmpiFakeStreamEnqueue queues fn(arg) on stream h (NULL: the legacy
// stream), after the work already there; the fake NCCL enqueues its
// collectives with it. It returns INVALID_HANDLE when h belongs to
// another device than device (-1: any).
CUresult gnnmpiFakeStreamEnqueue(void *h, int device, void (*fn)(void *), void *arg) {
	stream *s = streamOf(h);
	if (s == NULL) return OUT_OF_MEMORY;
	if (device >= 0 && h != NULL && s->device != device) return INVALID_HANDLE;
	work *w = malloc(sizeof *w);
	if (w == NULL) return OUT_OF_MEMORY;
	*w = (work){fn, arg, NULL};
	pthread_mutex_lock(&s->mu);
	if (s->tail != NULL) s->tail->next = w;
	else s->head = w;
	s->tail = w;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return OK;
}

typedef struct { void *dst; const void *src; size_t n; } copyArgs;
static void runCopy(void *a) {
	copyArgs *c = a;
	memcpy(c->dst, c->src, c->n);
	free(c);
}
static CUresult copyAsync(void *dst, const void *src, size_t n, void *s) {
	copyArgs *c = malloc(sizeof *c);
	if (c == NULL) return OUT_OF_MEMORY;
	*c = (copyArgs){dst, src, n};
	CUresult r = gnnmpiFakeStreamEnqueue(s, -1, runCopy, c);
	if (r != OK) free(c);
	return r;
}

// The device memory's size and what is allocated of it; each allocation
// keeps its size in a header of ALLOC_HEADER bytes before the pointer.
enum { ALLOC_HEADER = 256 };
static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static size_t mem_used;
static size_t memTotal(void) {
	const char *s = getenv("GNNMPI_FAKE_CUDA_MEMORY");
	unsigned long long n;
	if (s == NULL || *s == 0) return (size_t)16 << 30;
	if (sscanf(s, "%llu", &n) != 1) {
		fprintf(stderr, "fake libcuda: bad GNNMPI_FAKE_CUDA_MEMORY=%s\n", s);
		abort();
	}
	return (size_t)n;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	NEED_INIT;
	if (n == 0) return INVALID_VALUE;
	pthread_mutex_lock(&mem_mu);
	size_t total = memTotal();
	int over = mem_used > total || n > total - mem_used; // the size may be lowered below what is in use
	if (!over) mem_used += n;
	pthread_mutex_unlock(&mem_mu);
	if (over) return OUT_OF_MEMORY;
	char *m = malloc(ALLOC_HEADER + n);
	if (m == NULL) {
		pthread_mutex_lock(&mem_mu);
		mem_used -= n;
		pthread_mutex_unlock(&mem_mu);
		return OUT_OF_MEMORY;
	}
	memcpy(m, &n, sizeof n);
	memset(m + ALLOC_HEADER, 0xA5, n); // device memory is not zeroed: make stale reads visible
	*p = (CUdeviceptr)(size_t)(m + ALLOC_HEADER);
	return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	if (p == 0) return OK;
	char *m = (char *)(size_t)p - ALLOC_HEADER;
	size_t n;
	memcpy(&n, m, sizeof n);
	pthread_mutex_lock(&mem_mu);
	mem_used -= n;
	pthread_mutex_unlock(&mem_mu);
	free(m);
	return OK;
}
CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
	NEED_INIT;
	pthread_mutex_lock(&mem_mu);
	*total = memTotal();
	*free_ = mem_used > *total ? 0 : *total - mem_used;
	pthread_mutex_unlock(&mem_mu);
	return OK;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { waitFor(NULL); memcpy((void *)(size_t)dst, src, n); return OK; }
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { waitFor(NULL); memcpy(dst, (const void *)(size_t)src, n); return OK; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) { return copyAsync((void *)(size_t)dst, src, n, s); }
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) { return copyAsync(dst, (const void *)(size_t)src, n, s); }
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

CUresult cuStreamCreate(void **h, unsigned flags) {
	NEED_INIT;
	if (flags & ~1u) return INVALID_VALUE;
	if (current == NULL) return INVALID_CONTEXT;
	stream *s = newStream(flags & 1, ctxDevice(current));
	if (s == NULL) return OUT_OF_MEMORY;
	pthread_mutex_lock(&streams_mu);
	s->next = streams;
	streams = s;
	pthread_mutex_unlock(&streams_mu);
	*h = s;
	return OK;
}
CUresult cuStreamSynchronize(void *s) { waitFor(s); return OK; }
CUresult cuStreamQuery(void *h) { return pending(streamOf(h)) ? NOT_READY : OK; }
CUresult cuStreamDestroy_v2(void *h) {
	stream *s = h, **p;
	pthread_mutex_lock(&streams_mu);
	for (p = &streams; *p != NULL && *p != s; p = &(*p)->next) {
	}
	if (*p == NULL) {
		pthread_mutex_unlock(&streams_mu);
		return INVALID_HANDLE;
	}
	*p = s->next;
	pthread_mutex_unlock(&streams_mu);
	// As in CUDA, the work already queued runs before the stream goes.
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	free(s);
	return OK;
}

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
	if (f == NULL) return INVALID_HANDLE;
	if (shared != 0 || extra != NULL) return INVALID_VALUE; // the shim has no shared memory
	if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 || (unsigned long)bx * by * bz > 1024) return INVALID_VALUE;
	waitFor(s);
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
	case NOT_READY: *s = "CUDA_ERROR_NOT_READY"; return OK;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
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
