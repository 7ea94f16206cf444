/*
 * A fake NCCL over MPI, for testing package nccl without a GPU: the tests
 * build it into libnccl.so.2 and point GNNMPI_NCCL_LIBDIR at it. It exports
 * the functions gnnmpi's NCCL leaf (nccl/internal/nccldl) looks up, with NCCL's
 * signatures and enum values, and implements them with MPI on host memory:
 * "device" pointers are host pointers. The process must have initialised
 * MPI with MPI_THREAD_MULTIPLE (gnnmpi's default).
 *
 * Where the process has loaded the fake libcuda (gpu/cuda/testdata, found
 * among the loaded objects as libcuda.so.1), the fake models what the real NCCL does
 * that can go wrong on a GPU:
 *   - ncclCommInitRank takes the device of the calling thread's current
 *     context (device 0 when none is current, as the CUDA runtime does),
 *     and refuses, with ncclInvalidUsage and "Duplicate GPU detected", a
 *     communicator with two ranks on one device of one host;
 *   - a collective, or a group's sends and receives, is enqueued on its
 *     stream (gnnmpiFakeStreamEnqueue) and returns at once; on the stream
 *     it blocks until every rank of the communicator has posted it, so
 *     that work queued behind it on the stream waits too. Two
 *     communicators whose calls sit on one stream in different orders on
 *     different ranks deadlock as on a GPU: after GNNMPI_FAKE_NCCL_TIMEOUT
 *     seconds (default 30) of waiting the fake reports the stuck call and
 *     aborts the job.
 * Without the fake libcuda (package nccl's HostMemory) every call
 * completes before it returns, and the stream must be 0.
 *
 * ncclCommInitRank finds its peers by a rendezvous at the id's creator,
 * whose MPI_COMM_WORLD rank the id holds, on MPI_COMM_WORLD with a tag near
 * MPI_TAG_UB derived from the id; the creator must itself join the
 * communicator. The ranks then build it with MPI_Comm_create_group, which is
 * collective over the members only, so disjoint communicators can be created
 * at the same time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef enum {
	ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2, ncclInternalError = 3,
	ncclInvalidArgument = 4, ncclInvalidUsage = 5, ncclRemoteError = 6, ncclInProgress = 7
} ncclResult_t;

typedef struct { char internal[128]; } ncclUniqueId;

struct fakeComm {
	MPI_Comm comm;
	int rank, size;
	int device; /* the CUDA device, or -1 without the fake libcuda */
	unsigned long ops; /* calls enqueued so far, for the deadlock report */
};

/* The fake libcuda's entry points, when the process has loaded it. */
static struct {
	int looked, present;
	int (*ctxGetCurrent)(void **);
	int (*ctxGetDevice)(int *);
	int (*enqueue)(void *, int, void (*)(void *), void *);
} cuda;

/* loadedCUDA finds a loaded object named libcuda.so.1 (by any path). */
static int loadedCUDA(struct dl_phdr_info *info, size_t size, void *data) {
	(void)size;
	const char *n = info->dlpi_name, *base = strrchr(n, '/');
	if (strcmp(base != NULL ? base + 1 : n, "libcuda.so.1") != 0) return 0;
	*(void **)data = dlopen(n, RTLD_NOW | RTLD_NOLOAD);
	return *(void **)data != NULL;
}

static void findCUDA(void) {
	if (cuda.looked) return;
	cuda.looked = 1;
	void *h = NULL;
	dl_iterate_phdr(loadedCUDA, &h);
	if (h == NULL) return;
	cuda.ctxGetCurrent = (int (*)(void **))dlsym(h, "cuCtxGetCurrent");
	cuda.ctxGetDevice = (int (*)(int *))dlsym(h, "cuCtxGetDevice");
	cuda.enqueue = (int (*)(void *, int, void (*)(void *), void *))dlsym(h, "gnnmpiFakeStreamEnqueue");
	cuda.present = cuda.ctxGetCurrent != NULL && cuda.ctxGetDevice != NULL && cuda.enqueue != NULL;
}

/* currentDevice returns the calling thread's device: that of its current
 * context, or 0 (the CUDA runtime's default) when none is current. */
static int currentDevice(void) {
	void *ctx = NULL;
	int d = 0;
	if (cuda.ctxGetCurrent(&ctx) != 0 || ctx == NULL) return 0;
	if (cuda.ctxGetDevice(&d) != 0) return 0;
	return d;
}

