package spgemm

import (
	"fmt"
	"math/bits"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
)

// Stream configures the streamed products Mul15DStream and Mul2DStream,
// which hand the product to the caller stage by stage in chunks of rows
// instead of returning it: a rank then holds, besides its operands, one
// received piece of a block of B (PieceEntries) and one chunk of the
// product at a time.
type Stream[T sparse.Scalar] struct {
	// Options.Threads is the number of goroutines of each chunk's local
	// product; Options.Staged is ignored.
	Options
	// ChunkWork bounds the work of one chunk: the scalar products (flops)
	// of its rows plus one per row, which bounds its entries. A chunk's
	// work is at most ChunkWork, unless it is a single row whose work
	// alone is more. 0 (or less) means DefaultChunkWork.
	ChunkWork int64
	// Chunk receives the chunks of the stages, in stage order and, within
	// a stage, in row order. rows are the local row indices, ascending, of
	// the rows of the chunk (rows of this rank's block of A); c is
	// len(rows)×(columns of this rank's block of C), with local column
	// indices and sorted, distinct columns (sparse.MulSR's properties):
	// row x of c is the stage's term A_i(rows[x], stage)·B(stage, :) of
	// row rows[x] of C. The stage's block of B arrives in pieces of rows
	// (PieceEntries); every row of A with an entry in a piece's rows is in
	// exactly one chunk of that piece, even if its product row is empty,
	// and a row with entries in several pieces gets a partial row from each. The callback owns rows, and c unless Reuse is set. An error stops the product
	// on this rank only: the others may then block, as with any collective
	// error.
	Chunk func(stage int, rows []int64, c *sparse.Matrix[T]) error
	// Select, if not nil, receives in Chunk's place the chunks that are
	// selections: when A is a pattern whose rows each have at most one
	// entry in the stage's range and the rows of the piece they meet are
	// sorted and distinct, row x of the chunk's product is row brows[x]
	// of piece, and Select gets the piece and brows instead of the product
	// copied out (only the pattern of piece is to be read: the product's
	// values are One ⊗ piece's). rows are as for Chunk, and owned by the
	// callback; piece and brows are valid until it returns and must not be
	// modified. Select saves the copy of every selected row.
	Select func(stage int, rows []int64, piece *sparse.Matrix[T], brows []int64) error
	// StageDone, if not nil, is called on every rank after the chunks of
	// each stage, including on a rank that had none; it may communicate
	// (every rank of the grid calls it for every stage of the product, in
	// the same order).
	StageDone func(stage int) error
	// PieceEntries bounds the entries of B a rank receives at a time: a
	// stage's block of B is broadcast in pieces of consecutive rows of at
	// most PieceEntries entries (a longer single row is a piece), each
	// multiplied and dropped before the next arrives. The bytes sent do not
	// change. 0 (or less) means DefaultPieceEntries.
	PieceEntries int64
	// Degrees, if not nil, is the number of entries of every row of B
	// (B.M of them, the same on every rank), and lets Mul15DStream fetch,
	// in a stage whose predicted bytes are fewer that way, only the rows
	// of the stage's block of B that the columns of A name instead of
	// broadcasting the block (see FetchVolume15D). Mul2DStream ignores it.
	Degrees []int32
	// Reuse promises that Chunk keeps neither c nor its arrays once it
	// returns (it copies what it keeps): each chunk's product is then
	// written into the previous chunk's arrays (sparse.MulSRTo) instead of
	// new ones.
	Reuse bool
	// DistinctB promises that every row of B (every rank's block, and so
	// every piece and every fetched row) is sorted with distinct columns,
	// as sparse.Options.SortedB does: no stage then checks the rows it
	// uses. A caller that learns it once (a sampler's adjacency, used for
	// many products) saves a pass over every selected row of B per chunk.
	DistinctB bool

	ws    []int64           // streamStage's work per row of A, reused from piece to piece
	bs    []int64           // and the row of the piece each selection row of A meets
	sel   []int64           // a selection chunk's rows of the piece
	spare *sparse.Matrix[T] // the last chunk's product, with Reuse
}

// DefaultPieceEntries is the PieceEntries of a Stream that sets none: 2^22
// entries, 32 MiB of column indices.
const DefaultPieceEntries = 1 << 22

func (s *Stream[T]) piece() int64 {
	if s.PieceEntries < 1 {
		return DefaultPieceEntries
	}
	return s.PieceEntries
}

// DefaultChunkWork is the ChunkWork of a Stream that sets none: 2^16
// scalar products, about 1 MiB of a float64 product's chunk.
const DefaultChunkWork = 1 << 16

func (s *Stream[T]) work() int64 {
	if s.ChunkWork < 1 {
		return DefaultChunkWork
	}
	return s.ChunkWork
}

