package spgemm

import (
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
)

// Options configure the distributed products. A nil *Options, like the zero
// value, asks for the defaults.
type Options struct {
	// Threads is the number of goroutines each rank's local products and
	// sums run on; 0 (or less) means 1, for one rank per core.
	Threads int
	// Staged makes Mul15D and Mul2D multiply the blocks of every stage as
	// they arrive and add each stage's product to a running sum, so that
	// a rank holds one stage's operands at a time (CombBLAS's
	// Mult_AnXBn_Synch keeps every stage's product until it merges them
	// all). By default a rank keeps the blocks it receives and multiplies
	// once, after the last stage: the same result without the sums, at the
	// price of holding all of its stages' operands. Mul1D ignores it.
	Staged bool
}

func (o *Options) local() *sparse.Options {
	if o == nil || o.Threads < 1 {
		return &sparse.Options{Threads: 1}
	}
	return &sparse.Options{Threads: o.Threads}
}

func (o *Options) staged() bool { return o != nil && o.Staged }

// shapeErr is the error for operands whose inner dimensions differ.
func shapeErr[T sparse.Scalar](a, b *Dist[T]) error {
	if a.N != b.M {
		return fmt.Errorf("%w: %d×%d times %d×%d", sparse.ErrShape, a.M, a.N, b.M, b.N)
	}
	return nil
}

// checkLayout checks that d has nbi×nbj blocks, that this rank holds block
// (i, j) as copy replica, and that the local block has the block's size.
func checkLayout[T sparse.Scalar](what string, d *Dist[T], nbi, nbj, i, j, replica int) error {
	if d == nil || d.Local == nil {
		return fmt.Errorf("%w: %s: no local block", ErrLayout, what)
	}
	if len(d.RowBounds) != nbi+1 || len(d.ColBounds) != nbj+1 || d.I != i || d.J != j || d.Replica != replica {
		return fmt.Errorf("%w: %s has %d×%d blocks, this rank block (%d,%d) copy %d; want %d×%d blocks, block (%d,%d) copy %d",
			ErrLayout, what, len(d.RowBounds)-1, len(d.ColBounds)-1, d.I, d.J, d.Replica, nbi, nbj, i, j, replica)
	}
	if err := checkBounds("row", d.RowBounds, d.M); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := checkBounds("column", d.ColBounds, d.N); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	m, n := d.RowBounds[i+1]-d.RowBounds[i], d.ColBounds[j+1]-d.ColBounds[j]
	if d.Local.NRows != m || d.Local.NCols != n || int64(len(d.Local.Indptr)) != m+1 {
		return fmt.Errorf("%w: %s: local block is %d×%d, block (%d,%d) is %d×%d", ErrLayout, what, d.Local.NRows, d.Local.NCols, i, j, m, n)
	}
	return nil
}

// Mul1D returns C = A·B over sr in the 1D layout: rank r computes row block
// r of C, A_r·B, from its rows of A and the rows of B that the columns of
// A_r name. It is collective over c; every rank must pass its blocks of
// the same a and b, each cut into c.Size() row blocks (any bounds, blocks
// may be empty) with block r on rank r and one column block. C has A's row
// bounds.
//
// Each rank asks the owners of the rows of B it needs (the distinct columns
// of A_r outside its own block of B) for them and receives them, in five
// Alltoallv calls: request counts, requested row ids, row lengths, column
// indices, values (none for a pattern B). It then multiplies A_r by the
// k×n matrix holding its own and the received rows of B, with one local
// product, so the entries of C are summed in the order of the local
// product of A and B: C equals sparse.MulSR(sr, A, B) bit for bit. Memory:
// O(k) per rank besides the blocks, as the local kernel's dense
// accumulator.
//
// Mul1D returns an error wrapping sparse.ErrShape if A.N != B.M, or
// ErrLayout if a block is not where the layout wants it.
func Mul1D[T sparse.Scalar, S sparse.Semiring[T]](c collective.Comm, sr S, a, b *Dist[T], o *Options) (*Dist[T], error) {
	p, me := c.Size(), c.Rank()
	if err := checkLayout("A", a, p, 1, me, 0, 0); err != nil {
		return nil, err
	}
	if err := checkLayout("B", b, p, 1, me, 0, 0); err != nil {
		return nil, err
	}
	if err := shapeErr(a, b); err != nil {
		return nil, err
	}
	defer collective.SetPhase(c, metrics.PhaseSpGEMM)()
	n := b.N
	bl, err := fetchBRows(c, a.Local, b)
	if err != nil {
		return nil, err
	}
	cl, err := sparse.MulSR(sr, a.Local, bl, o.local())
	if err != nil {
		return nil, err
	}
	return &Dist[T]{M: a.M, N: n, RowBounds: a.RowBounds, ColBounds: []int64{0, n}, I: me, Local: cl}, nil
}