/* timeoutSeconds is how long a call waits for its peers before the fake
 * reports a deadlock. */
static double timeoutSeconds(void) {
	const char *e = getenv("GNNMPI_FAKE_NCCL_TIMEOUT");
	double t = e != NULL ? atof(e) : 0;
	return t > 0 ? t : 30;
}

static double nowSeconds(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* waitAll waits for reqs, reporting a deadlock and aborting the job when
 * they do not complete in timeoutSeconds. */
static int waitAll(int n, MPI_Request *reqs, const char *what, struct fakeComm *c, unsigned long op) {
	double deadline = nowSeconds() + timeoutSeconds();
	int done = 0;
	struct timespec pause = {0, 50000};
	for (;;) {
		int rc = MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS || done) return rc;
		if (nowSeconds() > deadline) {
			fprintf(stderr, "fake NCCL: deadlock: %s (call %lu) on rank %d of a communicator of %d ranks (device %d) "
			        "has waited %.0f s for its peers: calls on communicators sharing a stream were posted in "
			        "different orders on different ranks, or a rank never made the call (a real NCCL hangs here)\n",
			        what, op, c->rank, c->size, c->device, timeoutSeconds());
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
		nanosleep(&pause, NULL);
	}
}
typedef struct fakeComm *ncclComm_t;
typedef void *cudaStream_t;

#define FAKE_MAGIC 0x46414b45 /* "FAKE" */

struct idLayout {
	uint32_t magic;
	int32_t root; /* MPI_COMM_WORLD rank of the creator */
	uint64_t nonce[15];
};

int ncclGetVersion(int *v) { *v = 29999; return ncclSuccess; }

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (fake NCCL)";
	case ncclSystemError: return "unhandled system error (fake NCCL: an MPI call failed)";
	case ncclInternalError: return "internal error (fake NCCL)";
	case ncclInvalidArgument: return "invalid argument (fake NCCL)";
	case ncclInvalidUsage: return "invalid usage (fake NCCL)";
	case ncclRemoteError: return "remote process exited or there was a network error (fake NCCL)";
	case ncclInProgress: return "NCCL operation in progress (fake NCCL)";
	}
	return "unknown result code (fake NCCL)";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	struct idLayout l;
	int wr;
	FILE *f;
	memset(&l, 0, sizeof l);
	if (MPI_Comm_rank(MPI_COMM_WORLD, &wr) != MPI_SUCCESS) return ncclSystemError;
	f = fopen("/dev/urandom", "rb");
	if (f == NULL || fread(l.nonce, sizeof l.nonce, 1, f) != 1) {
		if (f) fclose(f);
		return ncclSystemError;
	}
	fclose(f);
	l.magic = FAKE_MAGIC;
	l.root = wr;
	memcpy(id->internal, &l, sizeof l);
	return ncclSuccess;
}

