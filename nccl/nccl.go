package nccl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"gnnmpi/collective"
	"gnnmpi/nccl/internal/nccldl"
)

// ErrNoNCCL is wrapped by New when libnccl.so.2 cannot be loaded (on the
// lowest rank; the others return collective.ErrAborted carrying its
// message).
var ErrNoNCCL = nccldl.ErrNoNCCL

// LibDirEnv names the environment variable holding a directory searched
// for libnccl.so.2 before the loader's path.
const LibDirEnv = nccldl.LibDirEnv

// LibNames are the library names tried after LibDirEnv's directory.
var LibNames = nccldl.Names

// Comm is one rank's NCCL communicator. It implements collective.Comm on
// host buffers by staging them through device buffers of its DeviceMemory,
// and offers the *Device calls on device buffers. Alongside the NCCL
// communicator it keeps the host communicator of the same ranks (the MPI
// one New was given, or a Split of it), which creates sub-communicators
// and ends the job on Abort.
//
// Like an MPI communicator, a Comm is used by one goroutine at a time;
// different Comms may be used at once (each has its own stream; see the
// package documentation).
type Comm struct {
	lib        *nccldl.Lib
	h          nccldl.CommHandle
	host       collective.Comm
	ownHost    bool // host was split for this Comm: Free frees it
	dev        DeviceMemory
	stream     uintptr // this Comm's own stream (DeviceMemory.NewStream)
	rank, size int
	stage      [2]staging // send and receive staging buffers
}

var (
	_ collective.Comm    = (*Comm)(nil)
	_ collective.Freer   = (*Comm)(nil)
	_ collective.Aborter = (*Comm)(nil)
)

// staging is a device buffer that grows on demand, and the page-locked
// host buffer of the same size that it is copied from and to.
type staging struct {
	ptr uintptr
	n   int
	pin []byte
}

// New creates an NCCL communicator over the ranks of world: rank 0 creates
// the unique id, broadcasts it over world and every rank joins. world's
// decorations (collective.WithStats) are removed first, so that this setup
// traffic is not counted; wrap the result in collective.WithStats to count
// its calls. New is collective over world; every rank gets the same error
// when NCCL is missing on any of them.
func New(world collective.Comm, dev DeviceMemory) (*Comm, error) {
	return newComm(collective.Unwrap(world), false, dev)
}

func newComm(host collective.Comm, own bool, dev DeviceMemory) (*Comm, error) {
	lib, err := nccldl.Load()
	if err = collective.Agree(host, err); err != nil {
		return nil, err
	}
	var id nccldl.UniqueID
	if host.Rank() == 0 {
		id, err = lib.GetUniqueID()
	}
	if err = collective.Agree(host, err); err != nil {
		return nil, err
	}
	if err := host.Bcast(collective.BufOf(id[:]), 0); err != nil {
		return nil, err
	}
	if err := checkDevices(host, dev); err != nil {
		return nil, err
	}
	stream, err := dev.NewStream()
	if err = collective.Agree(host, err); err != nil {
		return nil, err
	}
	h, err := lib.CommInitRank(host.Size(), id, host.Rank())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%w (%s)", err, lib.Path), dev.DestroyStream(stream))
	}
	return &Comm{lib: lib, h: h, host: host, ownHost: own, dev: dev, stream: stream, rank: host.Rank(), size: host.Size()}, nil
}

// ErrSharedDevice is wrapped by New's error, on every rank, when two
// ranks use the same GPU: NCCL refuses such a communicator ("Duplicate GPU
// detected", ncclInvalidUsage), so New refuses it before NCCL is called.
var ErrSharedDevice = errors.New("nccl: two ranks use the same GPU, and NCCL needs one rank per GPU")

