package collective

// The logical communication volume of each call, in bytes, as a rank
// counts it. These closed forms define the accounting of every backend:
// they model the bandwidth-optimal algorithm of each collective, and count
// only data that crosses between different ranks.

// BcastVolume returns the bytes rank sends and receives in a broadcast of
// nbytes from root among p ranks: the root sends the buffer to each of the
// p−1 others, and each of them receives it once.
func BcastVolume(rank, root, p int, nbytes int64) (sent, recv int64) {
	if p == 1 {
		return 0, 0
	}
	if rank == root {
		return int64(p-1) * nbytes, 0
	}
	return 0, nbytes
}

// AllreduceBlock returns the number of elements of an n-element vector that
// rank owns in the reduce-scatter of an allreduce among p ranks: n/p, with
// the first n mod p ranks owning one more.
func AllreduceBlock(rank, p, n int) int {
	b := n / p
	if rank < n%p {
		b++
	}
	return b
}

// AllreduceVolume returns the bytes rank sends and receives in an allreduce
// of n elements of elemSize bytes among p ranks, modelled as reduce-scatter
// followed by allgather (the bandwidth-optimal algorithm, Rabenseifner; ring
// allreduce moves the same volume): the rank sends every block but its own
// (n − b) and later sends its reduced block to the p−1 others ((p−1)·b), and
// receives the same amounts, where b = AllreduceBlock(rank, p, n). Summed
// over ranks this is 2(p−1)·n elements.
func AllreduceVolume(rank, p, n, elemSize int) (sent, recv int64) {
	if p == 1 {
		return 0, 0
	}
	b := AllreduceBlock(rank, p, n)
	v := int64(n-b+(p-1)*b) * int64(elemSize)
	return v, v
}

// AllgathervVolume returns the bytes rank sends and receives in an
// allgatherv with the given per-rank counts: it sends its own part to each of
// the p−1 others and receives every other rank's part.
func AllgathervVolume(rank int, counts []int, elemSize int) (sent, recv int64) {
	p := len(counts)
	total := 0
	for _, c := range counts {
		total += c
	}
	sent = int64(p-1) * int64(counts[rank]) * int64(elemSize)
	recv = int64(total-counts[rank]) * int64(elemSize)
	return sent, recv
}

// AlltoallvVolume returns the bytes rank sends and receives in an alltoallv:
// everything addressed to or coming from other ranks.
func AlltoallvVolume(rank int, sendCounts, recvCounts []int, elemSize int) (sent, recv int64) {
	for q := range sendCounts {
		if q == rank {
			continue
		}
		sent += int64(sendCounts[q]) * int64(elemSize)
		recv += int64(recvCounts[q]) * int64(elemSize)
	}
	return sent, recv
}

// SplitVolume returns the bytes rank sends and receives in Split among p
// ranks: an allgather of every rank's (color, key), two int64 each.
func SplitVolume(p int) (sent, recv int64) {
	return AllgathervVolume(0, make2(p), 8)
}

func make2(p int) []int {
	c := make([]int, p)
	for i := range c {
		c[i] = 2
	}
	return c
}
