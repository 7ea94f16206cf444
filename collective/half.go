package collective

// Codec16 converts between float32 and a 16-bit float format (binary16 or
// bfloat16, see internal/f16): Decode writes the values of src into dst,
// Encode the rounded words of src into dst, and Add adds the values of
// src to dst (dst[i] += value(src[i]), in float32); each handles
// len(src) elements. Add may be nil: Decode and a loop then do its work.
type Codec16 struct {
	Decode func(dst []float32, src []uint16)
	Encode func(dst []uint16, src []float32)
	Add    func(dst []float32, src []uint16)
}

// Scratch16 is AllreduceSum16's reusable scratch: the zero value is ready,
// and a Scratch16 passed to every call saves its allocations. It must not
// be shared by concurrent calls.
type Scratch16 struct {
	counts, recvCounts []int
	recv               []uint16
	acc, tmp           []float32
}

// AllreduceSum16 replaces x, a vector of 16-bit floats of the same length
// on every rank, by its element-wise sum over the ranks of c, for formats
// that MPI cannot add (it has no bfloat16 nor binary16 type). It is a
// reduce-scatter followed by an allgather built on Alltoallv and
// Allgatherv: rank r owns block r of x (AllreduceBlock elements, blocks in
// rank order), receives every rank's copy of it, adds them in float32 in
// rank order (0, 1, …, p−1), rounds the sum once with codec.Encode and
// sends the rounded block to every rank. The result is therefore the same
// on every rank and on every backend, and depends only on the inputs and
// p. It sends and receives exactly AllreduceVolume(rank, p, len(x), 2)
// bytes, half of a float32 Allreduce of the same length, counted as one
// Alltoallv and one Allgatherv. s is scratch kept between calls, or nil.
//
// AllreduceSum16 is collective over c. With one rank x is left as it is.
func AllreduceSum16(c Comm, x []uint16, codec Codec16, s *Scratch16) error {
	p, r, n := c.Size(), c.Rank(), len(x)
	if p == 1 {
		return nil
	}
	if s == nil {
		s = new(Scratch16)
	}
	s.counts, s.recvCounts = resize(s.counts, p), resize(s.recvCounts, p)
	counts, recvCounts := s.counts, s.recvCounts
	for q := range p {
		counts[q] = AllreduceBlock(q, p, n)
	}
	b := counts[r]
	for q := range recvCounts {
		recvCounts[q] = b
	}
	// x is already packed in rank order: block q goes to rank q.
	s.recv = resize(s.recv, p*b)
	recv := s.recv
	if err := c.Alltoallv(BufOf(x), counts, BufOf(recv), recvCounts); err != nil {
		return err
	}
	s.acc = resize(s.acc, b)
	sum := s.acc
	codec.Decode(sum, recv[:b])
	for q := 1; q < p; q++ {
		src := recv[q*b : (q+1)*b]
		if codec.Add != nil {
			codec.Add(sum, src)
			continue
		}
		s.tmp = resize(s.tmp, b)
		codec.Decode(s.tmp, src)
		for i, v := range s.tmp {
			sum[i] += v
		}
	}
	own := recv[:b] // the received copies are summed: reuse their space
	codec.Encode(own, sum)
	return c.Allgatherv(BufOf(own), BufOf(x), counts)
}

// resize returns s with length n, reallocated only when its capacity is
// short; the contents are not kept.
func resize[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}