// Mul15DStream streams C = A·B over sr in the 1.5D layout on the
// (p/c)×c grid g, as Mul15D without the reduction: A and B are cut into
// g.PR row blocks, and the c ranks of grid row i hold copies of A_i and
// B_i (Distribute15D). It is collective over g.
//
// Replica k (grid column k) takes the stages j ≡ k (mod c), in increasing
// order. In stage j the rank at (j, k) broadcasts B_j down grid column k
// (as Mul15D, in pieces of Stream.PieceEntries entries), and every rank
// (i, k) forms A_i(:, block j)·B_j piece by piece in chunks of rows of
// bounded work (Stream.ChunkWork), passing each to s.Chunk with stage = j,
// then calls s.StageDone(j); each piece is dropped before the next. A rank
// therefore holds its blocks of A and B, one received piece and one
// chunk, whatever the size of A_i and B_j.
//
// C_i is the sum of the chunks of all the stages of all the replicas of
// grid row i: a row of A_i with entries in several column blocks gets a
// partial row from each (on different replicas when c > 1), which the
// caller adds up. A row of A_i whose entries all lie in one column block j
// (a selection matrix Q, one entry per row) comes whole from replica
// j mod c, in one chunk; that is how samplers use it (P = Q·A, each row
// thinned as it comes).
//
// Its traffic is Mul15D's broadcasts; there is no reduction. With
// s.Degrees set, the ranks of each grid column first gather how many rows
// of each of their stages' blocks they need and their entries (an
// Allgatherv of 2 int64 per stage), and a stage whose fetch is predicted
// to send fewer bytes than its broadcast (FetchVolume15D) fetches instead:
// every rank sends the root its row ids and receives those rows' entries
// (Alltoallv over the grid column), the received rows forming one piece.
// A rank then holds, for such a stage, the rows of B_j its A_i names (the
// root: all the rows asked of it, fewer bytes than q−1 copies of B_j).
//
// It returns an error wrapping sparse.ErrShape if A.N != B.M, or
// ErrLayout if a block is not where the layout wants it or s.Degrees does
// not have B.M entries, or the callbacks' first error.
func Mul15DStream[T sparse.Scalar, S sparse.Semiring[T]](g *collective.Grid, sr S, a, b *Dist[T], s *Stream[T]) error {
	q, c, i, k := g.PR, g.PC, g.Row, g.Col
	if err := checkLayout("A", a, q, 1, i, 0, k); err != nil {
		return err
	}
	if err := checkLayout("B", b, q, 1, i, 0, k); err != nil {
		return err
	}
	if err := shapeErr(a, b); err != nil {
		return err
	}
	defer collective.SetPhase(g.Comm, metrics.PhaseSpGEMM)()
	n, bValued := b.N, b.Local.Values != nil
	plan, err := planFetch15D(g, a, b, s.Degrees)
	if err != nil {
		return err
	}
	var spare *sparse.Matrix[T] // the last received block's arrays, for the next
	for t, j := 0, k; j < q; t, j = t+1, j+c {
		if plan.selective(t) {
			if err := fetchStage(sr, s, g.ColComm, plan, t, a, b, s.Degrees); err != nil {
				return err
			}
			continue
		}
		var mine *sparse.Matrix[T]
		if j == i {
			mine = b.Local
		}
		l, h := b.RowBounds[j], b.RowBounds[j+1]
		var err error
		if spare, err = bcastStage(sr, s, j, g.ColComm, j, mine, h-l, n, bValued, spare, a.Local, l); err != nil {
			return err
		}
	}
	return nil
}

