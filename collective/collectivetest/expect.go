package collectivetest

// Expected volumes, derived here independently of package collective's
// closed forms by summing the messages of each algorithm one by one, so that
// the suite checks the accounting instead of restating it.

// expBcast: the root sends nbytes to every other rank.
func expBcast(rank, root, p int, nbytes int64) (sent, recv int64) {
	for q := 0; q < p; q++ {
		if q == root || rank == q && rank == root {
			continue
		}
		if rank == root {
			sent += nbytes // root → q
		}
		if rank == q {
			recv += nbytes
		}
	}
	return sent, recv
}

// expAllreduce simulates reduce-scatter then allgather over blocks: block q
// holds elements i with owner(i) == q, where the first n mod p ranks own one
// more element and blocks are contiguous.
func expAllreduce(rank, p, n, es int) (sent, recv int64) {
	owner := make([]int, n)
	i := 0
	for q := 0; q < p; q++ {
		size := n / p
		if q < n%p {
			size++
		}
		for j := 0; j < size; j++ {
			owner[i] = q
			i++
		}
	}
	for _, o := range owner {
		if o != rank {
			sent += int64(es) // reduce-scatter: my copy of element goes to its owner
			recv += int64(es) // allgather: the reduced element comes back
		} else {
			sent += int64(es) * int64(p-1) // allgather: my reduced element to all others
			recv += int64(es) * int64(p-1) // reduce-scatter: every other rank's copy
		}
	}
	return sent, recv
}

// expAllgatherv: my part to each other rank; each other rank's part to me.
func expAllgatherv(rank int, counts []int, es int) (sent, recv int64) {
	for q := range counts {
		if q != rank {
			sent += int64(counts[rank] * es)
			recv += int64(counts[q] * es)
		}
	}
	return sent, recv
}

// expAlltoallv: message by message.
func expAlltoallv(rank int, sc, rc []int, es int) (sent, recv int64) {
	for q := range sc {
		if q != rank {
			sent += int64(sc[q] * es)
			recv += int64(rc[q] * es)
		}
	}
	return sent, recv
}

// expSplit: an allgather of (color, key) as two int64 per rank.
func expSplit(p int) (sent, recv int64) {
	counts := make([]int, p)
	for i := range counts {
		counts[i] = 2
	}
	return expAllgatherv(0, counts, 8)
}
