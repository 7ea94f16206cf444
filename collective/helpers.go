package collective

import (
	"errors"
	"fmt"
)

// AllreduceSlice reduces x in place over all ranks of c.
func AllreduceSlice[E Elem](c Comm, x []E, op Op) error {
	b := BufOf(x)
	return c.Allreduce(b, b, op)
}

// AllreduceScalar returns the reduction of v over all ranks of c.
func AllreduceScalar[E Elem](c Comm, v E, op Op) (E, error) {
	x := []E{v}
	err := AllreduceSlice(c, x, op)
	return x[0], err
}

// AllreduceVars replaces each *v by its reduction over all ranks of c, in
// one Allreduce: several named scalars reduced together, without a slice
// whose slots the reader must remember.
func AllreduceVars[E Elem](c Comm, op Op, vs ...*E) error {
	x := make([]E, len(vs))
	for i, v := range vs {
		x[i] = *v
	}
	if err := AllreduceSlice(c, x, op); err != nil {
		return err
	}
	for i, v := range vs {
		*v = x[i]
	}
	return nil
}

// BcastSlice broadcasts x from root; every rank passes a slice of the same
// length.
func BcastSlice[E Elem](c Comm, x []E, root int) error {
	return c.Bcast(BufOf(x), root)
}

// AllgatherCounts returns every rank's n, in rank order.
func AllgatherCounts(c Comm, n int) ([]int, error) {
	p := c.Size()
	ones := make([]int, p)
	for i := range ones {
		ones[i] = 1
	}
	all := make([]int64, p)
	if err := c.Allgatherv(BufOf([]int64{int64(n)}), BufOf(all), ones); err != nil {
		return nil, err
	}
	out := make([]int, p)
	for i, v := range all {
		out[i] = int(v)
	}
	return out, nil
}

// AllgatherSlice concatenates every rank's x in rank order, exchanging the
// lengths first. It returns the concatenation and the per-rank lengths.
func AllgatherSlice[E Elem](c Comm, x []E) ([]E, []int, error) {
	counts, err := AllgatherCounts(c, len(x))
	if err != nil {
		return nil, nil, err
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	out := make([]E, total)
	if err := c.Allgatherv(BufOf(x), BufOf(out), counts); err != nil {
		return nil, nil, err
	}
	return out, counts, nil
}

// AlltoallCounts sends sendCounts[q] to rank q and returns what each rank
// sent to this one: the receive counts of a matching Alltoallv.
func AlltoallCounts(c Comm, sendCounts []int) ([]int, error) {
	p := c.Size()
	if len(sendCounts) != p {
		return nil, fmt.Errorf("collective: AlltoallCounts: %d counts for %d ranks", len(sendCounts), p)
	}
	ones := make([]int, p)
	for i := range ones {
		ones[i] = 1
	}
	s := make([]int64, p)
	for i, v := range sendCounts {
		s[i] = int64(v)
	}
	r := make([]int64, p)
	if err := c.Alltoallv(BufOf(s), ones, BufOf(r), ones); err != nil {
		return nil, err
	}
	out := make([]int, p)
	for i, v := range r {
		out[i] = int(v)
	}
	return out, nil
}

// AlltoallvSlices sends parts[q] to rank q and returns the slices received
// from each rank, exchanging the counts first (two calls: counts, then
// data). The returned slices alias one buffer.
func AlltoallvSlices[E Elem](c Comm, parts [][]E) ([][]E, error) {
	p := c.Size()
	if len(parts) != p {
		return nil, fmt.Errorf("collective: AlltoallvSlices: %d parts for %d ranks", len(parts), p)
	}
	sendCounts := make([]int, p)
	total := 0
	for q, part := range parts {
		sendCounts[q] = len(part)
		total += len(part)
	}
	send := make([]E, 0, total)
	for _, part := range parts {
		send = append(send, part...)
	}
	recvCounts, err := AlltoallCounts(c, sendCounts)
	if err != nil {
		return nil, err
	}
	recv, err := AlltoallvFlat(c, send, sendCounts, recvCounts)
	if err != nil {
		return nil, err
	}
	out := make([][]E, p)
	off := 0
	for q, n := range recvCounts {
		out[q] = recv[off : off+n : off+n]
		off += n
	}
	return out, nil
}

// AlltoallvFlat is Alltoallv on packed slices with known counts; it
// allocates and returns the receive buffer.
func AlltoallvFlat[E Elem](c Comm, send []E, sendCounts, recvCounts []int) ([]E, error) {
	total := 0
	for _, n := range recvCounts {
		total += n
	}
	recv := make([]E, total)
	err := c.Alltoallv(BufOf(send), sendCounts, BufOf(recv), recvCounts)
	return recv, err
}

// Agree makes every rank fail when any rank's err is not nil, so that a
// rank that cannot go on (a file it cannot read, a bad input of its own)
// does not leave the others waiting in their next collective. The lowest
// failing rank returns its err; the others return an error that carries
// that rank's message and wraps ErrAborted (package main then lets the
// failing rank report and abort). It returns nil on every rank when err is
// nil on every rank.
//
// Agree is collective over c: an Allreduce, and two Bcasts when some rank
// failed.
func Agree(c Comm, err error) error {
	p := c.Size()
	first := []int64{int64(p)}
	if err != nil {
		first[0] = int64(c.Rank())
	}
	if e := AllreduceSlice(c, first, Min); e != nil {
		return errors.Join(err, e)
	}
	root := int(first[0])
	if root == p {
		return nil
	}
	var msg []byte
	if c.Rank() == root {
		msg = []byte(err.Error())
	}
	size := []int64{int64(len(msg))}
	if e := BcastSlice(c, size, root); e != nil {
		return errors.Join(err, e)
	}
	if c.Rank() != root {
		msg = make([]byte, size[0])
	}
	if len(msg) > 0 {
		if e := BcastSlice(c, msg, root); e != nil {
			return errors.Join(err, e)
		}
	}
	if c.Rank() == root {
		return err
	}
	return fmt.Errorf("rank %d failed: %s (%w)", root, msg, ErrAborted)
}