// Mul2DStream streams C = A·B over sr by SUMMA on the pr×pc grid g: B is
// in the 2D layout (Distribute2D: rank (i, j) holds block (i, j)), and A
// either in the 2D layout too or held whole per grid row (pr row blocks
// and one column block, the pc ranks of grid row i holding copies of A_i,
// Replica = g.Col: a frontier that every rank of the grid row knows). It
// is collective over g.
//
// The stages are those of Mul2D (Stages of A's column bounds and B's row
// bounds), numbered from 0. In stage t of inner range [l, h), the rank of
// grid column j holding B's rows l…h−1 broadcasts that slice of B(:, j)
// down the column, and, for a 2D A only, the rank of grid row i holding
// A's columns l…h−1 broadcasts that slice along the row (a row-held A is
// sliced locally, without communication). Rank (i, j) then forms
// A_i(:, l:h)·B(l:h, j) in chunks of rows of bounded work, passing each to
// s.Chunk with stage = t (columns local to B's column block j), then calls
// s.StageDone(t); the slices are dropped before the next stage.
//
// C_ij is the sum of the chunks of all the stages of rank (i, j); a row of
// A whose entries all lie in one stage's range comes whole from that
// stage. Its traffic is Mul2D's broadcasts, without those of A when A is
// held per grid row. It returns an error wrapping sparse.ErrShape if
// A.N != B.M, or ErrLayout if a block is not where the layout wants it, or
// the callbacks' first error.
func Mul2DStream[T sparse.Scalar, S sparse.Semiring[T]](g *collective.Grid, sr S, a, b *Dist[T], s *Stream[T]) error {
	pr, pc, i, j := g.PR, g.PC, g.Row, g.Col
	rowHeld := a != nil && pc > 1 && len(a.ColBounds) == 2 // with pc = 1 the two layouts are one
	if rowHeld {
		if err := checkLayout("A", a, pr, 1, i, 0, j); err != nil {
			return err
		}
	} else if err := checkLayout("A", a, pr, pc, i, j, 0); err != nil {
		return err
	}
	if err := checkLayout("B", b, pr, pc, i, j, 0); err != nil {
		return err
	}
	if err := shapeErr(a, b); err != nil {
		return err
	}
	defer collective.SetPhase(g.Comm, metrics.PhaseSpGEMM)()
	m, n := a.Local.NRows, b.Local.NCols
	aValued, bValued := a.Local.Values != nil, b.Local.Values != nil
	var spare *sparse.Matrix[T] // the last received slice of B's arrays, for the next
	for t, st := range Stages(a.ColBounds, b.RowBounds) {
		l, h := st[0], st[1]
		ib := collective.BlockOf(b.RowBounds, l)
		var bp *sparse.Matrix[T]
		if i == ib {
			bp = b.Local
			if base := b.RowBounds[ib]; l != base || h != b.RowBounds[ib+1] {
				bp = sparse.RowRange(bp, l-base, h-base)
			}
		}
		ap, al := a.Local, l // A's columns from al meet B's rows from l
		var err error
		if !rowHeld {
			ja := collective.BlockOf(a.ColBounds, l)
			ap = nil
			if j == ja {
				ap = a.Local
				if base := a.ColBounds[ja]; l != base || h != a.ColBounds[ja+1] {
					ap = sparse.ColRange(ap, l-base, h-base)
				}
			}
			if ap, err = bcastBlock(g.RowComm, ja, ap, m, h-l, aValued); err != nil {
				return err
			}
			al = 0
		}
		if spare, err = bcastStage(sr, s, t, g.ColComm, ib, bp, h-l, n, bValued, spare, ap, al); err != nil {
			return err
		}
	}
	return nil
}

// bcastStage runs stage of a streamed multiply: it broadcasts root's
// nrows×ncols block blk of B over c in pieces (bcastPieces, reusing spare),
// streams a(:, off+lo : off+hi)·piece for each piece [lo, hi) of it to
// s.Chunk (streamStage), and calls s.StageDone. It returns the arrays to
// reuse for the next stage's pieces: those received, or spare when this
// rank was root. It is collective over c.
func bcastStage[T sparse.Scalar, S sparse.Semiring[T]](sr S, s *Stream[T], stage int, c collective.Comm, root int, blk *sparse.Matrix[T], nrows, ncols int64, valued bool, spare, a *sparse.Matrix[T], off int64) (*sparse.Matrix[T], error) {
	recv, err := bcastPieces(c, root, blk, nrows, ncols, valued, s.piece(), spare, func(lo, hi int64, piece *sparse.Matrix[T]) error {
		return streamStage(sr, stage, a, off+lo, off+hi, piece, s)
	})
	if err != nil {
		return spare, err
	}
	if recv != nil {
		spare = recv
	}
	if s.StageDone != nil {
		if err := s.StageDone(stage); err != nil {
			return spare, err
		}
	}
	return spare, nil
}

