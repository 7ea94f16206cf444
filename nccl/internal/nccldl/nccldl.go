// Package nccldl is the cgo leaf over NCCL (libnccl.so.2), opened at run
// time through package dl: it declares NCCL's types by hand, looks up the
// functions gnnmpi uses and calls them through C trampolines. It includes
// no NCCL or CUDA header, so it builds where neither is installed.
//
// Device buffers and CUDA streams are opaque addresses (uintptr) here: the
// caller owns them. Every function returns NCCL's result code, converted
// into an error naming the function and NCCL's text for the code.
package nccldl

/*
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int ncclResult_t;
typedef void *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef void *cudaStream_t;

typedef ncclResult_t (*getVersion_f)(int *);
typedef ncclResult_t (*getUniqueId_f)(ncclUniqueId *);
typedef ncclResult_t (*commInitRank_f)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*comm_f)(ncclComm_t);
typedef ncclResult_t (*commInt_f)(ncclComm_t, int *);
typedef ncclResult_t (*allReduce_f)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*allGather_f)(const void *, void *, size_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*broadcast_f)(const void *, void *, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*sendRecv_f)(void *, size_t, int, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*void_f)(void);
typedef const char *(*errorString_f)(ncclResult_t);

static int t_getVersion(void *f, int *v) { return ((getVersion_f)f)(v); }
static int t_getUniqueId(void *f, void *id) { return ((getUniqueId_f)f)((ncclUniqueId *)id); }
static int t_commInitRank(void *f, uintptr_t *comm, int n, void *id, int rank) {
	ncclComm_t c = NULL;
	int rc = ((commInitRank_f)f)(&c, n, *(ncclUniqueId *)id, rank);
	*comm = (uintptr_t)c;
	return rc;
}
static int t_comm(void *f, uintptr_t comm) { return ((comm_f)f)((ncclComm_t)comm); }
static int t_commInt(void *f, uintptr_t comm, int *v) { return ((commInt_f)f)((ncclComm_t)comm, v); }
static int t_allReduce(void *f, uintptr_t s, uintptr_t r, size_t n, int t, int op, uintptr_t comm, uintptr_t st) {
	return ((allReduce_f)f)((const void *)s, (void *)r, n, t, op, (ncclComm_t)comm, (cudaStream_t)st);
}
static int t_reduceScatter(void *f, uintptr_t s, uintptr_t r, size_t n, int t, int op, uintptr_t comm, uintptr_t st) {
	return ((allReduce_f)f)((const void *)s, (void *)r, n, t, op, (ncclComm_t)comm, (cudaStream_t)st);
}
static int t_allGather(void *f, uintptr_t s, uintptr_t r, size_t n, int t, uintptr_t comm, uintptr_t st) {
	return ((allGather_f)f)((const void *)s, (void *)r, n, t, (ncclComm_t)comm, (cudaStream_t)st);
}
static int t_broadcast(void *f, uintptr_t s, uintptr_t r, size_t n, int t, int root, uintptr_t comm, uintptr_t st) {
	return ((broadcast_f)f)((const void *)s, (void *)r, n, t, root, (ncclComm_t)comm, (cudaStream_t)st);
}
static int t_sendRecv(void *f, uintptr_t b, size_t n, int t, int peer, uintptr_t comm, uintptr_t st) {
	return ((sendRecv_f)f)((void *)b, n, t, peer, (ncclComm_t)comm, (cudaStream_t)st);
}
static int t_void(void *f) { return ((void_f)f)(); }
static const char *t_errorString(void *f, int rc) { return ((errorString_f)f)(rc); }
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"gnnmpi/internal/dl"
)

// LibDirEnv names the environment variable holding a directory searched
// first for libnccl.so.2 and libnccl.so (tests point it at a fake NCCL);
// the rest of the search is dl.NCCL's.
const LibDirEnv = dl.NCCLLibDirEnv

// Names are the library names tried, in order, in each directory of the
// search and on the loader's path.
var Names = dl.NCCL().Names

// ErrNoNCCL is wrapped by Load when no NCCL library could be opened.
var ErrNoNCCL = errors.New("nccl: libnccl.so.2 not found (install NCCL, or set " + LibDirEnv + " to the directory holding it)")

// Result is ncclResult_t.
type Result int

// NCCL's result codes.
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
)

// DataType is ncclDataType_t.
type DataType int

// NCCL's data types (nccl.h).
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	Bfloat16 DataType = 9
)

// RedOp is ncclRedOp_t.
type RedOp int

// NCCL's built-in reduction operators (nccl.h).
const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4
)

// UniqueID is ncclUniqueId: 128 opaque bytes that rank 0 creates and every
// rank passes to CommInitRank.
type UniqueID [128]byte

// CommHandle is ncclComm_t.
type CommHandle uintptr

// Lib is a loaded NCCL.
type Lib struct {
	Path string // the name or path it was opened by
	lib  *dl.Lib

	getVersion, getUniqueID, commInitRank, commDestroy, commAbort unsafe.Pointer
	commCount, commUserRank, allReduce, allGather, reduceScatter  unsafe.Pointer
	broadcast, send, recv, groupStart, groupEnd, getErrorString   unsafe.Pointer
}

var (
	loadOnce sync.Once
	loaded   *Lib
	loadErr  error
)

// Load opens NCCL once per process, as dl.NCCL says: LibDirEnv's
// directory first, then $GNNMPI_CUDA_LIBDIR, the toolkit's lib64, the
// Python wheel's nvidia/nccl/lib and the loader's path. A missing library is an error wrapping
// ErrNoNCCL that names every file tried; a library lacking one of the
// functions is an error naming it.
func Load() (*Lib, error) {
	loadOnce.Do(func() { loaded, loadErr = open() })
	return loaded, loadErr
}

func open() (*Lib, error) {
	l, err := dl.NCCL().Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoNCCL, err)
	}
	n := &Lib{Path: l.Name, lib: l}
	err = l.Syms(map[string]*unsafe.Pointer{
		"ncclGetVersion":     &n.getVersion,
		"ncclGetUniqueId":    &n.getUniqueID,
		"ncclCommInitRank":   &n.commInitRank,
		"ncclCommDestroy":    &n.commDestroy,
		"ncclCommAbort":      &n.commAbort,
		"ncclCommCount":      &n.commCount,
		"ncclCommUserRank":   &n.commUserRank,
		"ncclAllReduce":      &n.allReduce,
		"ncclAllGather":      &n.allGather,
		"ncclReduceScatter":  &n.reduceScatter,
		"ncclBroadcast":      &n.broadcast,
		"ncclSend":           &n.send,
		"ncclRecv":           &n.recv,
		"ncclGroupStart":     &n.groupStart,
		"ncclGroupEnd":       &n.groupEnd,
		"ncclGetErrorString": &n.getErrorString,
	})
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("nccl: %w", err)
	}
	return n, nil
}

// check turns NCCL's result into an error naming the function.
func (l *Lib) check(fn string, rc C.int) error {
	if Result(rc) == Success {
		return nil
	}
	return fmt.Errorf("nccl: %s: %s (ncclResult_t %d)", fn, l.ErrorString(Result(rc)), int(rc))
}

// ErrorString returns NCCL's text for a result code.
func (l *Lib) ErrorString(r Result) string {
	return C.GoString(C.t_errorString(l.getErrorString, C.int(r)))
}

// Version returns NCCL's version code (e.g. 22304 for 2.23.4).
func (l *Lib) Version() (int, error) {
	var v C.int
	err := l.check("ncclGetVersion", C.t_getVersion(l.getVersion, &v))
	return int(v), err
}

// GetUniqueID creates the identifier of a new communicator.
func (l *Lib) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	p := C.malloc(C.size_t(len(id)))
	defer C.free(p)
	if err := l.check("ncclGetUniqueId", C.t_getUniqueId(l.getUniqueID, p)); err != nil {
		return id, err
	}
	copy(id[:], unsafe.Slice((*byte)(p), len(id)))
	return id, nil
}

// CommInitRank joins the communicator id of n ranks as rank.
func (l *Lib) CommInitRank(n int, id UniqueID, rank int) (CommHandle, error) {
	p := C.CBytes(id[:])
	defer C.free(p)
	var c C.uintptr_t
	err := l.check("ncclCommInitRank", C.t_commInitRank(l.commInitRank, &c, C.int(n), p, C.int(rank)))
	return CommHandle(c), err
}

// CommDestroy frees a communicator after its operations complete.
func (l *Lib) CommDestroy(c CommHandle) error {
	return l.check("ncclCommDestroy", C.t_comm(l.commDestroy, C.uintptr_t(c)))
}

// CommAbort frees a communicator, aborting its pending operations.
func (l *Lib) CommAbort(c CommHandle) error {
	return l.check("ncclCommAbort", C.t_comm(l.commAbort, C.uintptr_t(c)))
}

// CommCount returns the number of ranks of c.
func (l *Lib) CommCount(c CommHandle) (int, error) {
	var v C.int
	err := l.check("ncclCommCount", C.t_commInt(l.commCount, C.uintptr_t(c), &v))
	return int(v), err
}

// CommUserRank returns this rank's index in c.
func (l *Lib) CommUserRank(c CommHandle) (int, error) {
	var v C.int
	err := l.check("ncclCommUserRank", C.t_commInt(l.commUserRank, C.uintptr_t(c), &v))
	return int(v), err
}

// AllReduce enqueues the reduction of n elements of send into recv (device
// addresses; they may be equal) on stream.
func (l *Lib) AllReduce(send, recv uintptr, n int, t DataType, op RedOp, c CommHandle, stream uintptr) error {
	return l.check("ncclAllReduce", C.t_allReduce(l.allReduce, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(n), C.int(t), C.int(op), C.uintptr_t(c), C.uintptr_t(stream)))
}

// ReduceScatter enqueues the reduction of n·size elements of send, of which
// this rank receives block rank (n elements) in recv.
func (l *Lib) ReduceScatter(send, recv uintptr, n int, t DataType, op RedOp, c CommHandle, stream uintptr) error {
	return l.check("ncclReduceScatter", C.t_reduceScatter(l.reduceScatter, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(n), C.int(t), C.int(op), C.uintptr_t(c), C.uintptr_t(stream)))
}

// AllGather enqueues the gathering of n elements of every rank's send into
// recv (n·size elements, in rank order).
func (l *Lib) AllGather(send, recv uintptr, n int, t DataType, c CommHandle, stream uintptr) error {
	return l.check("ncclAllGather", C.t_allGather(l.allGather, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(n), C.int(t), C.uintptr_t(c), C.uintptr_t(stream)))
}

// Broadcast enqueues the copy of n elements of root's send into every
// rank's recv (send is read on root only; equal addresses work in place).
func (l *Lib) Broadcast(send, recv uintptr, n int, t DataType, root int, c CommHandle, stream uintptr) error {
	return l.check("ncclBroadcast", C.t_broadcast(l.broadcast, C.uintptr_t(send), C.uintptr_t(recv), C.size_t(n), C.int(t), C.int(root), C.uintptr_t(c), C.uintptr_t(stream)))
}

// Send enqueues sending n elements of buf to peer.
func (l *Lib) Send(buf uintptr, n int, t DataType, peer int, c CommHandle, stream uintptr) error {
	return l.check("ncclSend", C.t_sendRecv(l.send, C.uintptr_t(buf), C.size_t(n), C.int(t), C.int(peer), C.uintptr_t(c), C.uintptr_t(stream)))
}

// Recv enqueues receiving n elements from peer into buf.
func (l *Lib) Recv(buf uintptr, n int, t DataType, peer int, c CommHandle, stream uintptr) error {
	return l.check("ncclRecv", C.t_sendRecv(l.recv, C.uintptr_t(buf), C.size_t(n), C.int(t), C.int(peer), C.uintptr_t(c), C.uintptr_t(stream)))
}

// GroupStart opens a group: the calls up to GroupEnd are launched together.
func (l *Lib) GroupStart() error {
	return l.check("ncclGroupStart", C.t_void(l.groupStart))
}

// GroupEnd launches the calls made since GroupStart.
func (l *Lib) GroupEnd() error {
	return l.check("ncclGroupEnd", C.t_void(l.groupEnd))
}