// rowsNeeded returns, for every rank q other than me, the rows of B in q's
// block (bounds) that columns of al name, ascending.
func rowsNeeded[T sparse.Scalar](al *sparse.Matrix[T], bounds []int64, me int) [][]int64 {
	p := len(bounds) - 1
	mark := make([]bool, bounds[p])
	for _, j := range al.Indices {
		mark[j] = true
	}
	req := make([][]int64, p)
	for q := range p {
		if q == me {
			continue
		}
		for g := bounds[q]; g < bounds[q+1]; g++ {
			if mark[g] {
				req[q] = append(req[q], g)
			}
		}
	}
	return req
}

// fetchBRows is Mul1D's communication: every rank asks the owners of the
// rows of B that the columns of al name for them (request counts,
// requested row ids) and serves what it is asked for (row lengths, column
// indices, values). It returns the B.M×B.N matrix holding this rank's own
// rows of B and the received ones, the other rows empty (b.Local itself
// when this rank holds all of B).
func fetchBRows[T sparse.Scalar](c collective.Comm, al *sparse.Matrix[T], b *Dist[T]) (*sparse.Matrix[T], error) {
	p, me := c.Size(), c.Rank()
	own, bValued := b.Local, b.Local.Values != nil
	olo, ohi := b.RowBounds[me], b.RowBounds[me+1]
	req := rowsNeeded(al, b.RowBounds, me)
	asked, err := collective.AlltoallvSlices(c, req)
	if err != nil {
		return nil, err
	}

	// Serve the rows asked for: lengths, then indices and values.
	sendRows, recvRows := make([]int, p), make([]int, p)
	sendNNZ := make([]int, p)
	var deg, ind []int64
	var val []T
	for q := range p {
		sendRows[q], recvRows[q] = len(asked[q]), len(req[q])
		for _, g := range asked[q] {
			s, e := own.Indptr[g-olo], own.Indptr[g-olo+1]
			deg = append(deg, e-s)
			sendNNZ[q] += int(e - s)
		}
	}
	ind = make([]int64, 0, sum64(deg))
	if bValued {
		val = make([]T, 0, cap(ind))
	}
	for q := range p {
		for _, g := range asked[q] {
			s, e := own.Indptr[g-olo], own.Indptr[g-olo+1]
			ind = append(ind, own.Indices[s:e]...)
			if bValued {
				val = append(val, own.Values[s:e]...)
			}
		}
	}
	rdeg, rind, rval, _, err := alltoallRows(c, deg, ind, val, sendRows, recvRows, sendNNZ, bValued)
	if err != nil {
		return nil, err
	}
	if olo == 0 && ohi == b.M {
		return own, nil
	}
	deg, ind, val = nil, nil, nil
	bl := &sparse.Matrix[T]{NRows: b.M, NCols: b.N}
	placeReceived(bl, own, olo, ohi, req, rdeg, rind, rval)
	return bl, nil
}

