package spgemm

import (
	"unsafe"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// MatrixChecksum returns a hash of the entries of a: the wrapping sum over
// the stored entries of a mix of their row, column and value bits (a
// floating-point zero of either sign counts as +0; a pattern matrix hashes
// its positions only). It does not depend on the order of the entries
// within a row, so a matrix and any distribution of it (Checksum) give the
// same hash, whatever the layout.
func MatrixChecksum[T sparse.Scalar](a *sparse.Matrix[T]) uint64 {
	return blockHash(a, 0, 0)
}

// Checksum returns MatrixChecksum of the matrix that d distributes, on
// every rank, without gathering it: each rank hashes copy 0 of its block,
// and the hashes are summed over an allgather of one int64 per rank. It is
// collective over c, whose ranks must hold every block of d.
func Checksum[T sparse.Scalar](c collective.Comm, d *Dist[T]) (uint64, error) {
	var h uint64
	if d.Replica == 0 {
		h = blockHash(d.Local, d.RowOff(), d.ColOff())
	}
	all, _, err := collective.AllgatherSlice(c, []int64{int64(h)})
	if err != nil {
		return 0, err
	}
	var s uint64
	for _, x := range all {
		s += uint64(x)
	}
	return s, nil
}

func blockHash[T sparse.Scalar](a *sparse.Matrix[T], rowOff, colOff int64) uint64 {
	var s uint64
	for i := range a.NRows {
		hi := mix64(uint64(rowOff+i) + 0x9e3779b97f4a7c15)
		for q := a.Indptr[i]; q < a.Indptr[i+1]; q++ {
			h := mix64(hi ^ uint64(colOff+a.Indices[q])*0xbf58476d1ce4e5b9)
			if a.Values != nil {
				h = mix64(h ^ bitsOf(a.Values[q]))
			}
			s += h
		}
	}
	return s
}

// bitsOf returns the bits of v, with a zero of either sign as 0.
func bitsOf[T sparse.Scalar](v T) uint64 {
	var z T
	if v == z {
		return 0
	}
	switch unsafe.Sizeof(v) {
	case 1:
		return uint64(*(*uint8)(unsafe.Pointer(&v)))
	case 4:
		return uint64(*(*uint32)(unsafe.Pointer(&v)))
	}
	return *(*uint64)(unsafe.Pointer(&v))
}

// mix64 is the finalizer of SplitMix64.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