// checkDevices returns an error wrapping ErrSharedDevice, the same on
// every rank of host, when two ranks' dev.DeviceID are equal and not
// empty. It is collective over host.
func checkDevices(host collective.Comm, dev DeviceMemory) error {
	id, err := dev.DeviceID()
	if err = collective.Agree(host, err); err != nil {
		return err
	}
	all, counts, err := collective.AllgatherSlice(host, []byte(id))
	if err != nil {
		return err
	}
	first := map[string]int{}
	off := 0
	for q, l := range counts {
		d := string(all[off : off+l])
		off += l
		if d == "" {
			continue
		}
		if r, ok := first[d]; ok {
			return fmt.Errorf("%w: ranks %d and %d both use %s", ErrSharedDevice, r, q, d)
		}
		first[d] = q
	}
	return nil
}

// Library returns the name or path NCCL was loaded by.
func (c *Comm) Library() string { return c.lib.Path }

// Rank returns this rank's index.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks.
func (c *Comm) Size() int { return c.size }

// Abort ends the job through the host communicator.
func (c *Comm) Abort(code int) {
	if !collective.Abort(c.host, code) {
		panic("nccl: Abort: the host communicator cannot abort")
	}
}

// Free destroys the NCCL communicator, releases the staging buffers and
// frees the host communicator made by Split. It is collective.
func (c *Comm) Free() error {
	err := c.lib.CommDestroy(c.h)
	for i := range c.stage {
		if c.stage[i].n > 0 {
			err = errors.Join(err, c.dev.Free(c.stage[i].ptr), c.dev.FreeHost(c.stage[i].pin))
			c.stage[i] = staging{}
		}
	}
	err = errors.Join(err, c.dev.DestroyStream(c.stream))
	if c.ownHost {
		err = errors.Join(err, collective.Free(c.host))
	}
	return err
}

// buf returns staging buffer i with at least n bytes.
func (c *Comm) buf(i, n int) (uintptr, error) {
	s := &c.stage[i]
	if s.n >= n && s.n > 0 {
		return s.ptr, nil
	}
	size := max(n, 2*s.n, 256)
	if s.n > 0 {
		if err := errors.Join(c.dev.Free(s.ptr), c.dev.FreeHost(s.pin)); err != nil {
			return 0, err
		}
		*s = staging{}
	}
	p, err := c.dev.Alloc(size)
	if err != nil {
		return 0, fmt.Errorf("nccl: staging buffer of %d bytes: %w", size, err)
	}
	pin, err := c.dev.AllocHost(size)
	if err != nil {
		return 0, errors.Join(fmt.Errorf("nccl: page-locked staging buffer of %d bytes: %w", size, err), c.dev.Free(p))
	}
	*s = staging{ptr: p, n: size, pin: pin}
	return p, nil
}

// pinned returns the n bytes of staging buffer i's page-locked twin that
// mirror device address d.
func (c *Comm) pinned(i int, d uintptr, n int) []byte {
	off := int(d - c.stage[i].ptr)
	return c.stage[i].pin[off : off+n]
}

// put enqueues on c's stream the upload of src to d, inside staging
// buffer i, through its page-locked twin.
func (c *Comm) put(i int, d uintptr, src []byte) error {
	p := c.pinned(i, d, len(src))
	copy(p, src)
	return c.dev.CopyHtoDAsync(d, p, c.stream)
}

// get enqueues on c's stream the download of the n bytes at d, inside
// staging buffer i, into its page-locked twin, which pinned(i, d, n)
// returns after wait.
func (c *Comm) get(i int, d uintptr, n int) error {
	return c.dev.CopyDtoHAsync(c.pinned(i, d, n), d, c.stream)
}

// wait waits for c's stream, for at most the timeout SetWaitTimeout set.
func (c *Comm) wait(call string) error {
	d := time.Duration(waitTimeout.Load())
	if err := c.dev.Wait(c.stream, d); err != nil {
		return fmt.Errorf("nccl: %s on rank %d of %d: waiting for the device past --comm-timeout %s (a peer that never made the call, or calls crossed between communicators): %w", call, c.rank, c.size, d, err)
	}
	return nil
}

// Sync waits until the calls enqueued on the Comm's stream (the *Device
// calls) have completed, for at most the timeout SetWaitTimeout set.
func (c *Comm) Sync() error { return c.wait("Sync") }

