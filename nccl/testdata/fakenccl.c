/*
 * A fake NCCL over MPI, for testing package nccl without a GPU: the tests
 * build it into libnccl.so.2 and point GNNMPI_NCCL_LIBDIR at it. It exports
 * the functions gnnmpi's NCCL leaf (nccl/internal/nccldl) looks up, with NCCL's
 * signatures and enum values, and implements them with MPI on host memory:
 * "device" pointers are host pointers and streams are ignored (every call
 * completes before it returns). The process must have initialised MPI with
 * MPI_THREAD_MULTIPLE (gnnmpi's default).
 *
 * ncclCommInitRank finds its peers by a rendezvous at the id's creator,
 * whose MPI_COMM_WORLD rank the id holds, on MPI_COMM_WORLD with a tag near
 * MPI_TAG_UB derived from the id; the creator must itself join the
 * communicator. The ranks then build it with MPI_Comm_create_group, which is
 * collective over the members only, so disjoint communicators can be created
 * at the same time.
 */
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
};
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
	MPI_Comm_rank(c, &fc->rank);
	MPI_Comm_size(c, &fc->size);
	if (fc->size != n || fc->rank != rank) {
		fprintf(stderr, "fake NCCL: communicator of size %d rank %d, want %d and %d\n", fc->size, fc->rank, n, rank);
		MPI_Comm_free(&fc->comm);
		free(fc);
		return ncclInternalError;
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

ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	MPI_Op mo;
	size_t es;
	(void)st;
	if (!mpiType(t, &mt, &es, 1) || !mpiOp(op, &mo) || n > INT32_MAX) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	return mpiResult(MPI_Allreduce(s == r ? MPI_IN_PLACE : s, r, (int)n, mt, mo, c->comm));
}

ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	MPI_Op mo;
	size_t es;
	(void)st;
	if (!mpiType(t, &mt, &es, 1) || !mpiOp(op, &mo) || n > INT32_MAX) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	/* NCCL's in place (r inside s) has no MPI equivalent: reduce a copy. */
	void *tmp = malloc(n * es * (size_t)c->size);
	if (tmp == NULL) return ncclSystemError;
	memcpy(tmp, s, n * es * (size_t)c->size);
	int rc = MPI_Reduce_scatter_block(tmp, r, (int)n, mt, mo, c->comm);
	free(tmp);
	return mpiResult(rc);
}

ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	size_t es;
	(void)st;
	if (!mpiType(t, &mt, &es, 0) || n > INT32_MAX) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	const void *in = (const char *)s == (const char *)r + (size_t)c->rank * n * es ? MPI_IN_PLACE : s;
	return mpiResult(MPI_Allgather(in, (int)n, mt, r, (int)n, mt, c->comm));
}

ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, cudaStream_t st) {
	MPI_Datatype mt;
	size_t es;
	(void)st;
	if (!mpiType(t, &mt, &es, 0) || n > INT32_MAX || root < 0 || root >= c->size) return ncclInvalidArgument;
	if (n == 0) return ncclSuccess;
	if (c->rank == root && s != r) memmove(r, s, n * es);
	return mpiResult(MPI_Bcast(r, (int)n, mt, root, c->comm));
}

/* Point-to-point calls between GroupStart and GroupEnd are queued per
 * thread and run as nonblocking MPI calls at the outermost GroupEnd. */
struct p2p {
	int send;
	void *buf;
	int n, peer;
	MPI_Datatype t;
	MPI_Comm comm;
};

static __thread int groupDepth;
static __thread struct p2p *queue;
static __thread int queued, queueCap;

ncclResult_t ncclGroupStart(void) { groupDepth++; return ncclSuccess; }

static ncclResult_t p2p(int send, void *b, size_t n, int t, int peer, ncclComm_t c) {
	MPI_Datatype mt;
	size_t es;
	if (!mpiType(t, &mt, &es, 0) || n > INT32_MAX || peer < 0 || peer >= c->size) return ncclInvalidArgument;
	if (groupDepth == 0) {
		if (send) return mpiResult(MPI_Send(b, (int)n, mt, peer, 0, c->comm));
		return mpiResult(MPI_Recv(b, (int)n, mt, peer, 0, c->comm, MPI_STATUS_IGNORE));
	}
	if (queued == queueCap) {
		int cap = queueCap ? 2 * queueCap : 16;
		struct p2p *q = realloc(queue, (size_t)cap * sizeof *q);
		if (q == NULL) return ncclSystemError;
		queue = q;
		queueCap = cap;
	}
	queue[queued++] = (struct p2p){send, b, (int)n, peer, mt, c->comm};
	return ncclSuccess;
}

ncclResult_t ncclSend(const void *b, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st) {
	(void)st;
	return p2p(1, (void *)b, n, t, peer, c);
}

ncclResult_t ncclRecv(void *b, size_t n, int t, int peer, ncclComm_t c, cudaStream_t st) {
	(void)st;
	return p2p(0, b, n, t, peer, c);
}

ncclResult_t ncclGroupEnd(void) {
	if (groupDepth == 0) return ncclInvalidUsage;
	if (--groupDepth > 0 || queued == 0) return ncclSuccess;
	MPI_Request *reqs = malloc((size_t)queued * sizeof *reqs);
	if (reqs == NULL) return ncclSystemError;
	int rc = MPI_SUCCESS, k = 0;
	/* Receives first, so that every send finds its receive posted. */
	for (int pass = 0; pass < 2 && rc == MPI_SUCCESS; pass++)
		for (int i = 0; i < queued && rc == MPI_SUCCESS; i++) {
			struct p2p *q = &queue[i];
			if (q->send != pass) continue;
			rc = q->send ? MPI_Isend(q->buf, q->n, q->t, q->peer, 0, q->comm, &reqs[k])
			             : MPI_Irecv(q->buf, q->n, q->t, q->peer, 0, q->comm, &reqs[k]);
			if (rc == MPI_SUCCESS) k++;
		}
	if (k > 0) {
		int wrc = MPI_Waitall(k, reqs, MPI_STATUSES_IGNORE);
		if (rc == MPI_SUCCESS) rc = wrc;
	}
	free(reqs);
	queued = 0;
	return mpiResult(rc);
}