// placeReceived fills bl (bl.NRows×bl.NCols, Indptr unset) with own, the
// rows [olo, ohi) of B, and the rows req[q] received from every rank q,
// with lengths rdeg and entries rind, rval in that order.
func placeReceived[T sparse.Scalar](bl, own *sparse.Matrix[T], olo, ohi int64, req [][]int64, rdeg, rind []int64, rval []T) {
	k, bValued := bl.NRows, own.Values != nil
	bl.Indptr = make([]int64, k+1)
	for g := olo; g < ohi; g++ {
		bl.Indptr[g+1] = own.Indptr[g-olo+1] - own.Indptr[g-olo]
	}
	x := 0
	for _, rows := range req {
		for _, g := range rows {
			bl.Indptr[g+1] = rdeg[x]
			x++
		}
	}
	for g := range k {
		bl.Indptr[g+1] += bl.Indptr[g]
	}
	bl.Indices = make([]int64, bl.Indptr[k])
	if bValued {
		bl.Values = make([]T, bl.Indptr[k])
	}
	s0, e0 := own.Indptr[0], own.Indptr[ohi-olo]
	copy(bl.Indices[bl.Indptr[olo]:], own.Indices[s0:e0])
	if bValued {
		copy(bl.Values[bl.Indptr[olo]:], own.Values[s0:e0])
	}
	e := int64(0)
	for _, rows := range req {
		for _, g := range rows {
			at, n := bl.Indptr[g], bl.Indptr[g+1]-bl.Indptr[g]
			copy(bl.Indices[at:at+n], rind[e:e+n])
			if bValued {
				copy(bl.Values[at:at+n], rval[e:e+n])
			}
			e += n
		}
	}
}

func sum64(s []int64) int64 {
	var t int64
	for _, v := range s {
		t += v
	}
	return t
}

// emptyMatrix returns an m×n matrix with no entries and non-nil Values.
func emptyMatrix[T sparse.Scalar](m, n int64) *sparse.Matrix[T] {
	return &sparse.Matrix[T]{NRows: m, NCols: n, Indptr: make([]int64, m+1), Indices: []int64{}, Values: []T{}}
}