/* idTag maps an id to a tag in the top 2^16 tags below MPI_TAG_UB. */
static int idTag(const ncclUniqueId *id) {
	uint64_t h = 1469598103934665603ULL;
	int *ub, flag = 0, top = 32767;
	for (size_t i = 0; i < sizeof id->internal; i++) h = (h ^ (unsigned char)id->internal[i]) * 1099511628211ULL;
	if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag) == MPI_SUCCESS && flag) top = *ub;
	int span = top / 2 < 65536 ? top / 2 : 65536;
	return top - (int)(h % (uint64_t)span);
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int n, ncclUniqueId id, int rank) {
	struct idLayout l;
	int wr, tag, *members, me[2];
	MPI_Group wg, g;
	MPI_Comm c;
	memcpy(&l, id.internal, sizeof l);
	if (l.magic != FAKE_MAGIC || n < 1 || rank < 0 || rank >= n) return ncclInvalidArgument;
	if (MPI_Comm_rank(MPI_COMM_WORLD, &wr) != MPI_SUCCESS) return ncclSystemError;
	tag = idTag(&id);
	members = calloc((size_t)n, sizeof *members);
	if (members == NULL) return ncclSystemError;
	if (wr == l.root) {
		members[rank] = wr;
		for (int i = 1; i < n; i++) {
			if (MPI_Recv(me, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
			    me[0] < 0 || me[0] >= n) {
				free(members);
				return ncclSystemError;
			}
			members[me[0]] = me[1];
		}
		for (int i = 0; i < n; i++)
			if (i != rank && MPI_Send(members, n, MPI_INT, members[i], tag, MPI_COMM_WORLD) != MPI_SUCCESS) {
				free(members);
				return ncclSystemError;
			}
	} else {
		me[0] = rank;
		me[1] = wr;
		if (MPI_Send(me, 2, MPI_INT, l.root, tag, MPI_COMM_WORLD) != MPI_SUCCESS ||
		    MPI_Recv(members, n, MPI_INT, l.root, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
			free(members);
			return ncclSystemError;
		}
	}
	int rc = MPI_Comm_group(MPI_COMM_WORLD, &wg);
	if (rc == MPI_SUCCESS) rc = MPI_Group_incl(wg, n, members, &g);
	free(members);
	if (rc != MPI_SUCCESS) return ncclSystemError;
	rc = MPI_Comm_create_group(MPI_COMM_WORLD, g, tag, &c);
	MPI_Group_free(&g);
	MPI_Group_free(&wg);
	if (rc != MPI_SUCCESS) return ncclSystemError;
	struct fakeComm *fc = malloc(sizeof *fc);
	if (fc == NULL) return ncclSystemError;
	fc->comm = c;
	fc->ops = 0;
	MPI_Comm_rank(c, &fc->rank);
	MPI_Comm_size(c, &fc->size);
	if (fc->size != n || fc->rank != rank) {
		fprintf(stderr, "fake NCCL: communicator of size %d rank %d, want %d and %d\n", fc->size, fc->rank, n, rank);
		MPI_Comm_free(&fc->comm);
		free(fc);
		return ncclInternalError;
	}
	findCUDA();
	fc->device = cuda.present ? currentDevice() : -1;
	/* Like NCCL, refuse two ranks on one device of one host. */
	char host[MPI_MAX_PROCESSOR_NAME] = {0};
	int hl = 0;
	MPI_Get_processor_name(host, &hl);
	long mine[2] = {0, fc->device}, *all = calloc((size_t)n, sizeof mine);
	if (all == NULL) return ncclSystemError;
	for (int i = 0; i < hl; i++) mine[0] = mine[0] * 131 + (unsigned char)host[i];
	rc = MPI_Allgather(mine, 2, MPI_LONG, all, 2, MPI_LONG, c);
	for (int q = 0; rc == MPI_SUCCESS && fc->device >= 0 && q < n; q++)
		if (q != rank && all[2 * q] == mine[0] && all[2 * q + 1] == mine[1]) {
			fprintf(stderr, "fake NCCL: rank %d: Duplicate GPU detected : rank %d and rank %d both on CUDA device %d\n",
			        rank, rank < q ? rank : q, rank < q ? q : rank, fc->device);
			free(all);
			MPI_Comm_free(&fc->comm);
			free(fc);
			return ncclInvalidUsage;
		}
	free(all);
	if (rc != MPI_SUCCESS) {
		MPI_Comm_free(&fc->comm);
		free(fc);
		return ncclSystemError;
	}
	*out = fc;
	return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
	if (c == NULL) return ncclInvalidArgument;
	int rc = MPI_Comm_free(&c->comm);
	free(c);
	return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclCommAbort(ncclComm_t c) { return ncclCommDestroy(c); }

ncclResult_t ncclCommCount(const ncclComm_t c, int *n) { *n = c->size; return ncclSuccess; }

ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) { *r = c->rank; return ncclSuccess; }

/* mpiType maps ncclDataType_t to an MPI type and its size; 16-bit floats
 * travel as 16-bit words and cannot be reduced. */
static int mpiType(int t, MPI_Datatype *mt, size_t *size, int reduce) {
	switch (t) {
	case 0: *mt = MPI_INT8_T; *size = 1; return 1;
	case 1: *mt = MPI_UINT8_T; *size = 1; return 1;
	case 2: *mt = MPI_INT32_T; *size = 4; return 1;
	case 3: *mt = MPI_UINT32_T; *size = 4; return 1;
	case 4: *mt = MPI_INT64_T; *size = 8; return 1;
	case 5: *mt = MPI_UINT64_T; *size = 8; return 1;
	case 6: case 9: *mt = MPI_UINT16_T; *size = 2; return !reduce;
	case 7: *mt = MPI_FLOAT; *size = 4; return 1;
	case 8: *mt = MPI_DOUBLE; *size = 8; return 1;
	}
	return 0;
}

static int mpiOp(int op, MPI_Op *mo) {
	switch (op) {
	case 0: *mo = MPI_SUM; return 1;
	case 1: *mo = MPI_PROD; return 1;
	case 2: *mo = MPI_MAX; return 1;
	case 3: *mo = MPI_MIN; return 1;
	}
	return 0;
}

static ncclResult_t mpiResult(int rc) { return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError; }

/* A point-to-point call, queued between GroupStart and GroupEnd. */
struct p2p {
	int send;
	void *buf;
	int n, peer;
	MPI_Datatype t;
	struct fakeComm *c;
	cudaStream_t st;
};

enum { opAllReduce, opReduceScatter, opAllGather, opBroadcast, opGroup };

/* An op is one NCCL call, run by runOp on the caller's thread or, with
 * the fake libcuda, on its stream. */
struct op {
	int kind;
	const char *name;
	const void *s;
	void *r;
	int n, root;
	size_t es;
	MPI_Datatype t;
	MPI_Op o;
	struct fakeComm *c;
	unsigned long seq;
	struct p2p *p2ps; /* opGroup: owned */
	int np2p;
};

/* runOp starts the call as nonblocking MPI and waits for it (waitAll). */
static int runOp(struct op *o) {
	MPI_Request one, *reqs = &one;
	void *tmp = NULL;
	int k = 0, rc = MPI_SUCCESS;
	struct fakeComm *c = o->c;
	switch (o->kind) {
	case opAllReduce:
		rc = MPI_Iallreduce(o->s == o->r ? MPI_IN_PLACE : o->s, o->r, o->n, o->t, o->o, c->comm, &one);
		k = 1;
		break;
	case opReduceScatter:
		/* NCCL's in place (r inside s) has no MPI equivalent: reduce a copy. */
		tmp = malloc((size_t)o->n * o->es * (size_t)c->size);
		if (tmp == NULL) return MPI_ERR_NO_MEM;
		memcpy(tmp, o->s, (size_t)o->n * o->es * (size_t)c->size);
		rc = MPI_Ireduce_scatter_block(tmp, o->r, o->n, o->t, o->o, c->comm, &one);
		k = 1;
		break;
	case opAllGather: {
		const void *in = (const char *)o->s == (const char *)o->r + (size_t)c->rank * (size_t)o->n * o->es ? MPI_IN_PLACE : o->s;
		rc = MPI_Iallgather(in, o->n, o->t, o->r, o->n, o->t, c->comm, &one);
		k = 1;
		break;
	}
	case opBroadcast:
		if (c->rank == o->root && o->s != o->r) memmove(o->r, o->s, (size_t)o->n * o->es);
		rc = MPI_Ibcast(o->r, o->n, o->t, o->root, c->comm, &one);
		k = 1;
		break;
	case opGroup:
		reqs = malloc((size_t)(o->np2p > 0 ? o->np2p : 1) * sizeof *reqs);
		if (reqs == NULL) return MPI_ERR_NO_MEM;
		/* Receives first, so that every send finds its receive posted. */
		for (int pass = 0; pass < 2 && rc == MPI_SUCCESS; pass++)
			for (int i = 0; i < o->np2p && rc == MPI_SUCCESS; i++) {
				struct p2p *q = &o->p2ps[i];
				if (q->send != pass) continue;
				rc = q->send ? MPI_Isend(q->buf, q->n, q->t, q->peer, 0, q->c->comm, &reqs[k])
				             : MPI_Irecv(q->buf, q->n, q->t, q->peer, 0, q->c->comm, &reqs[k]);
				if (rc == MPI_SUCCESS) k++;
			}
		break;
	}
	if (k > 0) {
		int wrc = waitAll(k, reqs, o->name, c, o->seq);
		if (rc == MPI_SUCCESS) rc = wrc;
	}
	if (reqs != &one) free(reqs);
	free(tmp);
	return rc;
}

static void freeOp(struct op *o) {
	free(o->p2ps);
	free(o);
}

/* streamRun is an op's work on a stream; an MPI failure there has no
 * caller to return to, so it ends the job. */
static void streamRun(void *a) {
	struct op *o = a;
	if (runOp(o) != MPI_SUCCESS) {
		fprintf(stderr, "fake NCCL: %s (call %lu) on rank %d failed in MPI\n", o->name, o->seq, o->c->rank);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	freeOp(o);
}

/* post runs o (a heap copy, which it frees) before returning or, with the
 * fake libcuda, enqueues it on stream st and returns at once. */
static ncclResult_t post(struct op *o, cudaStream_t st) {
	o->seq = ++o->c->ops;
	if (cuda.present) {
		if (cuda.enqueue(st, o->c->device, streamRun, o) != 0) {
			freeOp(o);
			return ncclUnhandledCudaError;
		}
		return ncclSuccess;
	}
	if (st != NULL) {
		freeOp(o);
		return ncclInvalidArgument; /* no streams without CUDA */
	}
	int rc = runOp(o);
	freeOp(o);
	return mpiResult(rc);
}

static ncclResult_t postNew(struct op o, cudaStream_t st) {
	struct op *h = malloc(sizeof *h);
	if (h == NULL) return ncclSystemError;
	*h = o;
	return post(h, st);
}

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	MPI_Op mo;
	size_t es;
	if (!mpiType(t, &mt, &es, 1) || !mpiOp(op, &mo) || n > INT32_MAX) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	return postNew((struct op){.kind = opAllReduce, .name = "ncclAllReduce", .s = s, .r = r, .n = (int)n, .es = es, .t = mt, .o = mo, .c = c}, st);
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	MPI_Op mo;
	size_t es;
	if (!mpiType(t, &mt, &es, 1) || !mpiOp(op, &mo) || n > INT32_MAX) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	return postNew((struct op){.kind = opReduceScatter, .name = "ncclReduceScatter", .s = s, .r = r, .n = (int)n, .es = es, .t = mt, .o = mo, .c = c}, st);
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	size_t es;
	if (!mpiType(t, &mt, &es, 0) || n > INT32_MAX) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	return postNew((struct op){.kind = opAllGather, .name = "ncclAllGather", .s = s, .r = r, .n = (int)n, .es = es, .t = mt, .c = c}, st);
}

ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	size_t es;
	if (!mpiType(t, &mt, &es, 0) || n > INT32_MAX || root < 0 || root >= c->size) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	return postNew((struct op){.kind = opBroadcast, .name = "ncclBroadcast", .s = s, .r = r, .n = (int)n, .root = root, .es = es, .t = mt, .c = c}, st);
}

/* Point-to-point calls between GroupStart and GroupEnd are queued per
 * thread and posted as one op at the outermost GroupEnd, on the stream of
 * the first; outside a group a call is a group of one. */
static __thread int groupDepth;
static __thread struct p2p *queue;
static __thread int queued, queueCap;

ncclResult_t ncclGroupStart(void) { groupDepth++; return ncclSuccess; }

static ncclResult_t postGroup(struct p2p *q, int n) {
	return postNew((struct op){.kind = opGroup, .name = "ncclSend/ncclRecv group", .c = q[0].c, .p2ps = q, .np2p = n}, q[0].st);
}

static ncclResult_t p2p(int send, void *b, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	size_t es;
	if (!mpiType(t, &mt, &es, 0) || n > INT32_MAX || peer < 0 || peer >= c->size) return ncclInvalidArgument;
	struct p2p one = {send, b, (int)n, peer, mt, c, st};
	if (groupDepth == 0) {
		struct p2p *q = malloc(sizeof *q);
		if (q == NULL) return ncclSystemError;
		*q = one;
		return postGroup(q, 1);
	}
	if (queued == queueCap) {
		int cap = queueCap ? 2 * queueCap : 16;
		struct p2p *q = realloc(queue, (size_t)cap * sizeof *q);
		if (q == NULL) return ncclSystemError;
		queue = q;
		queueCap = cap;
	}
	queue[queued++] = one;
	return ncclSuccess;
}

ncclResult_t ncclSend(const void *b, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st) {
	return p2p(1, (void *)b, n, t, peer, c, st);
}

ncclResult_t ncclRecv(void *b, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st) {
	return p2p(0, b, n, t, peer, c, st);
}

ncclResult_t ncclGroupEnd(void) {
	if (groupDepth == 0) return ncclInvalidUsage;
	if (--groupDepth > 0 || queued == 0) return ncclSuccess;
	struct p2p *q = malloc((size_t)queued * sizeof *q);
	if (q == NULL) return ncclSystemError;
	memcpy(q, queue, (size_t)queued * sizeof *q);
	int n = queued;
	queued = 0;
	return postGroup(q, n);
}
