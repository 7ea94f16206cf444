package collective

// Codec16 converts between float32 and a 16-bit float format (binary16 or
// bfloat16, see internal/f16): Decode writes the values of src into dst,
// Encode the rounded words of src into dst; both write len(src) elements.
type Codec16 struct {
	Decode func(dst []float32, src []uint16)
	Encode func(dst []uint16, src []float32)
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
// Alltoallv and one Allgatherv. acc is float32 scratch, used when it holds
// at least 2·⌈len(x)/p⌉ elements and allocated otherwise (nil is fine).
//
// AllreduceSum16 is collective over c. With one rank x is left as it is.
func AllreduceSum16(c Comm, x []uint16, codec Codec16, acc []float32) error {
	p, r, n := c.Size(), c.Rank(), len(x)
	if p == 1 {
		return nil
	}
	counts := make([]int, p)
	off := 0
	for q := range p {
		counts[q] = AllreduceBlock(q, p, n)
		if q < r {
			off += counts[q]
		}
	}
	b := counts[r]
	recvCounts := make([]int, p)
	for q := range recvCounts {
		recvCounts[q] = b
	}
	// x is already packed in rank order: block q goes to rank q.
	recv := make([]uint16, p*b)
	if err := c.Alltoallv(BufOf(x), counts, BufOf(recv), recvCounts); err != nil {
		return err
	}
	if cap(acc) < 2*b {
		acc = make([]float32, 2*b)
	}
	sum, tmp := acc[:b], acc[b:2*b]
	codec.Decode(sum, recv[:b])
	for q := 1; q < p; q++ {
		codec.Decode(tmp, recv[q*b:(q+1)*b])
		for i, v := range tmp {
			sum[i] += v
		}
	}
	own := recv[:b] // the received copies are summed: reuse their space
	codec.Encode(own, sum)
	return c.Allgatherv(BufOf(own), BufOf(x), counts)
}
