package sampling

import (
	"fmt"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// Distributed2D returns the topology of the n×n matrix M distributed in
// the 2D layout of the square grid g (g.PR == g.PC): bounds (g.PR+1
// offsets from 0 to n, the same on every rank, uneven or empty blocks
// allowed) cut both the rows and the columns, and rank (i, j) keeps only
// the entries of row block i whose column lies in [bounds[j],
// bounds[j+1]). local is row block g.Row of M, rows [bounds[g.Row],
// bounds[g.Row+1]) with global column ids (n = local.NCols), as every rank
// of a grid row loads it; the topology copies the entries it keeps, so
// local may be dropped. It does not communicate, and returns an error if
// the grid is not square, bounds do not cut [0, n) into g.PR blocks, or
// local is not a valid block of row block g.Row.
//
// For a hop, the frontiers of the ranks of a grid row are gathered into
// Q_i as for Distributed15DBlock, so that every rank of the grid row has
// Q_i(:, block k) for every k. P = Q·M is then SUMMA streamed by
// spgemm.Mul2DStream: in stage k the block M_{k,j} is broadcast down grid
// column j, and rank (i, j) forms, in row chunks of bounded work, the
// column-j pieces of the rows of Q_i whose vertex lies in block k. At the
// end of the stage it sends each piece to the rank of the grid row that
// asked for the row (Alltoallv of the row lengths, columns and values over
// g.RowComm), and that rank joins the pc pieces of each of its rows in
// column order, which gives the whole row, sorted, thins it at once and
// keeps the thinned row. Per rank, a hop holds its block, one received
// piece of M_{k,j}, one stage's pieces (about |Q_i|·d/p entries for mean degree d)
// and the thinned rows. The gathers count under the current phase of
// g.Comm, the broadcasts and the exchange of the pieces under
// metrics.PhaseSpGEMM.
func Distributed2D(g *collective.Grid, bounds []int64, local *sparse.CSR) (Topology, error) {
	if g.PR != g.PC {
		return nil, fmt.Errorf("sampling: the 2D topology needs a square grid, not %d×%d", g.PR, g.PC)
	}
	if err := checkRowBlock(bounds, g.PR, g.Row, local); err != nil {
		return nil, err
	}
	n := local.NCols
	lo, hi := bounds[g.Col], bounds[g.Col+1]
	blk := sparse.ColRange(local, lo, hi)
	b := slices.Clone(bounds)
	a := &spgemm.Dist[float64]{M: n, N: n, RowBounds: b, ColBounds: b, I: g.Row, J: g.Col, Local: blk}
	return &dist2D{distTop{g: g, a: a}}, nil
}

// dist2D is Layout2D: distTop.a is block (Row, Col), with local columns;
// peak is the largest stage's pieces held at once.
type dist2D struct{ distTop }

func (t *dist2D) Name() string { return string(Layout2D) }

func (t *dist2D) rows(v []int64, keys []uint64, pick picker) (*sparse.CSR, error) {
	g, n := t.g, t.a.M
	f, valued, err := t.frontier(v, keys)
	if err != nil {
		return nil, err
	}
	var stageRows []int64
	var pieces []*sparse.CSR
	var held int64
	kept := &t.kept
	kept.reset() // nothing left from a call that failed
	sc := newScratch()
	s := &spgemm.Stream[float64]{ChunkWork: chunkWork}
	s.Chunk = func(_ int, rows []int64, c *sparse.Matrix[float64]) error {
		if !valued {
			c.Values = nil
		}
		stageRows = append(stageRows, rows...)
		pieces = append(pieces, c)
		held += c.NNZ()
		t.peak.note(int64(len(stageRows)), held)
		return nil
	}
	s.StageDone = func(int) error {
		whole, mine, err := t.joinPieces(f.from, stageRows, sparse.VStack(pieces, t.a.Local.NCols, valued), valued)
		if err != nil {
			return err
		}
		stageRows, pieces, held = nil, nil, 0
		kept.add(mine, thin(n, whole, valued, f.q.Local.Indices, f.keys, mine, pick, sc))
		return nil
	}
	if err := spgemm.Mul2DStream(g, sparse.PlusTimes[float64]{}, f.q, t.a, s); err != nil {
		return nil, err
	}
	rs := kept.sorted(valued, n)
	if rs.m.NRows != f.from[g.Col+1]-f.from[g.Col] {
		panic("sampling: 2D rows lost a frontier row")
	}
	return rs.m, nil
}

// joinPieces sends the pieces p (row x the column-block-Col piece of row
// rows[x] of Q_i's product, local columns; rows ascending and the same on
// every rank of the grid row) to the ranks of the grid row that own their
// rows (rows [from[x], from[x+1]) of Q_i are rank x's), and returns this
// rank's rows among them, whole (the pc pieces joined in column order,
// global columns), with their rows of Q_i. Three Alltoallv calls over
// g.RowComm: row lengths, columns, values.
func (t *dist2D) joinPieces(from, rows []int64, p *sparse.CSR, valued bool) (*sparse.CSR, []int64, error) {
	g, n := t.g, t.a.M
	pc, me := g.PC, g.Col
	rowsTo, entTo := make([]int, pc), make([]int, pc)
	var x int
	for y := range pc {
		start := x
		for x < len(rows) && rows[x] < from[y+1] {
			x++
		}
		rowsTo[y] = x - start
		entTo[y] = int(p.Indptr[x] - p.Indptr[start])
	}
	// Every rank holds a piece of each of the stage's rows: this rank's
	// own rows come from all pc ranks.
	var mine []int64
	for _, r := range rows {
		if r >= from[me] && r < from[me+1] {
			mine = append(mine, r)
		}
	}
	h := len(mine)
	rowsFrom := make([]int, pc)
	for y := range rowsFrom {
		rowsFrom[y] = h
	}
	lens := make([]int64, p.NRows)
	for r := range lens {
		lens[r] = p.Degree(int64(r))
	}
	gotLens, err := collective.AlltoallvFlat(g.RowComm, lens, rowsTo, rowsFrom)
	if err != nil {
		return nil, nil, err
	}
	entFrom := make([]int, pc)
	for y := range pc {
		for _, l := range gotLens[y*h : (y+1)*h] {
			entFrom[y] += int(l)
		}
	}
	off := t.a.ColBounds[me]
	cols := make([]int64, len(p.Indices))
	for q, c := range p.Indices {
		cols[q] = c + off
	}
	ind, err := collective.AlltoallvFlat(g.RowComm, cols, entTo, entFrom)
	if err != nil {
		return nil, nil, err
	}
	var val []float64
	if valued {
		if val, err = collective.AlltoallvFlat(g.RowComm, p.Values, entTo, entFrom); err != nil {
			return nil, nil, err
		}
	}
	// Row r of the result is piece r of ranks 0, 1, …, pc−1 in turn.
	start := make([]int64, pc*h+1) // entry offsets of the received pieces, rank by rank
	for z, l := range gotLens {
		start[z+1] = start[z] + l
	}
	out := &sparse.CSR{NRows: int64(h), NCols: n, Indptr: make([]int64, h+1), Indices: make([]int64, 0, len(ind))}
	if valued {
		out.Values = make([]float64, 0, len(val))
	}
	for r := range h {
		for y := range pc {
			s, e := start[y*h+r], start[y*h+r+1]
			out.Indices = append(out.Indices, ind[s:e]...)
			if valued {
				out.Values = append(out.Values, val[s:e]...)
			}
		}
		out.Indptr[r+1] = int64(len(out.Indices))
	}
	return out, mine, nil
}
