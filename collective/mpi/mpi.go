//go:build !nompi

package mpi

/*
#include <mpi.h>
#include <stdlib.h>

static int gm_init(int required, int *provided, int *already) {
	MPI_Initialized(already);
	if (*already) {
		return MPI_Query_thread(provided);
	}
	int rc = MPI_Init_thread(NULL, NULL, required, provided);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static int gm_funneled(void) { return MPI_THREAD_FUNNELED; }
static int gm_multiple(void) { return MPI_THREAD_MULTIPLE; }
static MPI_Comm gm_world(void) { return MPI_COMM_WORLD; }
static MPI_Comm gm_null(void) { return MPI_COMM_NULL; }

static int gm_initialized(void) {
	int flag = 0;
	MPI_Initialized(&flag);
	return flag;
}

static int gm_finalize(void) { return MPI_Finalize(); }
static double gm_wtime(void) { return MPI_Wtime(); }

// gm_type maps a collective.DType to an MPI datatype. Byte is MPI_UINT8_T,
// not MPI_BYTE: MPI defines reductions (MPI_SUM, MPI_MAX, MPI_MIN) only on
// integer and floating types, and MPICH rejects them on MPI_BYTE ("Invalid
// MPI_Op") where Open MPI accepts them.
static MPI_Datatype gm_type(int t) {
	switch (t) {
	case 1: return MPI_UINT8_T;
	case 2: return MPI_INT32_T;
	case 3: return MPI_INT64_T;
	case 4: return MPI_FLOAT;
	case 5: return MPI_DOUBLE;
	case 6: return MPI_UINT16_T;
	default: return MPI_DATATYPE_NULL;
	}
}

static MPI_Op gm_op(int o) {
	switch (o) {
	case 1: return MPI_SUM;
	case 2: return MPI_MAX;
	default: return MPI_MIN;
	}
}

static int gm_rank_size(MPI_Comm c, int *rank, int *size) {
	int rc = MPI_Comm_rank(c, rank);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Comm_size(c, size);
}

// Blocking calls, made by the calling thread under MPI_THREAD_MULTIPLE.

static int gm_barrier(MPI_Comm c) { return MPI_Barrier(c); }

static int gm_bcast(void *b, int n, int t, int root, MPI_Comm c) {
	return MPI_Bcast(b, n, gm_type(t), root, c);
}

static int gm_allreduce(void *s, void *r, int n, int t, int o, MPI_Comm c) {
	if (n > 0 && s == r) s = MPI_IN_PLACE;
	return MPI_Allreduce(s, r, n, gm_type(t), gm_op(o), c);
}

static int gm_allgatherv(void *s, int n, void *r, int *counts, int *displs, int t, MPI_Comm c) {
	return MPI_Allgatherv(s, n, gm_type(t), r, counts, displs, gm_type(t), c);
}

static int gm_alltoallv(void *s, int *sc, int *sd, void *r, int *rc, int *rd, int t, MPI_Comm c) {
	return MPI_Alltoallv(s, sc, sd, gm_type(t), r, rc, rd, gm_type(t), c);
}

static int gm_send(void *b, int n, int t, int dst, int tag, MPI_Comm c) {
	return MPI_Send(b, n, gm_type(t), dst, tag, c);
}

static int gm_recv(void *b, int n, int t, int src, int tag, MPI_Comm c, int *count) {
	MPI_Status st;
	int rc = MPI_Recv(b, n, gm_type(t), src, tag, c, &st);
	if (rc == MPI_SUCCESS) MPI_Get_count(&st, gm_type(t), count);
	return rc;
}

// Nonblocking calls (MPI-3), posted and progressed by the MPI thread under
// MPI_THREAD_FUNNELED: gm_test progresses every pending request, so that
// collectives on different communicators interleave.

static int gm_ibarrier(MPI_Comm c, MPI_Request *req) { return MPI_Ibarrier(c, req); }

static int gm_ibcast(void *b, int n, int t, int root, MPI_Comm c, MPI_Request *req) {
	return MPI_Ibcast(b, n, gm_type(t), root, c, req);
}

static int gm_iallreduce(void *s, void *r, int n, int t, int o, MPI_Comm c, MPI_Request *req) {
	if (n > 0 && s == r) s = MPI_IN_PLACE;
	return MPI_Iallreduce(s, r, n, gm_type(t), gm_op(o), c, req);
}

static int gm_iallgatherv(void *s, int n, void *r, int *counts, int *displs, int t, MPI_Comm c, MPI_Request *req) {
	return MPI_Iallgatherv(s, n, gm_type(t), r, counts, displs, gm_type(t), c, req);
}

static int gm_ialltoallv(void *s, int *sc, int *sd, void *r, int *rc, int *rd, int t, MPI_Comm c, MPI_Request *req) {
	return MPI_Ialltoallv(s, sc, sd, gm_type(t), r, rc, rd, gm_type(t), c, req);
}

static int gm_isend(void *b, int n, int t, int dst, int tag, MPI_Comm c, MPI_Request *req) {
	return MPI_Isend(b, n, gm_type(t), dst, tag, c, req);
}

static int gm_irecv(void *b, int n, int t, int src, int tag, MPI_Comm c, MPI_Request *req) {
	return MPI_Irecv(b, n, gm_type(t), src, tag, c, req);
}

// gm_test tests a request; when a point-to-point request (p2p) completes it
// stores the received count and the status's error code.
static int gm_test(MPI_Request *req, int p2p, int t, int *flag, int *count, int *err) {
	MPI_Status st;
	int rc = MPI_Test(req, flag, &st);
	if (*flag && p2p) {
		*err = st.MPI_ERROR;
		if (rc == MPI_SUCCESS) MPI_Get_count(&st, gm_type(t), count);
	}
	return rc;
}

static int gm_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
	return MPI_Comm_split(c, color < 0 ? MPI_UNDEFINED : color, key, out);
}

static int gm_split_node(MPI_Comm c, int key, MPI_Comm *out) {
	return MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, out);
}

static int gm_free(MPI_Comm *c) { return MPI_Comm_free(c); }

// Shared windows (MPI-3): gm_win_alloc allocates n bytes per rank of the
// node communicator c, segments placed apart (alloc_shared_noncontig), and
// opens a passive epoch on every rank, in which loads and stores are
// ordered by gm_win_sync and a barrier.
static int gm_win_alloc(MPI_Comm c, MPI_Aint n, MPI_Win *win) {
	MPI_Info info;
	int rc = MPI_Info_create(&info);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Info_set(info, "alloc_shared_noncontig", "true");
	void *base;
	rc = MPI_Win_allocate_shared(n, 1, info, c, &base, win);
	MPI_Info_free(&info);
	if (rc != MPI_SUCCESS) return rc;
	MPI_Win_set_errhandler(*win, MPI_ERRORS_RETURN);
	return MPI_Win_lock_all(MPI_MODE_NOCHECK, *win);
}

static int gm_win_query(MPI_Win win, int rank, MPI_Aint *n, void **base) {
	int disp;
	return MPI_Win_shared_query(win, rank, n, &disp, base);
}

static int gm_win_sync(MPI_Win win) { return MPI_Win_sync(win); }

static int gm_win_free(MPI_Win *win) {
	int rc = MPI_Win_unlock_all(*win);
	if (rc != MPI_SUCCESS) return rc;
	return MPI_Win_free(win);
}

// MPICH defines MPI_Comm_c2f as a macro, which cgo cannot call.
static MPI_Fint gm_c2f(MPI_Comm c) { return MPI_Comm_c2f(c); }

static int gm_abort(int code) { return MPI_Abort(MPI_COMM_WORLD, code); }

static void gm_errstr(int rc, char *buf) {
	int len = 0;
	MPI_Error_string(rc, buf, &len);
	buf[len] = 0;
}

static int gm_max_string(void) { return MPI_MAX_ERROR_STRING; }
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"gnnmpi/collective"
)

// Available reports whether this binary was built with MPI.
const Available = true

var (
	initMu   sync.Mutex
	world    *Comm
	finished bool
)

// threading is the mode in use, set by InitThreading.
var threading Threading

// InUse returns the threading mode of the running MPI (0 before Init).
func InUse() Threading {
	initMu.Lock()
	defer initMu.Unlock()
	return threading
}

// Init is InitThreading(Multiple).
func Init() (*Comm, error) { return InitThreading(Multiple) }

// InitThreading initialises MPI on a dedicated thread (MPI_Init_thread)
// asking for the thread level of want, and returns the world communicator.
// When want is Multiple and the library grants less than
// MPI_THREAD_MULTIPLE, it falls back to Funneled (InUse tells); a library
// that grants less than MPI_THREAD_FUNNELED is an error. Calling it again
// returns the same communicator.
func InitThreading(want Threading) (*Comm, error) {
	initMu.Lock()
	defer initMu.Unlock()
	if world != nil {
		return world, nil
	}
	if finished {
		return nil, errors.New("mpi: Init after Finalize")
	}
	required := C.gm_funneled()
	switch want {
	case Multiple:
		required = C.gm_multiple()
	case Funneled:
	default:
		return nil, fmt.Errorf("mpi: invalid threading %v", want)
	}
	var rc, provided, already C.int
	mpiThread = startExecutor(func() {
		rc = C.gm_init(required, &provided, &already)
	})
	if err := check("MPI_Init_thread", rc); err != nil {
		return nil, err
	}
	switch {
	case provided >= C.gm_multiple() && want == Multiple:
		threading = Multiple
	case provided >= C.gm_funneled():
		threading = Funneled
	default:
		return nil, fmt.Errorf("mpi: MPI_Init_thread provided thread level %d, need MPI_THREAD_FUNNELED (%d)", provided, C.gm_funneled())
	}
	var w *Comm
	mpiThread.do(func() {
		if !lifecycle.initialized() {
			return
		}
		rank, size, ok := lifecycle.worldRankSize()
		if !ok {
			return
		}
		w = &Comm{c: C.gm_world(), rank: rank, size: size, world: true}
	})
	if w == nil {
		return nil, errors.New("mpi: MPI reports it is not initialised after MPI_Init_thread")
	}
	world = w
	return world, nil
}

// onMPI runs f where MPI calls are made: on the calling thread under
// Multiple, on the MPI thread (waiting for it) under Funneled.
func onMPI(f func()) {
	if threading == Multiple {
		f()
		return
	}
	mpiThread.do(f)
}

// Finalize shuts MPI down (MPI_Finalize) and stops the MPI thread. Every rank
// must call it once, after its last call.
func Finalize() error {
	initMu.Lock()
	defer initMu.Unlock()
	if world == nil {
		return nil
	}
	mpiThread.stop(lifecycle.finalize)
	world, finished, threading = nil, true, 0
	return nil
}

// mpiLifecycle is how the package asks whether MPI is initialised, reads
// the world's rank and size, finalizes and reads the clock: through gompi
// in the default (Open MPI) build, through the package's own C calls where
// gompi cannot be linked (it hard-codes Open MPI's include and library
// paths, so an MPICH build must not import it).
type mpiLifecycle struct {
	initialized   func() bool
	worldRankSize func() (rank, size int, ok bool)
	finalize      func()
	wtime         func() float64
}

// cLifecycle is mpiLifecycle by the package's own C calls (their C helpers
// live in this file's preamble; the mpich build uses it).
//
//lint:ignore U1000 used by the mpich build (flags_mpich.go)
var cLifecycle = mpiLifecycle{
	initialized: func() bool { return C.gm_initialized() != 0 },
	worldRankSize: func() (int, int, bool) {
		var rank, size C.int
		ok := C.gm_rank_size(C.gm_world(), &rank, &size) == 0
		return int(rank), int(size), ok
	},
	finalize: func() { C.gm_finalize() },
	wtime:    func() float64 { return float64(C.gm_wtime()) },
}

// Wtime returns MPI_Wtime, seconds since an arbitrary time in the past.
func Wtime() float64 {
	var t float64
	onMPI(func() { t = lifecycle.wtime() })
	return t
}

func errString(rc C.int) string {
	buf := (*C.char)(C.malloc(C.size_t(C.gm_max_string() + 1)))
	defer C.free(unsafe.Pointer(buf))
	C.gm_errstr(rc, buf)
	return C.GoString(buf)
}

func check(what string, rc C.int) error {
	if rc == 0 { // MPI_SUCCESS
		return nil
	}
	return fmt.Errorf("mpi: %s: %s (error %d)", what, errString(rc), int(rc))
}

// Comm is an MPI communicator.
type Comm struct {
	c     C.MPI_Comm
	rank  int
	size  int
	world bool
}

var (
	_ collective.Comm         = (*Comm)(nil)
	_ collective.Aborter      = (*Comm)(nil)
	_ collective.Freer        = (*Comm)(nil)
	_ collective.NodeSplitter = (*Comm)(nil)
	_ collective.SharedMemory = (*Comm)(nil)
)

// Rank returns the rank of the calling process in c.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of processes in c.
func (c *Comm) Size() int { return c.size }

// Abort ends every process of the job (MPI_Abort on MPI_COMM_WORLD). Under
// Multiple it is called from the calling thread; under Funneled it is run on
// the MPI thread when that thread is free within a second, and from the
// calling thread otherwise (the MPI thread may be blocked in a Split that
// will never complete). Under MPICH it first waits abortGrace (100 ms), so
// that the launcher forwards what the rank has just written.
func (c *Comm) Abort(code int) {
	time.Sleep(abortGrace)
	if threading == Multiple {
		C.gm_abort(C.int(code))
		panic(fmt.Sprintf("mpi: MPI_Abort(%d) returned", code))
	}
	done := make(chan struct{})
	go func() {
		mpiThread.do(func() { C.gm_abort(C.int(code)) })
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		C.gm_abort(C.int(code))
	}
	// MPI_Abort does not return on success.
	panic(fmt.Sprintf("mpi: MPI_Abort(%d) returned", code))
}

func cint(what string, n int) (C.int, error) {
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("mpi: %s: %d elements exceed MPI's 2³¹−1 count limit; exchange in parts", what, n)
	}
	return C.int(n), nil
}

// counts converts per-rank counts to C counts and displacements.
func cCounts(what string, counts []int, p int) (cnt, displ []C.int, err error) {
	if _, err := collective.CheckCounts(what, counts, p); err != nil {
		return nil, nil, err
	}
	cnt = make([]C.int, p)
	displ = make([]C.int, p)
	off := 0
	for q, n := range counts {
		if cnt[q], err = cint(what, n); err != nil {
			return nil, nil, err
		}
		if displ[q], err = cint(what+" displacement", off); err != nil {
			return nil, nil, err
		}
		off += n
	}
	return cnt, displ, nil
}

// Barrier blocks until every rank has entered it (MPI_Barrier; MPI_Ibarrier
// under Funneled).
func (c *Comm) Barrier() error {
	return c.collective("MPI_Barrier", "MPI_Ibarrier", nil,
		func() C.int { return C.gm_barrier(c.c) },
		func(r *request) C.int { return C.gm_ibarrier(c.c, &r.req) })
}

// collective makes one collective call: blocking on the calling thread
// under Multiple, or posted to the MPI thread as a nonblocking request (its
// memory at pins pinned until it completes) under Funneled.
func (c *Comm) collective(what, iwhat string, pins []unsafe.Pointer, blocking func() C.int, post func(r *request) C.int) error {
	defer dog.begin(what)()
	if threading == Multiple {
		return check(what, blocking())
	}
	_, err := c.start(iwhat, 0, false, pins, post)
	return err
}

// Bcast copies buf of root to every rank (MPI_Bcast; MPI_Ibcast under
// Funneled).
func (c *Comm) Bcast(buf collective.Buf, root int) error {
	n, err := cint("Bcast", buf.Len())
	if err != nil {
		return err
	}
	if root < 0 || root >= c.size {
		return fmt.Errorf("mpi: Bcast: root %d out of range [0,%d)", root, c.size)
	}
	return c.collective("MPI_Bcast", "MPI_Ibcast", []unsafe.Pointer{buf.Ptr()},
		func() C.int { return C.gm_bcast(buf.Ptr(), n, C.int(buf.DType()), C.int(root), c.c) },
		func(r *request) C.int {
			return C.gm_ibcast(buf.Ptr(), n, C.int(buf.DType()), C.int(root), c.c, &r.req)
		})
}

// Allreduce reduces send over all ranks into recv (MPI_Allreduce;
// MPI_Iallreduce under Funneled; MPI_IN_PLACE when they are the same
// buffer).
func (c *Comm) Allreduce(send, recv collective.Buf, op collective.Op) error {
	if send.DType() != recv.DType() || send.Len() != recv.Len() {
		return fmt.Errorf("mpi: Allreduce: send is %d×%s, recv is %d×%s", send.Len(), send.DType(), recv.Len(), recv.DType())
	}
	if op < collective.Sum || op > collective.Min {
		return fmt.Errorf("mpi: Allreduce: invalid operator %s", op)
	}
	n, err := cint("Allreduce", send.Len())
	if err != nil {
		return err
	}
	return c.collective("MPI_Allreduce", "MPI_Iallreduce", []unsafe.Pointer{send.Ptr(), recv.Ptr()},
		func() C.int {
			return C.gm_allreduce(send.Ptr(), recv.Ptr(), n, C.int(send.DType()), C.int(op), c.c)
		},
		func(r *request) C.int {
			return C.gm_iallreduce(send.Ptr(), recv.Ptr(), n, C.int(send.DType()), C.int(op), c.c, &r.req)
		})
}

// Allgatherv concatenates every rank's send into recv (MPI_Allgatherv;
// MPI_Iallgatherv under Funneled).
func (c *Comm) Allgatherv(send, recv collective.Buf, counts []int) error {
	cnt, displ, err := cCounts("Allgatherv", counts, c.size)
	if err != nil {
		return err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if send.Len() != counts[c.rank] || recv.Len() != total || send.DType() != recv.DType() {
		return fmt.Errorf("mpi: Allgatherv on rank %d: send %d×%s, recv %d×%s, want %d and %d elements of one type",
			c.rank, send.Len(), send.DType(), recv.Len(), recv.DType(), counts[c.rank], total)
	}
	pins := []unsafe.Pointer{send.Ptr(), recv.Ptr(), unsafe.Pointer(&cnt[0]), unsafe.Pointer(&displ[0])}
	return c.collective("MPI_Allgatherv", "MPI_Iallgatherv", pins,
		func() C.int {
			return C.gm_allgatherv(send.Ptr(), cnt[c.rank], recv.Ptr(), &cnt[0], &displ[0], C.int(send.DType()), c.c)
		},
		func(r *request) C.int {
			return C.gm_iallgatherv(send.Ptr(), cnt[c.rank], recv.Ptr(), &cnt[0], &displ[0], C.int(send.DType()), c.c, &r.req)
		})
}

// Alltoallv exchanges packed per-rank parts (MPI_Alltoallv; MPI_Ialltoallv
// under Funneled).
func (c *Comm) Alltoallv(send collective.Buf, sendCounts []int, recv collective.Buf, recvCounts []int) error {
	sc, sd, err := cCounts("Alltoallv send", sendCounts, c.size)
	if err != nil {
		return err
	}
	rcn, rd, err := cCounts("Alltoallv recv", recvCounts, c.size)
	if err != nil {
		return err
	}
	ns, nr := 0, 0
	for q := range sendCounts {
		ns += sendCounts[q]
		nr += recvCounts[q]
	}
	if send.Len() != ns || recv.Len() != nr || send.DType() != recv.DType() {
		return fmt.Errorf("mpi: Alltoallv on rank %d: send %d×%s, recv %d×%s, want %d and %d elements of one type",
			c.rank, send.Len(), send.DType(), recv.Len(), recv.DType(), ns, nr)
	}
	pins := []unsafe.Pointer{send.Ptr(), recv.Ptr(), unsafe.Pointer(&sc[0]), unsafe.Pointer(&sd[0]),
		unsafe.Pointer(&rcn[0]), unsafe.Pointer(&rd[0])}
	return c.collective("MPI_Alltoallv", "MPI_Ialltoallv", pins,
		func() C.int {
			return C.gm_alltoallv(send.Ptr(), &sc[0], &sd[0], recv.Ptr(), &rcn[0], &rd[0], C.int(send.DType()), c.c)
		},
		func(r *request) C.int {
			return C.gm_ialltoallv(send.Ptr(), &sc[0], &sd[0], recv.Ptr(), &rcn[0], &rd[0], C.int(send.DType()), c.c, &r.req)
		})
}

// request is a pending nonblocking operation: a collective, or a point-to-
// point send or receive (p2p) of elements of type t.
type request struct {
	what  string
	req   C.MPI_Request
	p2p   bool
	t     collective.DType
	pin   runtime.Pinner
	done  chan struct{}
	count int
	err   error
}

func (r *request) test() bool {
	var flag, count, serr C.int
	p2p := C.int(0)
	if r.p2p {
		p2p = 1
	}
	rc := C.gm_test(&r.req, p2p, C.int(r.t), &flag, &count, &serr)
	if rc != 0 && flag == 0 {
		// MPI_Test itself failed before completing: report and retire.
		r.err = check(r.what, rc)
		r.finish()
		return true
	}
	if flag == 0 {
		return false
	}
	if rc != 0 {
		if serr != 0 {
			rc = serr
		}
		r.err = check(r.what, rc)
	}
	r.count = int(count)
	r.finish()
	return true
}

func (r *request) finish() {
	r.pin.Unpin()
	close(r.done)
}

// start posts a nonblocking operation on the MPI thread, which progresses
// it with every other pending one, and waits for it to complete. The memory
// at pins (buffers, and the count arrays of vector collectives, which MPI
// reads until completion) stays pinned until then. It returns the received
// count of a point-to-point receive.
func (c *Comm) start(what string, t collective.DType, p2p bool, pins []unsafe.Pointer, post func(r *request) C.int) (int, error) {
	r := &request{what: what, p2p: p2p, t: t, done: make(chan struct{})}
	for _, p := range pins {
		if p != nil {
			r.pin.Pin(p)
		}
	}
	var rc C.int
	mpiThread.do(func() {
		rc = post(r)
		if rc == 0 {
			mpiThread.post(r)
		}
	})
	if err := check(what, rc); err != nil {
		r.pin.Unpin()
		return 0, err
	}
	<-r.done
	return r.count, r.err
}

// p2p makes a point-to-point call: blocking on the calling thread under
// Multiple, or posted to the MPI thread under Funneled. It returns the
// received count of a receive.
func (c *Comm) p2p(what, iwhat string, buf collective.Buf, peer, tag int, blocking func(n C.int, count *C.int) C.int, post func(r *request, n C.int) C.int) (int, error) {
	if peer < 0 || peer >= c.size {
		return 0, fmt.Errorf("mpi: %s: rank %d out of range [0,%d)", what, peer, c.size)
	}
	if tag < 0 {
		return 0, fmt.Errorf("mpi: %s: negative tag %d", what, tag)
	}
	defer dog.begin(what)()
	n, err := cint(what, buf.Len())
	if err != nil {
		return 0, err
	}
	if threading == Multiple {
		var count C.int
		if err := check(what, blocking(n, &count)); err != nil {
			return 0, err
		}
		return int(count), nil
	}
	return c.start(iwhat, buf.DType(), true, []unsafe.Pointer{buf.Ptr()}, func(r *request) C.int { return post(r, n) })
}

// Send sends buf to dst and returns when the buffer may be reused.
func (c *Comm) Send(buf collective.Buf, dst, tag int) error {
	_, err := c.p2p("MPI_Send", "MPI_Isend", buf, dst, tag,
		func(n C.int, _ *C.int) C.int {
			return C.gm_send(buf.Ptr(), n, C.int(buf.DType()), C.int(dst), C.int(tag), c.c)
		},
		func(r *request, n C.int) C.int {
			return C.gm_isend(buf.Ptr(), n, C.int(buf.DType()), C.int(dst), C.int(tag), c.c, &r.req)
		})
	return err
}

// Recv receives a message from src with tag into buf and returns its length.
func (c *Comm) Recv(buf collective.Buf, src, tag int) (int, error) {
	return c.p2p("MPI_Recv", "MPI_Irecv", buf, src, tag,
		func(n C.int, count *C.int) C.int {
			return C.gm_recv(buf.Ptr(), n, C.int(buf.DType()), C.int(src), C.int(tag), c.c, count)
		},
		func(r *request, n C.int) C.int {
			return C.gm_irecv(buf.Ptr(), n, C.int(buf.DType()), C.int(src), C.int(tag), c.c, &r.req)
		})
}

func (c *Comm) wrap(nc C.MPI_Comm) (*Comm, error) {
	if nc == C.gm_null() {
		return nil, nil
	}
	out := &Comm{c: nc}
	var rank, size C.int
	if err := check("MPI_Comm_rank", C.gm_rank_size(nc, &rank, &size)); err != nil {
		return nil, err
	}
	out.rank, out.size = int(rank), int(size)
	return out, nil
}

// Split partitions c by color (MPI_Comm_split); Undefined gives nil. Under
// Funneled it blocks the MPI thread (see the package documentation).
func (c *Comm) Split(color, key int) (collective.Comm, error) {
	if color < 0 && color != collective.Undefined {
		return nil, fmt.Errorf("mpi: Split: negative color %d", color)
	}
	var out *Comm
	var err error
	onMPI(func() {
		var nc C.MPI_Comm
		if err = check("MPI_Comm_split", C.gm_split(c.c, C.int(color), C.int(key), &nc)); err == nil {
			out, err = c.wrap(nc)
		}
	})
	if out == nil {
		return nil, err
	}
	return out, err
}

// SplitNode returns the communicator of the ranks sharing this rank's node
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED), ordered by rank.
func (c *Comm) SplitNode() (collective.Comm, error) {
	var out *Comm
	var err error
	onMPI(func() {
		var nc C.MPI_Comm
		if err = check("MPI_Comm_split_type", C.gm_split_node(c.c, C.int(c.rank), &nc)); err == nil {
			out, err = c.wrap(nc)
		}
	})
	if out == nil {
		return nil, err
	}
	return out, err
}

// Free releases a communicator made by Split (MPI_Comm_free); it is
// collective. Freeing the world communicator does nothing.
func (c *Comm) Free() error {
	if c.world {
		return nil
	}
	var rc C.int
	onMPI(func() { rc = C.gm_free(&c.c) })
	return check("MPI_Comm_free", rc)
}

// FortranHandle returns the Fortran handle (MPI_Comm_c2f) of the MPI
// communicator under c's decorations (collective.Unwrap), for libraries
// that take an MPI communicator, such as PT-Scotch: the handle is an
// integer in every MPI implementation, and the library turns it back with
// MPI_Comm_f2c. It reports false when c is not an MPI communicator. Calls
// that use the handle must be made through Call, and traffic on it is not
// counted by c's Stats.
func FortranHandle(c collective.Comm) (int, bool) {
	m, ok := collective.Unwrap(c).(*Comm)
	if !ok || m == nil {
		return 0, false
	}
	var h C.MPI_Fint
	onMPI(func() { h = C.gm_c2f(m.c) })
	return int(h), true
}

// Call runs f where this process may make MPI calls: on the calling thread
// under Multiple, on the MPI thread under Funneled (waiting for it; other
// communication of this process through the MPI thread waits until f
// returns, so f should be a collective that all ranks enter together).
// It is for libraries that make MPI calls themselves, given a handle from
// FortranHandle. It will panic if MPI is not initialised.
func Call(f func()) {
	if InUse() == 0 {
		panic("mpi: Call before Init")
	}
	onMPI(f)
}

// AllocShared allocates nbytes on every rank in one MPI-3 shared window
// (MPI_Win_allocate_shared over the node's communicator) and maps every
// rank's segment (MPI_Win_shared_query); it is collective. When c's ranks
// are not all on one node (each rank's node then holds fewer than all of
// them), or the shared-memory file system (/dev/shm, where Open MPI and
// MPICH place windows on Linux) has less than twice the segments' bytes
// free on some rank, it returns collective.ErrNotShared on every rank.
func (c *Comm) AllocShared(nbytes int) (collective.Shared, error) {
	nc, err := c.SplitNode()
	if err != nil {
		return nil, err
	}
	node := nc.(*Comm)
	// Every rank of the node must have room for all segments in the
	// backing file system (a tmpfs: a page beyond its size is SIGBUS when
	// first touched, not an error of the allocation); the node agrees.
	room := []int32{0}
	if node.size == c.size && shmRoom(shmDir, int64(nbytes)*int64(c.size)) {
		room[0] = 1
	}
	if err := collective.AllreduceSlice(node, room, collective.Min); err != nil {
		return nil, err
	}
	if node.size != c.size || room[0] == 0 {
		if err := node.Free(); err != nil {
			return nil, err
		}
		return nil, collective.ErrNotShared
	}
	s := &shared{node: node, segs: make([][]byte, c.size)}
	onMPI(func() {
		if err = check("MPI_Win_allocate_shared", C.gm_win_alloc(node.c, C.MPI_Aint(nbytes), &s.win)); err != nil {
			return
		}
		for q := range s.segs {
			var n C.MPI_Aint
			var base unsafe.Pointer
			if err = check("MPI_Win_shared_query", C.gm_win_query(s.win, C.int(q), &n, &base)); err != nil {
				return
			}
			if int(n) < nbytes { // Open MPI rounds noncontiguous segments up to pages
				err = fmt.Errorf("mpi: MPI_Win_shared_query: rank %d's segment holds %d bytes, want %d", q, int(n), nbytes)
				return
			}
			if nbytes > 0 {
				s.segs[q] = unsafe.Slice((*byte)(base), nbytes)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// shared is an MPI-3 shared window over a node communicator, in a passive
// epoch opened by MPI_Win_lock_all.
type shared struct {
	node *Comm
	win  C.MPI_Win
	segs [][]byte
}

func (s *shared) Segment(r int) []byte { return s.segs[r] }

// Sync is MPI_Win_sync, a barrier on the node communicator and
// MPI_Win_sync: the unified memory model's way to order the ranks' loads
// and stores.
func (s *shared) Sync() error {
	var rc C.int
	onMPI(func() { rc = C.gm_win_sync(s.win) })
	if err := check("MPI_Win_sync", rc); err != nil {
		return err
	}
	if err := s.node.Barrier(); err != nil {
		return err
	}
	onMPI(func() { rc = C.gm_win_sync(s.win) })
	return check("MPI_Win_sync", rc)
}

// Free closes the epoch, frees the window and the node communicator
// (collective).
func (s *shared) Free() error {
	var rc C.int
	onMPI(func() { rc = C.gm_win_free(&s.win) })
	s.segs = nil
	if err := check("MPI_Win_free", rc); err != nil {
		return err
	}
	return s.node.Free()
}

// shmDir is where Open MPI (osc_sm_backing_directory) and MPICH back
// shared windows on Linux.
const shmDir = "/dev/shm"

// shmRoom reports whether dir's file system has at least twice need bytes
// available, or dir does not exist (the library then backs windows
// elsewhere, and no limit is known).
func shmRoom(dir string, need int64) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return errors.Is(err, syscall.ENOENT)
	}
	return int64(st.Bavail)*int64(st.Bsize) >= 2*need
}
