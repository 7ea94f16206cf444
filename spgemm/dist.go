package spgemm

import (
	"errors"
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// ErrLayout is wrapped by the errors returned for distributed operands whose
// layout does not fit the product or the communicator.
var ErrLayout = errors.New("spgemm: layout does not fit")

// Dist is one rank's part of a distributed sparse matrix: the block (I, J)
// of a cut of its rows and columns into blocks, possibly one of several
// copies of that block.
//
// Local holds the block with indices local to it: its entry (r, s) is the
// entry (RowBounds[I]+r, ColBounds[J]+s) of the whole matrix. Every rank of
// a distributed matrix has the same M, N, RowBounds and ColBounds, and all
// blocks are pattern (nil Values) or all hold values.
//
// The layouts the products use:
//
//   - 1D over p ranks: p row blocks, one column block, rank r holds block
//     (r, 0) (Distribute1D; the result of Mul1D and Mul15D).
//   - 1.5D on a (p/c)×c grid: p/c row blocks, one column block; the c ranks
//     of grid row i hold copies 0…c−1 of block (i, 0) (Distribute15D).
//   - 2D on a pr×pc grid: pr row blocks and pc column blocks, the rank at
//     (i, j) holds block (i, j) (Distribute2D; the result of Mul2D).
type Dist[T sparse.Scalar] struct {
	// M and N are the dimensions of the whole matrix.
	M, N int64
	// RowBounds cut the rows into blocks: row block i is
	// [RowBounds[i], RowBounds[i+1]). It starts at 0 and ends at M, and
	// blocks may be empty. ColBounds cut the columns likewise.
	RowBounds, ColBounds []int64
	// I and J are the coordinates of this rank's block.
	I, J int
	// Replica numbers this rank's copy of block (I, J) among the ranks
	// holding one, from 0. Gather and Checksum read copy 0 only.
	Replica int
	// Local is the block, RowBounds[I+1]−RowBounds[I] by
	// ColBounds[J+1]−ColBounds[J], with local indices.
	Local *sparse.Matrix[T]
}

// RowOff returns the global index of the first row of the block.
func (d *Dist[T]) RowOff() int64 { return d.RowBounds[d.I] }

// ColOff returns the global index of the first column of the block.
func (d *Dist[T]) ColOff() int64 { return d.ColBounds[d.J] }

// Validate reports whether d is consistent on this rank: bounds that cut
// M and N, block coordinates inside them, and a valid local block of the
// block's size.
func (d *Dist[T]) Validate() error {
	if err := checkBounds("row", d.RowBounds, d.M); err != nil {
		return err
	}
	if err := checkBounds("column", d.ColBounds, d.N); err != nil {
		return err
	}
	if d.I < 0 || d.I >= len(d.RowBounds)-1 || d.J < 0 || d.J >= len(d.ColBounds)-1 || d.Replica < 0 {
		return fmt.Errorf("%w: block (%d,%d) copy %d outside %d×%d blocks", ErrLayout, d.I, d.J, d.Replica, len(d.RowBounds)-1, len(d.ColBounds)-1)
	}
	if d.Local == nil {
		return fmt.Errorf("%w: no local block", ErrLayout)
	}
	m, n := d.RowBounds[d.I+1]-d.RowBounds[d.I], d.ColBounds[d.J+1]-d.ColBounds[d.J]
	if d.Local.NRows != m || d.Local.NCols != n {
		return fmt.Errorf("%w: local block is %d×%d, block (%d,%d) is %d×%d", ErrLayout, d.Local.NRows, d.Local.NCols, d.I, d.J, m, n)
	}
	return d.Local.Validate()
}

func checkBounds(what string, b []int64, n int64) error {
	if len(b) < 2 || b[0] != 0 || b[len(b)-1] != n {
		return fmt.Errorf("%w: %s bounds %v do not cut [0,%d)", ErrLayout, what, b, n)
	}
	for i := 1; i < len(b); i++ {
		if b[i] < b[i-1] {
			return fmt.Errorf("%w: %s bounds %v decrease", ErrLayout, what, b)
		}
	}
	return nil
}

// Bounds returns the boundaries of the even split of n into parts blocks:
// block b is [s[b], s[b+1]), of n/parts elements, the first n mod parts
// blocks one more (as train's schedule and partition.Block split).
// It will panic if n < 0 or parts < 1.
func Bounds(n int64, parts int) []int64 {
	if n < 0 || parts < 1 {
		panic("spgemm: Bounds: n < 0 or parts < 1")
	}
	s := make([]int64, parts+1)
	q, big := n/int64(parts), n%int64(parts)
	for b := range parts {
		s[b+1] = s[b] + q
		if int64(b) < big {
			s[b+1]++
		}
	}
	return s
}

// Distribute returns block (i, j) of a, cut by rowBounds and colBounds, as
// copy replica: the constructor of every layout, for a matrix every rank
// has. It does not communicate. The local block shares Indices and Values
// with a when it spans all columns; neither is modified later by this
// package.
//
// It will panic if the bounds do not cut a's dimensions or (i, j) lies
// outside them.
func Distribute[T sparse.Scalar](a *sparse.Matrix[T], rowBounds, colBounds []int64, i, j, replica int) *Dist[T] {
	if checkBounds("row", rowBounds, a.NRows) != nil || checkBounds("column", colBounds, a.NCols) != nil {
		panic("spgemm: Distribute: bounds do not cut the matrix")
	}
	if i < 0 || i >= len(rowBounds)-1 || j < 0 || j >= len(colBounds)-1 {
		panic("spgemm: Distribute: block outside the bounds")
	}
	blk := sparse.RowRange(a, rowBounds[i], rowBounds[i+1])
	if lo, hi := colBounds[j], colBounds[j+1]; lo != 0 || hi != a.NCols {
		blk = sparse.ColRange(blk, lo, hi)
	}
	return &Dist[T]{M: a.NRows, N: a.NCols, RowBounds: rowBounds, ColBounds: colBounds, I: i, J: j, Replica: replica, Local: blk}
}

// Distribute1D returns this rank's part of a in the 1D layout over c: row
// block c.Rank() of the even split of the rows into c.Size() blocks. It does
// not communicate; every rank must pass the same a.
func Distribute1D[T sparse.Scalar](c collective.Comm, a *sparse.Matrix[T]) *Dist[T] {
	return Distribute(a, Bounds(a.NRows, c.Size()), []int64{0, a.NCols}, c.Rank(), 0, 0)
}

// Distribute15D returns this rank's part of a in the 1.5D layout on g:
// row block g.Row of the even split of the rows into g.PR blocks, copy
// g.Col of g.PC. It does not communicate; every rank must pass the same a.
func Distribute15D[T sparse.Scalar](g *collective.Grid, a *sparse.Matrix[T]) *Dist[T] {
	return Distribute(a, Bounds(a.NRows, g.PR), []int64{0, a.NCols}, g.Row, 0, g.Col)
}

// Distribute2D returns this rank's part of a in the 2D layout on g: block
// (g.Row, g.Col) of the even splits of the rows into g.PR and the columns
// into g.PC blocks. It does not communicate; every rank must pass the same
// a.
func Distribute2D[T sparse.Scalar](g *collective.Grid, a *sparse.Matrix[T]) *Dist[T] {
	return Distribute(a, Bounds(a.NRows, g.PR), Bounds(a.NCols, g.PC), g.Row, g.Col, 0)
}

// BcastMatrix returns, on every rank of c, the matrix a of rank root (a is
// ignored elsewhere and may be nil), so that the Distribute constructors can
// cut it. It is collective over c: a header of 4 int64 (M, N, nnz, whether
// it has values), then NRows+1 row offsets, nnz column indices and the
// values. The root gets a itself back.
func BcastMatrix[T sparse.Scalar](c collective.Comm, a *sparse.Matrix[T], root int) (*sparse.Matrix[T], error) {
	hdr := make([]int64, 4)
	if c.Rank() == root {
		hdr[0], hdr[1], hdr[2] = a.NRows, a.NCols, a.NNZ()
		if a.Values != nil {
			hdr[3] = 1
		}
	}
	if err := collective.BcastSlice(c, hdr, root); err != nil {
		return nil, err
	}
	out := a
	if c.Rank() != root {
		m, nnz := hdr[0], hdr[2]
		if m < 0 || nnz < 0 || hdr[1] < 0 {
			return nil, fmt.Errorf("spgemm: BcastMatrix: bad header %v", hdr)
		}
		out = &sparse.Matrix[T]{NRows: m, NCols: hdr[1], Indptr: make([]int64, m+1), Indices: make([]int64, nnz)}
		if hdr[3] != 0 {
			out.Values = make([]T, nnz)
		}
	}
	if err := bcast(c, collective.BufOf(out.Indptr), root); err != nil {
		return nil, err
	}
	if err := bcast(c, collective.BufOf(out.Indices), root); err != nil {
		return nil, err
	}
	if hdr[3] != 0 {
		if err := bcast(c, valBuf(out.Values), root); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Gather returns the whole matrix on rank root and nil on the others. It is
// collective over c, whose ranks must together hold every block of d (copy
// 0 of each exactly once; other copies send nothing). Each row of the result
// is the concatenation of the row's pieces in the order of the column
// blocks, so a matrix with sorted rows comes back sorted.
//
// The traffic: an allgather of 6 int64 per rank (block, copy, size), then
// the blocks' row lengths, column indices and values sent to the root.
// Gather returns an error wrapping ErrLayout if the blocks do not cover the
// matrix.
func Gather[T sparse.Scalar](c collective.Comm, d *Dist[T], root int) (*sparse.Matrix[T], error) {
	p := c.Size()
	hdr := make([]int64, hdrLen)
	hdr[hdrI], hdr[hdrJ], hdr[hdrReplica] = int64(d.I), int64(d.J), int64(d.Replica)
	hdr[hdrRows], hdr[hdrNNZ] = d.Local.NRows, d.Local.NNZ()
	if d.Local.Values != nil {
		hdr[hdrValued] = 1
	}
	counts := make([]int, p)
	for q := range counts {
		counts[q] = hdrLen
	}
	all := make([]int64, hdrLen*p)
	if err := c.Allgatherv(collective.BufOf(hdr), collective.BufOf(all), counts); err != nil {
		return nil, err
	}
	valued := hdr[hdrValued] != 0
	owner, err := blockOwners(d, all, valued)
	if err != nil {
		return nil, err
	}
	// Everything goes to root; only copy 0 sends.
	primary := d.Replica == 0
	sendCount := func(n int64) []int {
		s := make([]int, p)
		if primary {
			s[root] = int(n)
		}
		return s
	}
	recvCount := func(slot int) []int {
		r := make([]int, p)
		if c.Rank() == root {
			for q := range p {
				if all[hdrLen*q+hdrReplica] == 0 {
					r[q] = int(all[hdrLen*q+slot])
				}
			}
		}
		return r
	}
	var deg, ind []int64
	var val []T
	if primary {
		deg, ind, val = rowLengths(d.Local, 0, d.Local.NRows), d.Local.Indices, d.Local.Values
	}
	gdeg, err := collective.AlltoallvFlat(c, deg, sendCount(d.Local.NRows), recvCount(hdrRows))
	if err != nil {
		return nil, err
	}
	gind, err := collective.AlltoallvFlat(c, ind, sendCount(d.Local.NNZ()), recvCount(hdrNNZ))
	if err != nil {
		return nil, err
	}
	var gval []T
	if valued {
		rc := recvCount(hdrNNZ)
		total := 0
		for _, n := range rc {
			total += n
		}
		gval = make([]T, total)
		if err := c.Alltoallv(valBuf(val), sendCount(d.Local.NNZ()), valBuf(gval), rc); err != nil {
			return nil, err
		}
	}
	if c.Rank() != root {
		return nil, nil
	}
	return assembleBlocks(d, all, owner, gdeg, gind, gval, valued), nil
}

// Slots of the header every rank contributes to Gather's allgather.
const (
	hdrI       = iota // block row
	hdrJ              // block column
	hdrReplica        // copy
	hdrRows           // rows of the local block
	hdrNNZ            // entries of the local block
	hdrValued         // 1 if the block has values
	hdrLen
)

// blockOwners checks the allgathered headers all of Gather and returns,
// for every block x = i·nbj+j of d's layout, the rank holding its copy 0.
func blockOwners[T sparse.Scalar](d *Dist[T], all []int64, valued bool) ([]int, error) {
	nbi, nbj := len(d.RowBounds)-1, len(d.ColBounds)-1
	owner := make([]int, nbi*nbj)
	for x := range owner {
		owner[x] = -1
	}
	for q := range len(all) / hdrLen {
		h := all[hdrLen*q : hdrLen*(q+1)]
		i, j := int(h[hdrI]), int(h[hdrJ])
		if i < 0 || i >= nbi || j < 0 || j >= nbj || h[hdrRows] != d.RowBounds[i+1]-d.RowBounds[i] || (h[hdrValued] != 0) != valued {
			return nil, fmt.Errorf("%w: Gather: rank %d holds block (%d,%d) of %d rows, valued %v", ErrLayout, q, i, j, h[hdrRows], h[hdrValued] != 0)
		}
		if h[hdrReplica] != 0 {
			continue
		}
		if owner[i*nbj+j] >= 0 {
			return nil, fmt.Errorf("%w: Gather: ranks %d and %d both hold copy 0 of block (%d,%d)", ErrLayout, owner[i*nbj+j], q, i, j)
		}
		owner[i*nbj+j] = q
	}
	for x, q := range owner {
		if q < 0 {
			return nil, fmt.Errorf("%w: Gather: no rank holds block (%d,%d)", ErrLayout, x/nbj, x%nbj)
		}
	}
	return owner, nil
}

// assembleBlocks builds Gather's result on the root from the row lengths
// gdeg, column indices gind and values gval received from the ranks in
// rank order (the pieces of rank q start at the prefix sums of the
// headers' counts), each row concatenating its blocks' pieces in column
// block order.
func assembleBlocks[T sparse.Scalar](d *Dist[T], all []int64, owner []int, gdeg, gind []int64, gval []T, valued bool) *sparse.Matrix[T] {
	p, nbj := len(all)/hdrLen, len(d.ColBounds)-1
	dOff, eOff := make([]int64, p+1), make([]int64, p+1)
	for q := range p {
		dOff[q+1], eOff[q+1] = dOff[q], eOff[q]
		if all[hdrLen*q+hdrReplica] == 0 {
			dOff[q+1] += all[hdrLen*q+hdrRows]
			eOff[q+1] += all[hdrLen*q+hdrNNZ]
		}
	}
	out := &sparse.Matrix[T]{NRows: d.M, NCols: d.N, Indptr: make([]int64, d.M+1)}
	for x, q := range owner {
		lo := d.RowBounds[x/nbj]
		for r, n := range gdeg[dOff[q]:dOff[q+1]] {
			out.Indptr[lo+int64(r)+1] += n
		}
	}
	for g := range d.M {
		out.Indptr[g+1] += out.Indptr[g]
	}
	out.Indices = make([]int64, out.Indptr[d.M])
	if valued {
		out.Values = make([]T, out.Indptr[d.M])
	}
	next := append([]int64(nil), out.Indptr[:d.M]...)
	for x, q := range owner { // column blocks in order within a row block
		i, j := x/nbj, x%nbj
		lo, coff := d.RowBounds[i], d.ColBounds[j]
		e := eOff[q]
		for r, n := range gdeg[dOff[q]:dOff[q+1]] {
			at := next[lo+int64(r)]
			for k := range n {
				out.Indices[at+k] = gind[e+k] + coff
			}
			if valued {
				copy(out.Values[at:at+n], gval[e:e+n])
			}
			next[lo+int64(r)] += n
			e += n
		}
	}
	return out
}