// Mul15D returns C = A·B over sr by the 1.5D algorithm of Tripathy, Yelick
// and Buluç (MLSys'24) on the (p/c)×c grid g (c = g.PC): A and B are cut
// into q = g.PR row blocks, and the c ranks of grid row i hold copies
// 0…c−1 of A_i and B_i (Distribute15D). It is collective over g.
//
// Replica k (grid column k) takes the stages j ≡ k (mod c), j < q: p/c²
// stages each when c divides q, ⌈q/c⌉ or ⌊q/c⌋ otherwise (a replica with
// none computes nothing). In stage j the rank at (j, k) broadcasts B_j down
// grid column k, and every rank (i, k) forms its share A_i(:, block j)·B_j.
// The c partial products of row block i are then summed with a sparse
// reduce-scatter over grid row i: row block i is cut evenly into c
// sub-blocks, rank (i, k) sends sub-block k′ of its partial product to rank
// (i, k′) (three Alltoallv calls: row lengths, indices, values) and adds the
// c pieces of sub-block k in replica order. So C comes out in the 1D layout
// over g.Comm, rank i·c+k holding sub-block k of row block i, ready for
// Mul1D or Gather.
//
// The entries of C are those of the local product; their values are the
// sums of the c replicas' partial sums, so a floating-point (+, ×) result
// may differ from sparse.MulSR in rounding when c > 1 (integers, min-plus
// and or-and agree exactly).
//
// By default a replica multiplies once, after its broadcasts, by the k×n
// matrix B_k of its stages' blocks of B, and the reduction is fused into
// the product: rank (i, k) first forms only the rows of its partial
// product that it sends (the other sub-blocks), exchanges them, and then
// computes its own sub-block of C in one product that adds the received
// rows in its accumulator, in replica order (replicas before k, its own
// terms, replicas after k): no partial product of its own rows is stored
// and no merge pass is made. With Options.Staged it keeps a running sum of
// the stages' products, exchanges the sub-blocks and merges the c pieces.
//
// Mul15D returns an error wrapping sparse.ErrShape if A.N != B.M, or
// ErrLayout if a block is not where the layout wants it.
func Mul15D[T sparse.Scalar, S sparse.Semiring[T]](g *collective.Grid, sr S, a, b *Dist[T], o *Options) (*Dist[T], error) {
	q, c, i, k := g.PR, g.PC, g.Row, g.Col
	if err := checkLayout("A", a, q, 1, i, 0, k); err != nil {
		return nil, err
	}
	if err := checkLayout("B", b, q, 1, i, 0, k); err != nil {
		return nil, err
	}
	if err := shapeErr(a, b); err != nil {
		return nil, err
	}
	defer collective.SetPhase(g.Comm, metrics.PhaseSpGEMM)()
	kk, n := b.M, b.N
	m := a.Local.NRows
	bValued := b.Local.Values != nil
	lo := o.local()

	var part *sparse.Matrix[T]
	var blocks []*sparse.Matrix[T]
	var at []int
	for j := k; j < q; j += c {
		var mine *sparse.Matrix[T]
		if j == i {
			mine = b.Local
		}
		blk, err := bcastBlock(g.ColComm, j, mine, b.RowBounds[j+1]-b.RowBounds[j], n, bValued)
		if err != nil {
			return nil, err
		}
		if !o.staged() {
			blocks, at = append(blocks, blk), append(at, j)
			continue
		}
		aj := sparse.ColRange(a.Local, b.RowBounds[j], b.RowBounds[j+1])
		if part, err = mulAdd(sr, part, aj, blk, lo); err != nil {
			return nil, err
		}
	}

	// Sparse reduce-scatter over the replicas of row block i: sub-block x
	// of the rows goes to rank (i, x).
	sub := Bounds(m, c)
	var cl *sparse.Matrix[T]
	if o.staged() {
		if part == nil {
			part = emptyMatrix[T](m, n)
		}
		pieces, err := exchangeRows(g.RowComm, part, sub, true)
		if err != nil {
			return nil, err
		}
		cl = sum(sr, pieces, lo.Threads)
	} else {
		bl := placeRows(blocks, at, b.RowBounds, kk, n, bValued)
		blocks = nil
		var err error
		if cl, err = reduceRows15D(g.RowComm, sr, a.Local, bl, sub, lo); err != nil {
			return nil, err
		}
	}
	rb := make([]int64, 0, q*c+1)
	for x := range q {
		off := a.RowBounds[x]
		for _, s := range Bounds(a.RowBounds[x+1]-off, c)[:c] {
			rb = append(rb, off+s)
		}
	}
	rb = append(rb, a.M)
	return &Dist[T]{M: a.M, N: n, RowBounds: rb, ColBounds: []int64{0, n}, I: i*c + k, Local: cl}, nil
}

// reduceRows15D is the fused product and sparse reduce-scatter of Mul15D
// over the grid row c (rank x holding sub-block x, rows [sub[x],
// sub[x+1]) of the row block): it returns this rank's sub-block of
// Σ_x A·B_x, where B_x is replica x's k×n matrix of its stages' blocks of
// B and bl is this replica's.
//
// It multiplies the rows of a outside its own sub-block by bl (rows
// [0, sub[me]) then [sub[me+1], m), so the rows for each other rank are
// contiguous) and sends them in three Alltoallv calls (row lengths,
// indices, values), receiving the other replicas' rows of its own
// sub-block straight into a matrix B′ that stacks bl and those rows (R_x,
// x ≠ me, in replica order). Its sub-block of C is then the one product
// A′·B′, where row r of A′ is row r of the sub-block of a with an entry
// of value One at R_x's row r added for every non-empty one: before a's
// entries for x < me and after them for x > me, so that the local
// kernel's accumulator adds the pieces in replica order.
func reduceRows15D[T sparse.Scalar, S sparse.Semiring[T]](c collective.Comm, sr S, a, bl *sparse.Matrix[T], sub []int64, o *sparse.Options) (*sparse.Matrix[T], error) {
	p, me := c.Size(), c.Rank()
	m, kk := a.NRows, bl.NRows
	lo, hi := sub[me], sub[me+1]
	h := hi - lo
	own := sparse.RowRange(a, lo, hi)
	if p == 1 {
		return sparse.MulSR(sr, own, bl, o)
	}
	others := make([]int64, 0, m-h)
	for r := range m {
		if r < lo || r >= hi {
			others = append(others, r)
		}
	}
	out, err := sparse.MulRowsSR(sr, others, a, bl, o)
	if err != nil {
		return nil, err
	}
	others = nil
	bp, err := exchangePieces(c, sr, out, bl, sub)
	if err != nil {
		return nil, err
	}
	out = nil
	return sparse.MulSR(sr, interleavePieces(sr, own, bp, kk, me, p), bp, o)
}

