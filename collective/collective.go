package collective

import (
	"errors"
	"fmt"
	"unsafe"
)

// DType is the element type of a Buf.
type DType uint8

// Supported element types.
const (
	Byte DType = iota + 1
	Int32
	Int64
	Float32
	Float64
	Uint16 // 16-bit words: half-precision features travel as these
)

// Size returns the size in bytes of one element.
func (t DType) Size() int {
	switch t {
	case Byte:
		return 1
	case Int32, Float32:
		return 4
	case Int64, Float64:
		return 8
	case Uint16:
		return 2
	}
	panic("collective: invalid DType")
}

var dtypeNames = [...]string{Byte: "byte", Int32: "int32", Int64: "int64", Float32: "float32", Float64: "float64", Uint16: "uint16"}

func (t DType) String() string {
	if t >= Byte && int(t) < len(dtypeNames) {
		return dtypeNames[t]
	}
	return fmt.Sprintf("DType(%d)", uint8(t))
}

// Op is a reduction operator.
type Op uint8

// Reduction operators.
const (
	Sum Op = iota + 1
	Max
	Min
)

var reduceNames = [...]string{Sum: "sum", Max: "max", Min: "min"}

func (o Op) String() string {
	if o >= Sum && int(o) < len(reduceNames) {
		return reduceNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Elem is the set of Go element types a Buf can view.
type Elem interface {
	~uint8 | ~uint16 | ~int32 | ~int64 | ~float32 | ~float64
}

// Buf is an untyped view of a Go slice: element type, first element and
// length. It does not own the memory; the slice must stay alive while a call
// uses the Buf. The zero Buf is an empty byte buffer.
type Buf struct {
	t DType
	p unsafe.Pointer
	n int
}

// BufOf returns a Buf viewing s.
func BufOf[E Elem](s []E) Buf {
	var z E
	var t DType
	switch any(z).(type) {
	case uint8:
		t = Byte
	case int32:
		t = Int32
	case int64:
		t = Int64
	case float32:
		t = Float32
	case float64:
		t = Float64
	case uint16:
		t = Uint16
	default:
		// A named type such as `type label int32`: classify by size and kind.
		t = classify(z)
	}
	return Buf{t: t, p: unsafe.Pointer(unsafe.SliceData(s)), n: len(s)}
}

func classify[E Elem](z E) DType {
	switch unsafe.Sizeof(z) {
	case 1:
		return Byte
	case 2:
		return Uint16
	case 4:
		if E(1)/E(2) != 0 {
			return Float32
		}
		return Int32
	default:
		if E(1)/E(2) != 0 {
			return Float64
		}
		return Int64
	}
}

// DType returns the element type of b.
func (b Buf) DType() DType {
	if b.t == 0 {
		return Byte
	}
	return b.t
}

// Len returns the number of elements.
func (b Buf) Len() int { return b.n }

// Bytes returns the number of bytes viewed.
func (b Buf) Bytes() int64 { return int64(b.n) * int64(b.DType().Size()) }

// Ptr returns the address of the first element, or nil for an empty Buf.
// It is meant for backends passing the buffer to C.
func (b Buf) Ptr() unsafe.Pointer {
	if b.n == 0 {
		return nil
	}
	return b.p
}

// Raw returns the viewed memory as bytes, aliasing the original slice.
func (b Buf) Raw() []byte {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(b.p), b.Bytes())
}

// Slice returns the Buf viewing elements [i, j). It will panic if the bounds
// are out of range.
func (b Buf) Slice(i, j int) Buf {
	if i < 0 || j < i || j > b.n {
		panic("collective: Buf slice out of range")
	}
	if i == j {
		return Buf{t: b.t}
	}
	return Buf{t: b.t, p: unsafe.Add(b.p, i*b.DType().Size()), n: j - i}
}

// Undefined is the color passed to Split by ranks that want no
// sub-communicator (MPI_UNDEFINED); Split returns a nil Comm to them.
const Undefined = -1

// Comm is one rank's handle on a communicator.
//
// Every method except Rank and Size is collective over the communicator, or,
// for Send and Recv, between two of its ranks; all ranks must make the same
// sequence of collective calls with consistent arguments.
type Comm interface {
	// Rank returns this rank's index in [0, Size()).
	Rank() int
	// Size returns the number of ranks.
	Size() int
	// Barrier returns once every rank has entered it.
	Barrier() error
	// Bcast copies buf of rank root into buf of every other rank. All ranks
	// pass buffers of the same type and length.
	Bcast(buf Buf, root int) error
	// Allreduce stores in recv of every rank the element-wise reduction of
	// send over all ranks. send and recv have the same type and length on
	// every rank; they may be the same buffer (in place). Reductions are
	// performed in a fixed order on every backend, so the result is the
	// same on all ranks.
	Allreduce(send, recv Buf, op Op) error
	// Allgatherv concatenates every rank's send (counts[q] elements from rank
	// q) into recv on every rank, in rank order. counts is the same on every
	// rank, len(counts) == Size(), and recv has sum(counts) elements.
	Allgatherv(send, recv Buf, counts []int) error
	// Alltoallv sends sendCounts[q] elements of send to rank q (packed in
	// rank order) and receives recvCounts[q] elements from rank q into recv
	// (packed in rank order). recvCounts[q] on this rank must equal
	// sendCounts[this rank] on rank q.
	Alltoallv(send Buf, sendCounts []int, recv Buf, recvCounts []int) error
	// Send sends buf to rank dst with the given tag (≥ 0). It may block until
	// the matching Recv has started: write programs that are correct when
	// sends are synchronous.
	Send(buf Buf, dst, tag int) error
	// Recv receives a message from rank src with the given tag into buf and
	// returns the number of elements received; a message longer than buf is
	// an error. Messages between a pair of ranks with the same tag arrive in
	// the order sent.
	Recv(buf Buf, src, tag int) (int, error)
	// Split partitions the communicator: ranks passing the same color form a
	// new communicator, ordered by key and then by old rank. A rank passing
	// Undefined gets a nil Comm.
	Split(color, key int) (Comm, error)
}

// Aborter is implemented by communicators that can end the whole job, on
// every rank, immediately (MPI_Abort).
type Aborter interface {
	Abort(code int)
}

// Freer is implemented by communicators that hold resources to release;
// Free is collective.
type Freer interface {
	Free() error
}

// Unwrapper is implemented by communicators that decorate another one
// (WithStats), so that a backend can find its own communicator under the
// decoration (see Unwrap).
type Unwrapper interface {
	// Unwrap returns the decorated communicator.
	Unwrap() Comm
}

// Unwrap returns the innermost communicator under c's decorations: c
// itself when c does not implement Unwrapper. Traffic on the result is not
// counted by c's Stats.
func Unwrap(c Comm) Comm {
	for {
		u, ok := c.(Unwrapper)
		if !ok {
			return c
		}
		c = u.Unwrap()
	}
}

// Counter is implemented by communicators that count their traffic
// (see WithStats).
type Counter interface {
	Stats() *Stats
}

// ErrAborted is returned by calls on a communicator after another rank
// failed and the job is being torn down.
var ErrAborted = errors.New("collective: aborted by another rank")

// StatsOf returns the Stats of c, or nil when c does not count.
func StatsOf(c Comm) *Stats {
	if k, ok := c.(Counter); ok {
		return k.Stats()
	}
	return nil
}

// SetPhase makes phase the current phase of c's traffic and returns a
// function restoring the previous one, for use as
// `defer collective.SetPhase(c, metrics.PhaseFetch)()`. The phase belongs to c's lane:
// the Stats' own, shared by every communicator split from a WithStats one,
// or that of a duplicate made by Dup and of the communicators split from it.
// It does nothing when c does not count.
func SetPhase(c Comm, phase string) (restore func()) {
	if k, ok := c.(*counted); ok {
		prev := k.setPhase(phase)
		return func() { k.setPhase(prev) }
	}
	s := StatsOf(c)
	if s == nil {
		return func() {}
	}
	prev := s.SetPhase(phase)
	return func() { s.SetPhase(prev) }
}

// PhaseOf returns the current phase of c's traffic (see SetPhase), or ""
// when c does not count.
func PhaseOf(c Comm) string {
	if k, ok := c.(*counted); ok {
		return k.phase()
	}
	if s := StatsOf(c); s != nil {
		return s.Phase()
	}
	return ""
}

// Abort ends the job through c when it supports it and reports whether it
// did.
func Abort(c Comm, code int) bool {
	if a, ok := c.(Aborter); ok {
		a.Abort(code)
		return true
	}
	return false
}

// Free releases c's resources when it holds any.
func Free(c Comm) error {
	if f, ok := c.(Freer); ok {
		return f.Free()
	}
	return nil
}

// CheckCounts validates counts for a communicator of size p and returns
// their sum. Backends call it before communicating.
func CheckCounts(what string, counts []int, p int) (int, error) {
	if len(counts) != p {
		return 0, fmt.Errorf("collective: %s: %d counts for %d ranks", what, len(counts), p)
	}
	sum := 0
	for q, c := range counts {
		if c < 0 {
			return 0, fmt.Errorf("collective: %s: negative count %d for rank %d", what, c, q)
		}
		sum += c
	}
	return sum, nil
}

// NodeSplitter is implemented by communicators that can group the ranks
// sharing a node (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED).
type NodeSplitter interface {
	SplitNode() (Comm, error)
}