// streamStage forms a(:, lo:hi)·blk (blk being the hi−lo rows of B that
// columns lo…hi−1 of a meet) in chunks of rows of a with entries in
// [lo, hi), each of work at most s.work() unless it is a single row, and
// passes them to s.Chunk.
func streamStage[T sparse.Scalar, S sparse.Semiring[T]](sr S, stage int, a *sparse.Matrix[T], lo, hi int64, blk *sparse.Matrix[T], s *Stream[T]) error {
	if blk.NRows != hi-lo {
		panic("spgemm: stage block does not match the inner range")
	}
	limit, o := s.work(), s.local()
	// The work of every row of a in [lo, hi) (−1: no entry there). When
	// the rows' scalar products are at least blk's entries, one pass
	// checking blk's rows sorted and distinct costs less than MulSR's
	// check of every selected row (a row of B selected many times is
	// checked each time), and lets it copy them unchecked.
	// A pattern a whose rows each have at most one entry in [lo, hi) (a
	// sampler's selection matrix Q) makes every chunk a selection of rows
	// of blk: bs[r] is the row of blk that row r meets, and the chunk is
	// sparse.SelectRowsSRTo of them, the same matrix as the product's
	// without forming A's block or running the product's set-up per chunk.
	if int64(cap(s.ws)) < a.NRows {
		s.ws, s.bs = make([]int64, 0, a.NRows), make([]int64, 0, a.NRows)
	}
	ws, bs := s.ws[:0], s.bs[:0]
	selection := a.Values == nil
	var total, met int64 // met: rows of a with an entry in [lo, hi)
	for r := range a.NRows {
		var w, e, b int64 // the work and the entries of row r in [lo, hi), the last one's row of blk
		for q := a.Indptr[r]; q < a.Indptr[r+1]; q++ {
			if col := a.Indices[q]; col >= lo && col < hi {
				b = col - lo
				w += blk.Degree(b)
				e++
			}
		}
		if e == 0 {
			w = -1
		}
		selection = selection && e <= 1
		ws, bs = append(ws, w), append(bs, b)
		total += max(w, 0)
		if e > 0 {
			met++
		}
	}
	s.ws, s.bs = ws, bs
	if s.DistinctB || (total >= blk.NNZ() && distinctRows(blk)) {
		o.SortedB = true
	}
	// The chunks' rows are consecutive pieces of one array (the callback
	// owns them, so they are not reused): one allocation per piece.
	rows := make([]int64, 0, met)
	var work int64
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		var c *sparse.Matrix[T]
		if selection {
			s.sel = s.sel[:0]
			for _, r := range rows {
				s.sel = append(s.sel, bs[r])
			}
			if s.Select != nil && (o.SortedB || rowsDistinct(blk, s.sel)) {
				out := rows[:len(rows):len(rows)]
				rows, work = rows[len(rows):len(rows)], 0
				return s.Select(stage, out, blk, s.sel)
			}
			c = sparse.SelectRowsSRTo(s.spare, sr, blk, s.sel, o)
		} else {
			var err error
			if c, err = sparse.MulSRTo(s.spare, sr, sparse.SelectBlock(a, rows, lo, hi), blk, o); err != nil {
				return fmt.Errorf("spgemm: stream: %w", err)
			}
		}
		if s.Reuse {
			s.spare = c
		}
		out := rows[:len(rows):len(rows)]
		rows, work = rows[len(rows):len(rows)], 0 // the rest of the array
		return s.Chunk(stage, out, c)
	}
	for r, w := range ws {
		if w < 0 {
			continue
		}
		if len(rows) > 0 && work+w+1 > limit {
			if err := flush(); err != nil {
				return err
			}
		}
		rows = append(rows, int64(r)) // within the array's met rows
		work += w + 1
	}
	return flush()
}

// rowsDistinct reports whether the rows rows of m are sorted with no
// repeated column.
func rowsDistinct[T sparse.Scalar](m *sparse.Matrix[T], rows []int64) bool {
	for _, i := range rows {
		row := m.Indices[m.Indptr[i]:m.Indptr[i+1]]
		for x := 1; x < len(row); x++ {
			if row[x] <= row[x-1] {
				return false
			}
		}
	}
	return true
}

// distinctRows reports whether every row of m is sorted with no repeated
// column.
func distinctRows[T sparse.Scalar](m *sparse.Matrix[T]) bool {
	for i := range m.NRows {
		row := m.Indices[m.Indptr[i]:m.Indptr[i+1]]
		for x := 1; x < len(row); x++ {
			if row[x] <= row[x-1] {
				return false
			}
		}
	}
	return true
}

// distinctSorted returns the distinct values of xs, each in [0, n), in
// ascending order, as a new slice: by a sort of a copy, or, when sorting
// would cost more than a pass over n bits (a bulk's frontier, many
// vertices of a small graph), by marking them in a bitset of n bits.
func distinctSorted(xs []int64, n int64) []int64 {
	m := int64(len(xs))
	if m*int64(bits.Len64(uint64(m))) <= n/16 {
		out := slices.Clone(xs)
		slices.Sort(out)
		return slices.Compact(out)
	}
	set := make([]uint64, (n+63)/64)
	for _, x := range xs {
		set[x>>6] |= 1 << (x & 63)
	}
	var count int
	for _, w := range set {
		count += bits.OnesCount64(w)
	}
	out := make([]int64, 0, count)
	for i, w := range set {
		for w != 0 {
			out = append(out, int64(i)<<6|int64(bits.TrailingZeros64(w)))
			w &= w - 1
		}
	}
	return out
}