// exchangePieces is reduceRows15D's exchange: out holds this rank's partial
// products of every other rank's sub-block (rows of sub, its own left
// out), which it sends (row lengths, indices, values), and it returns
// B′ = [bl; R_0; …; R_{p−1}] (R_me left out, valued), R_x being the h rows
// of this rank's sub-block received from replica x.
func exchangePieces[T sparse.Scalar, S sparse.Semiring[T]](c collective.Comm, sr S, out, bl *sparse.Matrix[T], sub []int64) (*sparse.Matrix[T], error) {
	p, me := c.Size(), c.Rank()
	kk, n := bl.NRows, bl.NCols
	h := sub[me+1] - sub[me]
	sendRows, recvRows := make([]int, p), make([]int, p)
	sendNNZ, recvNNZ := make([]int, p), make([]int, p)
	var r0 int64 // first row of out for rank x
	for x := range p {
		if x == me {
			continue
		}
		nr := sub[x+1] - sub[x]
		sendRows[x], recvRows[x] = int(nr), int(h)
		sendNNZ[x] = int(out.Indptr[r0+nr] - out.Indptr[r0])
		r0 += nr
	}
	rdeg, err := collective.AlltoallvFlat(c, rowLengths(out, 0, out.NRows), sendRows, recvRows)
	if err != nil {
		return nil, err
	}
	var nrecv int64
	for x := range p {
		if x == me {
			continue
		}
		off := int64(x-boolInt(x > me)) * h
		for _, d := range rdeg[off : off+h] {
			recvNNZ[x] += int(d)
		}
		nrecv += int64(recvNNZ[x])
	}

	nb := bl.NNZ()
	kb := kk + int64(p-1)*h
	bp := &sparse.Matrix[T]{NRows: kb, NCols: n, Indptr: make([]int64, kb+1),
		Indices: make([]int64, nb+nrecv), Values: make([]T, nb+nrecv)}
	copy(bp.Indptr, bl.Indptr)
	for r, d := range rdeg {
		bp.Indptr[kk+int64(r)+1] = bp.Indptr[kk+int64(r)] + d
	}
	copy(bp.Indices, bl.Indices)
	if bl.Values != nil {
		copy(bp.Values, bl.Values)
	} else {
		for x := range bp.Values[:nb] {
			bp.Values[x] = sr.One()
		}
	}
	if err := c.Alltoallv(collective.BufOf(out.Indices), sendNNZ, collective.BufOf(bp.Indices[nb:]), recvNNZ); err != nil {
		return nil, err
	}
	if err := c.Alltoallv(valBuf(out.Values), sendNNZ, valBuf(bp.Values[nb:]), recvNNZ); err != nil {
		return nil, err
	}
	return bp, nil
}

