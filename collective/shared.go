package collective

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"gnnmpi/dense"
)

// SharedMemory is implemented by communicators whose ranks can map one
// another's memory: the in-process backend always, MPI when every rank of
// the communicator runs on one host (MPI-3 shared windows). AllocShared is
// the way to use it through decorations.
type SharedMemory interface {
	// AllocShared allocates, collectively, nbytes on every rank in memory
	// that every rank maps, and returns them. It returns ErrNotShared,
	// on every rank, when the ranks cannot share memory.
	AllocShared(nbytes int) (Shared, error)
}

// Shared is memory allocated by SharedMemory.AllocShared: one segment per
// rank, each readable and writable by every rank.
type Shared interface {
	// Segment returns rank r's segment.
	Segment(r int) []byte
	// Sync is collective: a barrier that also orders memory, so that every
	// rank's writes to the segments before it are seen by every rank's
	// reads after it.
	Sync() error
	// Free releases the segments; it is collective. They must not be used
	// afterwards.
	Free() error
}

// ErrNotShared reports that a communicator's ranks cannot map one another's
// memory (they run on several hosts, or the backend cannot).
var ErrNotShared = errors.New("collective: the ranks do not share memory")

// AllocShared allocates shared segments of nbytes on every rank of c
// (collective) through the SharedMemory under c's decorations. It returns
// ErrNotShared, on every rank, when there is none or the ranks cannot share
// memory.
func AllocShared(c Comm, nbytes int) (Shared, error) {
	if nbytes < 0 {
		return nil, fmt.Errorf("collective: AllocShared of %d bytes", nbytes)
	}
	m, ok := Unwrap(c).(SharedMemory)
	if !ok {
		return nil, ErrNotShared
	}
	return m.AllocShared(nbytes)
}

// SharedSum sums float32 vectors of one length over the ranks through
// shared memory: an allreduce without messages, for ranks on one host.
// Each rank writes its vector into Local, in place; Sum then makes every
// rank's Local hold the elementwise sums, added in rank order
// (((x₀ + x₁) + x₂) + …, the in-process backend's Allreduce order, so that
// the sums are the same bits there and, with two ranks, under any MPI
// algorithm, addition being commutative).
//
// Sum is a reduce-scatter and an allgather in the segments, with two
// Syncs: after the first, rank r sums its block (AllreduceBlock elements;
// the blocks in rank order) over every rank's segment and writes the sums
// into that block of every segment (only rank r touches block r of any
// segment, so no Sync is needed in between); after the second, every
// rank's own segment holds all the sums, and no rank touches another's
// segment until the next Sum's first Sync. The bytes a rank's block moves
// between segments, those other ranks read from its segment and those it
// writes into theirs, are what AllreduceVolume counts as sent, and Sum
// records them as one Allreduce under c's current phase.
type SharedSum struct {
	c        Comm
	sh       Shared
	n        int
	seg      [][]float32 // every rank's segment
	lo       []int       // block q is [lo[q], lo[q+1])
	acc      []float32   // a cache-sized block of sums in progress
	lastWait time.Duration
}

// sharedSumTile is the number of elements summed at a time: the sums
// stay in the first-level cache while every rank's block is added.
const sharedSumTile = 4096

// NewSharedSum allocates, collectively, the segments for sums of n
// float32 over c. It returns ErrNotShared, on every rank, when c's ranks
// cannot share memory.
func NewSharedSum(c Comm, n int) (*SharedSum, error) {
	if n < 0 {
		return nil, fmt.Errorf("collective: SharedSum of %d elements", n)
	}
	p := c.Size()
	sh, err := AllocShared(c, 4*n)
	if err != nil {
		return nil, err
	}
	s := &SharedSum{c: c, sh: sh, n: n, seg: make([][]float32, p), lo: make([]int, p+1)}
	for q := range p {
		b := sh.Segment(q)
		if len(b) != 4*n {
			sh.Free()
			return nil, fmt.Errorf("collective: SharedSum: rank %d's segment holds %d bytes, want %d", q, len(b), 4*n)
		}
		if n > 0 {
			s.seg[q] = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
		}
		s.lo[q+1] = s.lo[q] + AllreduceBlock(q, p, n)
	}
	s.acc = make([]float32, min(sharedSumTile, n))
	return s, nil
}

// Local returns this rank's vector: write it before Sum; after Sum it
// holds the sums until the next write.
func (s *SharedSum) Local() []float32 { return s.seg[s.c.Rank()][:s.n:s.n] }

// Sum sums every rank's Local over the ranks, in rank order, into every
// rank's Local (collective).
func (s *SharedSum) Sum() error {
	t0 := time.Now()
	r, p := s.c.Rank(), s.c.Size()
	if err := s.sh.Sync(); err != nil {
		return err
	}
	s.lastWait = time.Since(t0)
	for lo := s.lo[r]; p > 1 && lo < s.lo[r+1]; lo += len(s.acc) {
		hi := min(lo+len(s.acc), s.lo[r+1])
		acc := s.acc[:hi-lo]
		dense.Add(acc, s.seg[0][lo:hi], s.seg[1][lo:hi])
		for q := 2; q < p; q++ {
			dense.Add(acc, acc, s.seg[q][lo:hi])
		}
		for q := range p {
			copy(s.seg[q][lo:hi], acc)
		}
	}
	err := s.sh.Sync()
	sent, recv := AllreduceVolume(r, p, s.n, 4)
	Record(s.c, OpAllreduce, sent, recv, time.Since(t0))
	return err
}

// Wait returns how long the last Sum waited in its first Sync: for the
// slowest rank to write its Local, plus one barrier's latency.
func (s *SharedSum) Wait() time.Duration { return s.lastWait }

// Free releases the segments (collective).
func (s *SharedSum) Free() error { return s.sh.Free() }