// waitTimeout is SetWaitTimeout's duration, in nanoseconds.
var waitTimeout atomic.Int64

// SetWaitTimeout makes every Comm's waits for its stream fail after d
// (none when d ≤ 0, the default): package main sets it from
// --comm-timeout, so that a collective stuck on the device ends the job
// with an error naming the call, as the MPI backend's watchdog does for
// MPI calls.
func SetWaitTimeout(d time.Duration) { waitTimeout.Store(int64(d)) }

// redTypes maps a Buf type to the NCCL type reductions use; 16-bit words
// have none and are widened to 32 bits (see Allreduce).
var redTypes = map[collective.DType]nccldl.DataType{
	collective.Byte:    nccldl.Uint8,
	collective.Int32:   nccldl.Int32,
	collective.Int64:   nccldl.Int64,
	collective.Float32: nccldl.Float32,
	collective.Float64: nccldl.Float64,
	collective.Uint16:  nccldl.Uint32,
}

// redOps maps a reduction operator to NCCL's.
var redOps = map[collective.Op]nccldl.RedOp{
	collective.Sum: nccldl.Sum,
	collective.Max: nccldl.Max,
	collective.Min: nccldl.Min,
}

// ncclOf returns m[k], or an error saying NCCL has no what for k.
func ncclOf[K comparable, V any](m map[K]V, k K, what string) (V, error) {
	v, ok := m[k]
	if !ok {
		return v, fmt.Errorf("nccl: no NCCL %s for %v", what, k)
	}
	return v, nil
}

// moveType maps a Buf type to an NCCL type of its size, for the calls that
// only move data.
func moveType(t collective.DType) nccldl.DataType {
	switch t.Size() {
	case 2:
		return nccldl.Float16
	case 4:
		return nccldl.Uint32
	case 8:
		return nccldl.Uint64
	}
	return nccldl.Uint8
}

// Barrier is an allreduce of one int32.
func (c *Comm) Barrier() error {
	x := []int32{1}
	return c.Allreduce(collective.BufOf(x), collective.BufOf(x), collective.Sum)
}

// Bcast broadcasts root's buf through a staging buffer.
func (c *Comm) Bcast(buf collective.Buf, root int) error {
	if root < 0 || root >= c.size {
		return fmt.Errorf("nccl: Bcast: root %d of %d ranks", root, c.size)
	}
	if buf.Len() == 0 || c.size == 1 {
		return nil
	}
	d, err := c.buf(0, int(buf.Bytes()))
	if err != nil {
		return err
	}
	nb := int(buf.Bytes())
	if c.rank == root {
		if err := c.put(0, d, buf.Raw()); err != nil {
			return err
		}
	}
	if err := c.BroadcastDevice(d, buf.Len(), buf.DType(), root); err != nil {
		return err
	}
	if c.rank != root {
		if err := c.get(0, d, nb); err != nil {
			return err
		}
	}
	if err := c.wait("Bcast"); err != nil {
		return err
	}
	if c.rank != root {
		copy(buf.Raw(), c.pinned(0, d, nb))
	}
	return nil
}

// Allreduce reduces send into recv through a staging buffer, in place on
// the device. NCCL's ring reduces in the same order for every rank, so the
// result is the same on all of them. 16-bit words, which NCCL cannot
// reduce, are widened to 32 bits: sums modulo 2¹⁶ and the extrema of the
// widened words are those of the words.
func (c *Comm) Allreduce(send, recv collective.Buf, op collective.Op) error {
	if send.DType() != recv.DType() || send.Len() != recv.Len() {
		return fmt.Errorf("nccl: Allreduce: send %d×%v, recv %d×%v", send.Len(), send.DType(), recv.Len(), recv.DType())
	}
	t, err := ncclOf(redTypes, send.DType(), "type")
	if err != nil {
		return err
	}
	o, err := ncclOf(redOps, op, "operator")
	if err != nil {
		return err
	}
	n := send.Len()
	if n == 0 {
		return nil
	}
	in := send.Raw()
	if send.DType() == collective.Uint16 {
		in = widen16(in)
	}
	d, err := c.buf(0, len(in))
	if err != nil {
		return err
	}
	if err := c.put(0, d, in); err != nil {
		return err
	}
	if err := c.lib.AllReduce(d, d, n, t, o, c.h, c.stream); err != nil {
		return err
	}
	if err := c.get(0, d, len(in)); err != nil {
		return err
	}
	if err := c.wait("Allreduce"); err != nil {
		return err
	}
	if send.DType() != collective.Uint16 {
		copy(recv.Raw(), c.pinned(0, d, len(in)))
		return nil
	}
	narrow32(recv.Raw(), c.pinned(0, d, len(in)))
	return nil
}