// interleavePieces returns A′ for reduceRows15D: row r of own (this rank's
// h-row sub-block of A) with an entry of value One at B′'s row of R_x's
// row r for every non-empty one (x ≠ me; B′ = bp, its first kk rows this
// replica's), before own's entries for x < me and after them for x > me,
// so that the local kernel's accumulator adds the pieces in replica order.
func interleavePieces[T sparse.Scalar, S sparse.Semiring[T]](sr S, own, bp *sparse.Matrix[T], kk int64, me, p int) *sparse.Matrix[T] {
	h := own.NRows
	ap := &sparse.Matrix[T]{NRows: h, NCols: bp.NRows, Indptr: make([]int64, h+1)}
	valued := own.Values != nil
	pieceRow := func(x int, r int64) int64 { // row of B′ holding R_x's row r
		return kk + int64(x-boolInt(x > me))*h + r
	}
	var e int64
	for r := range h {
		e += own.Indptr[r+1] - own.Indptr[r]
		for x := range p {
			if x != me {
				if g := pieceRow(x, r); bp.Indptr[g+1] > bp.Indptr[g] {
					e++
				}
			}
		}
		ap.Indptr[r+1] = e
	}
	ap.Indices = make([]int64, e)
	if valued {
		ap.Values = make([]T, e)
	}
	q := int64(0)
	put := func(j int64, v T) {
		ap.Indices[q] = j
		if valued {
			ap.Values[q] = v
		}
		q++
	}
	for r := range h {
		for x := 0; x < me; x++ {
			if g := pieceRow(x, r); bp.Indptr[g+1] > bp.Indptr[g] {
				put(g, sr.One())
			}
		}
		s, t := own.Indptr[r], own.Indptr[r+1]
		copy(ap.Indices[q:], own.Indices[s:t])
		if valued {
			copy(ap.Values[q:], own.Values[s:t])
		}
		q += t - s
		for x := me + 1; x < p; x++ {
			if g := pieceRow(x, r); bp.Indptr[g+1] > bp.Indptr[g] {
				put(g, sr.One())
			}
		}
	}
	return ap
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// placeRows returns the k×n matrix holding block t of blocks at rows
// [bounds[at[t]], bounds[at[t]+1]), and no entries elsewhere.
func placeRows[T sparse.Scalar](blocks []*sparse.Matrix[T], at []int, bounds []int64, k, n int64, valued bool) *sparse.Matrix[T] {
	out := &sparse.Matrix[T]{NRows: k, NCols: n, Indptr: make([]int64, k+1)}
	var nnz int64
	for t, blk := range blocks {
		nnz += blk.NNZ()
		off := bounds[at[t]]
		for r := range blk.NRows {
			out.Indptr[off+r+1] = blk.Indptr[r+1] - blk.Indptr[r]
		}
	}
	for g := range k {
		out.Indptr[g+1] += out.Indptr[g]
	}
	out.Indices = make([]int64, 0, nnz)
	if valued {
		out.Values = make([]T, 0, nnz)
	}
	for _, blk := range blocks { // in row order: at is ascending
		out.Indices = append(out.Indices, blk.Indices...)
		if valued {
			out.Values = append(out.Values, blk.Values...)
		}
	}
	return out
}

// Mul2D returns C = A·B over sr by SUMMA on the pr×pc grid g: A and B are
// cut into g.PR row blocks and g.PC column blocks, the rank at (i, j)
// holding block (i, j) of each (Distribute2D), and C comes out in the same
// layout, with A's row bounds and B's column bounds. It is collective over
// g.
//
// Any grid works. The stages are the pieces of the inner dimension between
// consecutive cuts of A's column bounds and B's row bounds together: √p
// stages on a square grid, at most pr+pc−1 on a rectangular one (so a p
// that is not a perfect square takes collective.GridDims(p), such as 2×3
// for 6 or 1×p for a prime). In the stage of inner range [l, h), the rank
// of grid row i holding A's columns l…h−1 broadcasts that slice of its
// block along the row, and the rank of grid column j holding B's rows l…h−1
// broadcasts that slice down the column (three Bcast calls each: row
// offsets, indices, values). Rank (i, j) then owns C_ij = Σ_stages
// A_i,stage·B_stage,j. By default it multiplies once, after the last stage,
// by the concatenated stages, A_i,: · B_:,j, which adds the terms of every
// entry of C in the order of the local product: with A's rows sorted, C
// equals sparse.MulSR(sr, A, B) bit for bit. With Options.Staged it
// multiplies each stage and sums the products.
//
// Mul2D returns an error wrapping sparse.ErrShape if A.N != B.M, or
// ErrLayout if a block is not where the layout wants it.
func Mul2D[T sparse.Scalar, S sparse.Semiring[T]](g *collective.Grid, sr S, a, b *Dist[T], o *Options) (*Dist[T], error) {
	pr, pc, i, j := g.PR, g.PC, g.Row, g.Col
	if err := checkLayout("A", a, pr, pc, i, j, 0); err != nil {
		return nil, err
	}
	if err := checkLayout("B", b, pr, pc, i, j, 0); err != nil {
		return nil, err
	}
	if err := shapeErr(a, b); err != nil {
		return nil, err
	}
	defer collective.SetPhase(g.Comm, metrics.PhaseSpGEMM)()
	m, n := a.Local.NRows, b.Local.NCols
	aValued, bValued := a.Local.Values != nil, b.Local.Values != nil
	lo := o.local()

	var part *sparse.Matrix[T]
	var aps, bps []*sparse.Matrix[T]
	var offs []int64
	for _, st := range Stages(a.ColBounds, b.RowBounds) {
		l, h := st[0], st[1]
		ja, ib := collective.BlockOf(a.ColBounds, l), collective.BlockOf(b.RowBounds, l)
		var ap, bp *sparse.Matrix[T]
		if j == ja {
			ap = a.Local
			if base := a.ColBounds[ja]; l != base || h != a.ColBounds[ja+1] {
				ap = sparse.ColRange(ap, l-base, h-base)
			}
		}
		if i == ib {
			bp = b.Local
			if base := b.RowBounds[ib]; l != base || h != b.RowBounds[ib+1] {
				bp = sparse.RowRange(bp, l-base, h-base)
			}
		}
		ap, err := bcastBlock(g.RowComm, ja, ap, m, h-l, aValued)
		if err != nil {
			return nil, err
		}
		bp, err = bcastBlock(g.ColComm, ib, bp, h-l, n, bValued)
		if err != nil {
			return nil, err
		}
		if !o.staged() {
			aps, bps, offs = append(aps, ap), append(bps, bp), append(offs, l)
			continue
		}
		if part, err = mulAdd(sr, part, ap, bp, lo); err != nil {
			return nil, err
		}
	}
	if !o.staged() && len(aps) > 0 {
		ac, bc := aps[0], bps[0]
		if len(aps) > 1 {
			ac = hconcat(aps, offs, m, a.N, aValued)
			bc = sparse.VStack(bps, n, bValued)
		}
		aps, bps = nil, nil
		var err error
		if part, err = sparse.MulSR(sr, ac, bc, lo); err != nil {
			return nil, err
		}
	}
	if part == nil {
		part = emptyMatrix[T](m, n)
	}
	return &Dist[T]{M: a.M, N: b.N, RowBounds: a.RowBounds, ColBounds: b.ColBounds, I: i, J: j, Local: part}, nil
}

// Stages returns the stages of Mul2D: the non-empty pieces [l, h) of the
// inner dimension between consecutive cuts of aCols (A's column bounds)
// and bRows (B's row bounds), in order.
func Stages(aCols, bRows []int64) [][2]int64 {
	var out [][2]int64
	x, y := 0, 0
	cur := int64(0)
	end := aCols[len(aCols)-1]
	for cur < end {
		for x < len(aCols) && aCols[x] <= cur {
			x++
		}
		for y < len(bRows) && bRows[y] <= cur {
			y++
		}
		next := end
		if x < len(aCols) {
			next = min(next, aCols[x])
		}
		if y < len(bRows) {
			next = min(next, bRows[y])
		}
		out = append(out, [2]int64{cur, next})
		cur = next
	}
	return out
}
