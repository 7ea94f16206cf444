package collective

import "fmt"

// BlockOf returns the block of bounds that holds x: the b with
// bounds[b] ≤ x < bounds[b+1]. bounds are the len(bounds)−1 blocks of a
// distribution of consecutive ids (row bounds), non-decreasing; empty
// blocks are skipped, so the block returned is never empty. It is a binary
// search, O(log len(bounds)).
// It will panic if x lies outside [bounds[0], bounds[len(bounds)−1]).
func BlockOf(bounds []int64, x int64) int {
	n := len(bounds) - 1
	if n < 1 || x < bounds[0] || x >= bounds[n] {
		panic("collective: BlockOf: id outside the bounds")
	}
	// The first block whose range ends after x.
	lo, hi := 0, n-1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bounds[m+1] > x {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// Halo returns the values of ids held by other ranks: out[i] is the value
// that rank owner(ids[i]) gives for ids[i] through answer. Each rank asks
// the owners of the ids it needs and answers what it is asked, so answer
// is called on the owner, once for each time an id is asked of it, in the
// asking ranks' order and then in the order of their ids. ids may repeat
// (each occurrence is asked) and need not be sorted; callers that want
// each id sent once pass them distinct.
//
// Halo is collective over c: every rank must call it, with the same owner
// function. It sends an Alltoallv of the request counts and one of the ids
// (int64), then one Alltoallv of the values, whose counts both sides
// already know: 8 + sizeof(V) bytes per requested id, plus 8 bytes per
// pair of ranks. It returns an error if communication fails or if answer
// reports (ok false) that this rank does not hold an id it was asked for;
// the rank that asked then waits, so such an error means the ranks
// disagree on the owners and the caller must abort. The caller owns the
// returned slice. It will panic if owner returns a rank outside
// [0, c.Size()).
func Halo[V Elem](c Comm, ids []int64, owner func(id int64) int, answer func(id int64) (v V, ok bool)) ([]V, error) {
	p := c.Size()
	ask := make([][]int64, p)
	from := make([]int32, len(ids))
	for i, x := range ids {
		q := owner(x)
		from[i] = int32(q)
		ask[q] = append(ask[q], x)
	}
	asked, err := AlltoallvSlices(c, ask)
	if err != nil {
		return nil, err
	}
	sendCounts, recvCounts := make([]int, p), make([]int, p)
	var reply []V
	for q, xs := range asked {
		sendCounts[q] = len(xs)
		for _, x := range xs {
			v, ok := answer(x)
			if !ok {
				return nil, fmt.Errorf("collective: Halo: rank %d asked rank %d for id %d, which it does not hold", q, c.Rank(), x)
			}
			reply = append(reply, v)
		}
	}
	off := make([]int, p)
	for q := range ask {
		recvCounts[q] = len(ask[q])
		if q > 0 {
			off[q] = off[q-1] + recvCounts[q-1]
		}
	}
	got, err := AlltoallvFlat(c, reply, sendCounts, recvCounts)
	if err != nil {
		return nil, err
	}
	out := make([]V, len(ids))
	for i, q := range from {
		out[i] = got[off[q]]
		off[q]++
	}
	return out, nil
}