// widen16 zero-extends little-endian 16-bit words to 32 bits.
func widen16(b []byte) []byte {
	out := make([]byte, 2*len(b))
	for i := 0; i < len(b)/2; i++ {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return out
}

// narrow32 truncates the 32-bit words of w into the 16-bit words of dst.
func narrow32(dst, w []byte) {
	for i := 0; i < len(dst)/2; i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], uint16(binary.LittleEndian.Uint32(w[4*i:])))
	}
}

// Allgatherv gathers through ncclAllGather padded to the largest count:
// every rank contributes max(counts) elements (its own first, then
// padding) and the parts are copied out of the gathered buffer without the
// padding. One collective call moves p·max(counts) elements per rank
// instead of sum(counts); the counted volume (collective.WithStats) is the
// logical one, as on every backend.
func (c *Comm) Allgatherv(send, recv collective.Buf, counts []int) error {
	total, err := collective.CheckCounts("Allgatherv", counts, c.size)
	if err != nil {
		return err
	}
	if send.Len() != counts[c.rank] || recv.Len() != total || send.DType() != recv.DType() {
		return fmt.Errorf("nccl: Allgatherv: send %d×%v, recv %d×%v for counts %v", send.Len(), send.DType(), recv.Len(), recv.DType(), counts)
	}
	m := 0
	for _, k := range counts {
		m = max(m, k)
	}
	if m == 0 {
		return nil
	}
	es := send.DType().Size()
	sd, err := c.buf(0, m*es)
	if err != nil {
		return err
	}
	rd, err := c.buf(1, c.size*m*es)
	if err != nil {
		return err
	}
	if send.Len() > 0 {
		if err := c.put(0, sd, send.Raw()); err != nil {
			return err
		}
	}
	if err := c.lib.AllGather(sd, rd, m*es, nccldl.Uint8, c.h, c.stream); err != nil {
		return err
	}
	if err := c.get(1, rd, c.size*m*es); err != nil {
		return err
	}
	if err := c.wait("Allgatherv"); err != nil {
		return err
	}
	off := 0
	for q, k := range counts {
		copy(recv.Slice(off, off+k).Raw(), c.pinned(1, rd+uintptr(q*m*es), k*es))
		off += k
	}
	return nil
}

