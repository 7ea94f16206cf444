package spgemm

import (
	"fmt"
	"unsafe"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// Moving sparse blocks through collectives. A block of known shape travels
// as flat buffers: its row offsets or row lengths (int64, one per row), its
// column indices (int64, one per entry) and, unless it is a pattern, its
// values (one T per entry). The receiver knows the number of rows from the
// layout and learns the number of entries from the row offsets, so no size
// header is sent: a block of r rows and e entries costs 8r + (8+s)e bytes,
// where s is the size of T (0 for a pattern).

// maxChunk bounds the elements of one Bcast: MPI counts are C ints.
const maxChunk = 1 << 30

// bcast broadcasts buf from root in pieces of at most maxChunk elements;
// an empty buf is not sent.
func bcast(c collective.Comm, buf collective.Buf, root int) error {
	n := buf.Len() // the same on every rank, so an empty buffer is skipped by all
	for lo := 0; lo < n; lo += maxChunk {
		if err := c.Bcast(buf.Slice(lo, min(n, lo+maxChunk)), root); err != nil {
			return err
		}
	}
	return nil
}

// valBuf returns a Buf viewing v. Element types that collective has no
// DType for (bool, named types) are viewed as unsigned bytes or integers of
// their size; Bcast and Alltoallv move bits, so the values arrive intact.
func valBuf[T sparse.Scalar](v []T) collective.Buf {
	switch x := any(v).(type) {
	case []float64:
		return collective.BufOf(x)
	case []float32:
		return collective.BufOf(x)
	case []int64:
		return collective.BufOf(x)
	case []int32:
		return collective.BufOf(x)
	}
	var z T
	p := unsafe.Pointer(unsafe.SliceData(v))
	switch unsafe.Sizeof(z) {
	case 1:
		return collective.BufOf(unsafe.Slice((*uint8)(p), len(v)))
	case 4:
		return collective.BufOf(unsafe.Slice((*int32)(p), len(v)))
	case 8:
		return collective.BufOf(unsafe.Slice((*int64)(p), len(v)))
	}
	panic("spgemm: unsupported element size")
}

// bcastBlock broadcasts a block of nrows×ncols from root over c: the root
// passes blk (returned as is), the others nil. valued says whether the
// block has values; all ranks must agree. It costs three Bcast calls (two
// for a pattern): Indptr[1:], Indices, Values.
func bcastBlock[T sparse.Scalar](c collective.Comm, root int, blk *sparse.Matrix[T], nrows, ncols int64, valued bool) (*sparse.Matrix[T], error) {
	me := c.Rank() == root
	if !me {
		blk = &sparse.Matrix[T]{NRows: nrows, NCols: ncols, Indptr: make([]int64, nrows+1)}
	} else if blk.NRows != nrows || blk.NCols != ncols || (blk.Values != nil) != valued {
		return nil, fmt.Errorf("%w: broadcasting a %d×%d block (valued %v) as %d×%d (valued %v)", ErrLayout,
			blk.NRows, blk.NCols, blk.Values != nil, nrows, ncols, valued)
	}
	if err := bcast(c, collective.BufOf(blk.Indptr[1:]), root); err != nil {
		return nil, err
	}
	nnz := blk.Indptr[nrows]
	if !me {
		if nnz < 0 {
			return nil, fmt.Errorf("spgemm: received a block with %d entries", nnz)
		}
		blk.Indices = make([]int64, nnz)
		if valued {
			blk.Values = make([]T, nnz)
		}
	}
	if err := bcast(c, collective.BufOf(blk.Indices), root); err != nil {
		return nil, err
	}
	if valued {
		if err := bcast(c, valBuf(blk.Values), root); err != nil {
			return nil, err
		}
	}
	return blk, nil
}

// exchangeRows sends, to every other rank q of c, rows [bounds[q],
// bounds[q+1]) of a, and returns the pieces received: piece q holds rows
// [bounds[me], bounds[me+1]) of rank q's matrix, piece me is a's own rows
// (not copied). Every rank's a has the same shape and bounds, and is valued
// iff valued. Three Alltoallv calls: row lengths, column indices, values.
// When the rows for the other ranks are contiguous in a (this rank is the
// first or the last), a's arrays are sent without a copy.
func exchangeRows[T sparse.Scalar](c collective.Comm, a *sparse.Matrix[T], bounds []int64, valued bool) ([]*sparse.Matrix[T], error) {
	p, me := c.Size(), c.Rank()
	mine := bounds[me+1] - bounds[me]
	sendRows, recvRows := make([]int, p), make([]int, p)
	sendNNZ := make([]int, p)
	for q := range p {
		if q != me {
			sendRows[q], recvRows[q] = int(bounds[q+1]-bounds[q]), int(mine)
			sendNNZ[q] = int(a.Indptr[bounds[q+1]] - a.Indptr[bounds[q]])
		}
	}
	// The rows for the others: [0, bounds[me]) and [bounds[me+1], m).
	lo, hi := bounds[me], bounds[me+1]
	var ind []int64
	var val []T
	switch {
	case lo == 0:
		ind = a.Indices[a.Indptr[hi]:]
		if valued {
			val = a.Values[a.Indptr[hi]:]
		}
	case hi == a.NRows:
		ind = a.Indices[:a.Indptr[lo]]
		if valued {
			val = a.Values[:a.Indptr[lo]]
		}
	default:
		ind = append(a.Indices[:a.Indptr[lo]:a.Indptr[lo]], a.Indices[a.Indptr[hi]:]...)
		if valued {
			val = append(a.Values[:a.Indptr[lo]:a.Indptr[lo]], a.Values[a.Indptr[hi]:]...)
		}
	}
	deg := append(rowLengths(a, 0, lo), rowLengths(a, hi, a.NRows)...)
	rdeg, rind, rval, recvNNZ, err := alltoallRows(c, deg, ind, val, sendRows, recvRows, sendNNZ, valued)
	if err != nil {
		return nil, err
	}
	out := make([]*sparse.Matrix[T], p)
	rd, re := 0, 0
	for q := range p {
		if q == me {
			out[q] = sparse.RowRange(a, lo, hi)
			continue
		}
		pc := &sparse.Matrix[T]{NRows: mine, NCols: a.NCols, Indptr: make([]int64, mine+1)}
		for i, d := range rdeg[rd : rd+int(mine)] {
			pc.Indptr[i+1] = pc.Indptr[i] + d
		}
		n := recvNNZ[q]
		pc.Indices = rind[re : re+n : re+n]
		if valued {
			pc.Values = rval[re : re+n : re+n]
		}
		out[q] = pc
		rd += int(mine)
		re += n
	}
	return out, nil
}

// alltoallRows sends rows in wire form to every rank and receives the rows
// every rank sends to this one: their lengths deg, sendRows[q] of them to
// rank q, then their column indices ind and, when valued, their values
// val, sendNNZ[q] entries to rank q. It returns the lengths received
// (recvRows[q] from rank q, in rank order), the entries they add up to,
// and how many entries came from each rank. Two Alltoallv calls over c,
// three when valued: 8 bytes a row and 8+s an entry, as the wire format
// above. It is collective over c.
func alltoallRows[T sparse.Scalar](c collective.Comm, deg, ind []int64, val []T, sendRows, recvRows, sendNNZ []int, valued bool) (rdeg, rind []int64, rval []T, recvNNZ []int, err error) {
	rdeg, err = collective.AlltoallvFlat(c, deg, sendRows, recvRows)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	recvNNZ = make([]int, len(recvRows))
	x := 0
	for q, r := range recvRows {
		for _, d := range rdeg[x : x+r] {
			recvNNZ[q] += int(d)
		}
		x += r
	}
	rind, err = collective.AlltoallvFlat(c, ind, sendNNZ, recvNNZ)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if valued {
		rval = make([]T, len(rind))
		if err := c.Alltoallv(valBuf(val), sendNNZ, valBuf(rval), recvNNZ); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	return rdeg, rind, rval, recvNNZ, nil
}

// grow returns s resized to n elements, reusing its array when it is large
// enough (the contents are to be overwritten).
func grow[E any](s []E, n int64) []E {
	if int64(cap(s)) >= n {
		return s[:n]
	}
	return make([]E, n)
}

// bcastPieces broadcasts, like bcastBlock, the nrows×ncols block blk of
// root over c, but hands it to fn in pieces of consecutive rows of at most
// limit entries each (a single longer row is a piece of its own): the row
// offsets are broadcast whole first, so every rank cuts the same pieces,
// then each piece's indices and values, and fn(lo, hi, piece) runs on
// every rank for rows [lo, hi) of the block before the next piece is
// received. A rank other than root then holds one piece at a time, in
// arrays reused from piece to piece and taken from spare when large
// enough; the bytes sent are bcastBlock's. It returns the arrays the
// pieces were received into, for the next call's spare (nil on root).
func bcastPieces[T sparse.Scalar](c collective.Comm, root int, blk *sparse.Matrix[T], nrows, ncols int64, valued bool, limit int64,
	spare *sparse.Matrix[T], fn func(lo, hi int64, piece *sparse.Matrix[T]) error) (*sparse.Matrix[T], error) {
	me := c.Rank() == root
	if spare == nil {
		spare = &sparse.Matrix[T]{}
	}
	ptr := grow(spare.Indptr, nrows+1)
	if me {
		if blk.NRows != nrows || blk.NCols != ncols || (blk.Values != nil) != valued {
			return nil, fmt.Errorf("%w: broadcasting a %d×%d block (valued %v) as %d×%d (valued %v)", ErrLayout,
				blk.NRows, blk.NCols, blk.Values != nil, nrows, ncols, valued)
		}
		ptr = blk.Indptr
	} else {
		ptr[0] = 0
	}
	if err := bcast(c, collective.BufOf(ptr[1:]), root); err != nil {
		return nil, err
	}
	if !me && ptr[nrows] < 0 {
		return nil, fmt.Errorf("spgemm: received a block with %d entries", ptr[nrows])
	}
	recv := &sparse.Matrix[T]{Indices: spare.Indices[:0], Values: spare.Values[:0]}
	for lo := int64(0); lo < nrows || lo == 0; {
		hi := lo + 1
		for hi < nrows && ptr[hi+1]-ptr[lo] <= limit {
			hi++
		}
		hi = min(hi, nrows)
		var piece *sparse.Matrix[T]
		if me {
			piece = sparse.RowRange(blk, lo, hi)
		} else {
			n := ptr[hi] - ptr[lo]
			piece = &sparse.Matrix[T]{NRows: hi - lo, NCols: ncols, Indptr: make([]int64, hi-lo+1)}
			for x := range piece.Indptr {
				piece.Indptr[x] = ptr[lo+int64(x)] - ptr[lo]
			}
			recv.Indices = grow(recv.Indices, n)
			piece.Indices = recv.Indices
			if valued {
				recv.Values = grow(recv.Values, n)
				piece.Values = recv.Values
			}
		}
		if err := bcast(c, collective.BufOf(piece.Indices), root); err != nil {
			return nil, err
		}
		if valued {
			if err := bcast(c, valBuf(piece.Values), root); err != nil {
				return nil, err
			}
		}
		if err := fn(lo, hi, piece); err != nil {
			return nil, err
		}
		lo = hi
		if nrows == 0 {
			break
		}
	}
	if me {
		return nil, nil
	}
	recv.Indptr = ptr
	return recv, nil
}