// Alltoallv is a group of ncclSend/ncclRecv between staging buffers; this
// rank's own part is copied on the host.
func (c *Comm) Alltoallv(send collective.Buf, sendCounts []int, recv collective.Buf, recvCounts []int) error {
	st, err := collective.CheckCounts("Alltoallv send", sendCounts, c.size)
	if err != nil {
		return err
	}
	rt, err := collective.CheckCounts("Alltoallv recv", recvCounts, c.size)
	if err != nil {
		return err
	}
	if send.Len() != st || recv.Len() != rt || send.DType() != recv.DType() {
		return fmt.Errorf("nccl: Alltoallv: send %d×%v for %d, recv %d×%v for %d", send.Len(), send.DType(), st, recv.Len(), recv.DType(), rt)
	}
	es := send.DType().Size()
	sd, err := c.buf(0, st*es)
	if err != nil {
		return err
	}
	rd, err := c.buf(1, rt*es)
	if err != nil {
		return err
	}
	if st > 0 {
		if err := c.put(0, sd, send.Raw()); err != nil {
			return err
		}
	}
	t := moveType(send.DType())
	// NCCL's group state is per thread: the calls from GroupStart to
	// GroupEnd must come from one OS thread, which a goroutine may
	// otherwise leave between two cgo calls (another communicator's group
	// on the thread would then swallow these calls).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.lib.GroupStart(); err != nil {
		return err
	}
	var gerr error
	so, ro := 0, 0
	for q := 0; q < c.size; q++ {
		if q != c.rank {
			if sendCounts[q] > 0 {
				gerr = errors.Join(gerr, c.lib.Send(sd+uintptr(so*es), sendCounts[q], t, q, c.h, c.stream))
			}
			if recvCounts[q] > 0 {
				gerr = errors.Join(gerr, c.lib.Recv(rd+uintptr(ro*es), recvCounts[q], t, q, c.h, c.stream))
			}
		}
		so += sendCounts[q]
		ro += recvCounts[q]
	}
	if err := errors.Join(gerr, c.lib.GroupEnd()); err != nil {
		return err
	}
	if rt > 0 {
		if err := c.get(1, rd, rt*es); err != nil {
			return err
		}
	}
	if err := c.wait("Alltoallv"); err != nil {
		return err
	}
	so, ro = 0, 0
	for q := 0; q < c.size; q++ {
		if q == c.rank {
			if sendCounts[q] != recvCounts[q] {
				return fmt.Errorf("nccl: Alltoallv: rank %d sends itself %d elements and receives %d", q, sendCounts[q], recvCounts[q])
			}
			copy(recv.Slice(ro, ro+recvCounts[q]).Raw(), send.Slice(so, so+sendCounts[q]).Raw())
		} else {
			copy(recv.Slice(ro, ro+recvCounts[q]).Raw(), c.pinned(1, rd+uintptr(ro*es), recvCounts[q]*es))
		}
		so += sendCounts[q]
		ro += recvCounts[q]
	}
	return nil
}

// headerBytes is the size of the header Send puts before each message:
// its tag and its length in bytes, two little-endian int64.
const headerBytes = 16

// Send sends a header (tag, length) and then buf to dst, as two ncclSend.
// NCCL has no tags: messages between two ranks are received in the order
// sent, whatever their tags, and a Recv whose tag differs from the next
// message's is an error. Sending to oneself is an error.
func (c *Comm) Send(buf collective.Buf, dst, tag int) error {
	if dst < 0 || dst >= c.size || dst == c.rank {
		return fmt.Errorf("nccl: Send from rank %d to rank %d of %d", c.rank, dst, c.size)
	}
	nb := int(buf.Bytes())
	d, err := c.buf(0, headerBytes+nb)
	if err != nil {
		return err
	}
	var hdr [headerBytes]byte
	binary.LittleEndian.PutUint64(hdr[0:], uint64(tag))
	binary.LittleEndian.PutUint64(hdr[8:], uint64(nb))
	if err := c.put(0, d, hdr[:]); err != nil {
		return err
	}
	if nb > 0 {
		if err := c.put(0, d+headerBytes, buf.Raw()); err != nil {
			return err
		}
	}
	if err := c.lib.Send(d, headerBytes, nccldl.Uint8, dst, c.h, c.stream); err != nil {
		return err
	}
	if nb > 0 {
		if err := c.lib.Send(d+headerBytes, nb, nccldl.Uint8, dst, c.h, c.stream); err != nil {
			return err
		}
	}
	return c.wait("Send")
}

// Recv receives the next message from src: its header, then its payload.
// The payload is received in full before a wrong tag or a message longer
// than buf is reported, so that the sender is not left blocked.
func (c *Comm) Recv(buf collective.Buf, src, tag int) (int, error) {
	if src < 0 || src >= c.size || src == c.rank {
		return 0, fmt.Errorf("nccl: Recv on rank %d from rank %d of %d", c.rank, src, c.size)
	}
	d, err := c.recvStaged(headerBytes, src)
	if err != nil {
		return 0, err
	}
	var hdr [headerBytes]byte
	copy(hdr[:], c.pinned(1, d, headerBytes))
	gotTag, nb := int(binary.LittleEndian.Uint64(hdr[0:])), int(binary.LittleEndian.Uint64(hdr[8:]))
	if nb > 0 {
		if d, err = c.recvStaged(nb, src); err != nil {
			return 0, err
		}
	}
	es := buf.DType().Size()
	switch {
	case gotTag != tag:
		return 0, fmt.Errorf("nccl: Recv from rank %d: next message has tag %d, want %d (NCCL has no tags: receive in the order sent)", src, gotTag, tag)
	case nb%es != 0:
		return 0, fmt.Errorf("nccl: Recv from rank %d: %d bytes are not whole %v elements", src, nb, buf.DType())
	case int64(nb) > buf.Bytes():
		return 0, fmt.Errorf("nccl: Recv from rank %d: message of %d bytes, buffer of %d", src, nb, buf.Bytes())
	}
	copy(buf.Raw()[:nb], c.pinned(1, d, nb))
	return nb / es, nil
}

// recvStaged receives n bytes from src into staging buffer 1 on c's
// stream, copies them to its page-locked host side and waits for both; it
// returns the device buffer (c.pinned(1, d, n) holds the bytes).
func (c *Comm) recvStaged(n, src int) (uintptr, error) {
	d, err := c.buf(1, n)
	if err != nil {
		return 0, err
	}
	if err := c.lib.Recv(d, n, nccldl.Uint8, src, c.h, c.stream); err != nil {
		return 0, err
	}
	if err := c.get(1, d, n); err != nil {
		return 0, err
	}
	return d, c.wait("Recv")
}

// Split splits the host communicator and makes an NCCL communicator, with
// a new unique id, for each color. A rank passing collective.Undefined gets
// nil. It is collective.
func (c *Comm) Split(color, key int) (collective.Comm, error) {
	sub, err := c.host.Split(color, key)
	if err != nil || sub == nil {
		return nil, err
	}
	nc, err := newComm(sub, true, c.dev)
	if err != nil {
		return nil, errors.Join(err, collective.Free(sub))
	}
	return nc, nil
}

// AllreduceDevice enqueues the in-place reduction of the n elements at
// device address ptr on the Comm's own stream, which does not wait for
// the default stream: the data must be ready when it is called (the
// stream that wrote it synchronized), and Sync must return before it is
// read. 16-bit words cannot be reduced.
func (c *Comm) AllreduceDevice(ptr uintptr, n int, t collective.DType, op collective.Op) error {
	nt, o, err := devRed(t, op)
	if err != nil {
		return err
	}
	return c.lib.AllReduce(ptr, ptr, n, nt, o, c.h, c.stream)
}

// ReduceScatterDevice enqueues the reduction of the n·Size() elements at
// send, of which this rank gets block Rank() (n elements) at recv.
func (c *Comm) ReduceScatterDevice(send, recv uintptr, n int, t collective.DType, op collective.Op) error {
	nt, o, err := devRed(t, op)
	if err != nil {
		return err
	}
	return c.lib.ReduceScatter(send, recv, n, nt, o, c.h, c.stream)
}

// AllGatherDevice enqueues the gathering of every rank's n elements at send
// into recv (n·Size() elements, in rank order).
func (c *Comm) AllGatherDevice(send, recv uintptr, n int, t collective.DType) error {
	return c.lib.AllGather(send, recv, n, moveType(t), c.h, c.stream)
}

// BroadcastDevice enqueues the copy of root's n elements at ptr into every
// rank's ptr.
func (c *Comm) BroadcastDevice(ptr uintptr, n int, t collective.DType, root int) error {
	return c.lib.Broadcast(ptr, ptr, n, moveType(t), root, c.h, c.stream)
}

func devRed(t collective.DType, op collective.Op) (nccldl.DataType, nccldl.RedOp, error) {
	if t == collective.Uint16 {
		return 0, 0, fmt.Errorf("nccl: NCCL cannot reduce 16-bit words on the device")
	}
	nt, err := ncclOf(redTypes, t, "type")
	if err != nil {
		return 0, 0, err
	}
	o, err := ncclOf(redOps, op, "operator")
	return nt, o, err
}
