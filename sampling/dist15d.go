package sampling

import (
	"fmt"
	"math"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// Distributed15D returns the topology of m distributed in the 1.5D layout
// of the (p/c)×c grid g with the even row split spgemm.Bounds(n, p/c):
// Distributed15DBlock of this rank's block of m, copied, so that m may be
// dropped. Every rank passes the same m. It does not communicate.
func Distributed15D(g *collective.Grid, m *sparse.CSR) (Topology, error) {
	if err := checkAdj(m); err != nil {
		return nil, err
	}
	rb := spgemm.Bounds(m.NRows, g.PR)
	loc := rowRange(m, rb[g.Row], rb[g.Row+1])
	own := &sparse.CSR{NRows: loc.NRows, NCols: loc.NCols, Indptr: loc.Indptr, Indices: slices.Clone(loc.Indices)}
	if loc.Values != nil {
		own.Values = slices.Clone(loc.Values)
	}
	return Distributed15DBlock(g, rb, own)
}

// Distributed15DBlock returns the topology of the n×n matrix M distributed
// in the 1.5D layout of the (p/c)×c grid g (c = g.PC): its rows cut into
// g.PR blocks by rowBounds (g.PR+1 offsets from 0 to n, the same on every
// rank; blocks may be uneven or empty), row block i held by the c ranks of
// grid row i. local is this rank's block, rows [rowBounds[g.Row],
// rowBounds[g.Row+1]) of M with global column ids (n = local.NCols); it is
// kept, not copied, and must not be modified while the topology is in
// use. No rank needs the whole of M. It does not communicate, and returns
// an error if rowBounds do not cut [0, n) into g.PR blocks or local is not
// a valid block of row block g.Row.
//
// For a hop, the frontier rows of the c ranks of a grid row are gathered
// (Allgatherv of the vertex ids and of their minibatches' keys over the
// grid row) into Q_i, and P = Q·M is streamed by spgemm.Mul15DStream: in
// each of its stages j ≡ g.Col (mod c) the block M_j is broadcast down the
// grid column, or only its rows that Q_i names are fetched when that sends
// fewer bytes (spgemm.Stream.Degrees; the degrees of every vertex are
// gathered over the grid column on the first hop), and the rows of Q_i whose vertex lies in block j are formed
// in chunks of bounded work, each thinned by the sampler at once; only the
// thinned rows are kept and M_j is dropped before the next stage. The
// thinned rows then go back to the rank of the grid row they came from
// (Alltoallv of the row lengths, columns and values over the grid row;
// with c = 1 they are home already, and there is no exchange, and
// NodeWise's blocks read them where they were kept, without gathering
// them into one matrix first).
// Per rank, a hop holds its block, one received piece of a block
// (spgemm.Stream.PieceEntries) or the rows of a block it fetched, one
// chunk of P and the thinned rows, and the topology keeps the n int32
// degrees and, between calls, the arrays of the largest hop's thinned
// rows (reused by the next; they grow to the entries the first rows kept
// predict for the hop's frontier, an eighth over, at most four times at
// once, rather than by doubling): memory that does not grow with the
// bulk's P. The
// gathers count under the current phase of g.Comm, the broadcasts and the
// return of the rows under metrics.PhaseSpGEMM.
func Distributed15DBlock(g *collective.Grid, rowBounds []int64, local *sparse.CSR) (Topology, error) {
	if err := checkRowBlock(rowBounds, g.PR, g.Row, local); err != nil {
		return nil, err
	}
	n := local.NCols
	a := &spgemm.Dist[float64]{M: n, N: n, RowBounds: slices.Clone(rowBounds), ColBounds: []int64{0, n}, I: g.Row, Replica: g.Col, Local: local}
	return &dist15D{distTop: distTop{g: g, a: a}}, nil
}

// checkRowBlock reports whether rowBounds cut [0, local.NCols) into nb blocks
// and local is a valid block of row block i.
func checkRowBlock(rowBounds []int64, nb, i int, local *sparse.CSR) error {
	if local == nil {
		return fmt.Errorf("sampling: nil row block")
	}
	n := local.NCols
	if len(rowBounds) != nb+1 || rowBounds[0] != 0 || rowBounds[nb] != n {
		return fmt.Errorf("sampling: row bounds %v do not cut [0,%d) into %d blocks", rowBounds, n, nb)
	}
	for x := 1; x <= nb; x++ {
		if rowBounds[x] < rowBounds[x-1] {
			return fmt.Errorf("sampling: row bounds %v decrease", rowBounds)
		}
	}
	if err := local.Validate(); err != nil {
		return fmt.Errorf("sampling: row block %d: %w", i, err)
	}
	if want := rowBounds[i+1] - rowBounds[i]; local.NRows != want {
		return fmt.Errorf("sampling: row block %d has %d rows, its bounds [%d,%d) %d", i, local.NRows, rowBounds[i], rowBounds[i+1], want)
	}
	return nil
}

// dist15D is Layout15D: distTop.a is this rank's row block, with global
// columns; peak is the largest chunk of unthinned rows. deg is the degree
// of every vertex, gathered on the first hop (degrees), with which a hop
// fetches only the rows of a block its frontier needs when that sends
// fewer bytes than the block (spgemm.Stream.Degrees). distinct, learnt
// with deg, is whether every row of the adjacency is sorted with distinct
// columns (spgemm.Stream.DistinctB: the product then checks no row of B).
type dist15D struct {
	distTop
	deg      []int32
	known    bool // deg (with more than one grid row) and distinct
	distinct bool
}

// degrees gathers, on first use, the degree of every vertex from the
// ranks of the grid column (an Allgatherv of one int32 per row, counted
// under metrics.PhaseSpGEMM: 4·(n − rows_i) bytes received and
// 4·(q−1)·rows_i sent by a rank of grid row i), and whether every row of
// the adjacency is sorted with distinct columns: a row that is not sends
// its degree d as ^d (−d−1), which costs no byte more. With one grid row
// there is nothing to fetch, no degrees, and this rank's block is all
// the rows.
func (t *dist15D) degrees() error {
	g := t.g
	if t.known {
		return nil
	}
	loc := t.a.Local
	if g.PR == 1 {
		t.distinct = rowsSorted(loc.Indptr, loc.Indices)
		t.known = true
		return nil
	}
	defer collective.SetPhase(g.Comm, metrics.PhaseSpGEMM)()
	mine := make([]int32, loc.NRows)
	for r := range mine {
		d := loc.Degree(int64(r))
		if d > math.MaxInt32 {
			return fmt.Errorf("sampling: row %d has %d entries, more than an int32", t.a.RowBounds[g.Row]+int64(r), d)
		}
		mine[r] = int32(d)
		if !rowsSorted(loc.Indptr[r:r+2], loc.Indices) {
			mine[r] = ^mine[r]
		}
	}
	counts := make([]int, g.PR)
	for x := range counts {
		counts[x] = int(t.a.RowBounds[x+1] - t.a.RowBounds[x])
	}
	deg := make([]int32, t.a.M)
	if err := g.ColComm.Allgatherv(collective.BufOf(mine), collective.BufOf(deg), counts); err != nil {
		return err
	}
	t.distinct = true
	for v, d := range deg {
		if d < 0 {
			deg[v], t.distinct = ^d, false
		}
	}
	t.deg, t.known = deg, true
	return nil
}

// rowsSorted reports whether every row of the rows (indptr, indices) is
// sorted with distinct columns.
func rowsSorted(indptr, indices []int64) bool {
	for r := range len(indptr) - 1 {
		row := indices[indptr[r]:indptr[r+1]]
		for x := 1; x < len(row); x++ {
			if row[x] <= row[x-1] {
				return false
			}
		}
	}
	return true
}

// distTop is what the distributed topologies share: the grid, this rank's
// block of the adjacency, the peak of what it held while sampling, and
// the kept rows' arena, reused from call to call (it grows to the largest
// hop's kept rows, a bulk's sample, with an eighth to spare: keptRows.room).
type distTop struct {
	g    *collective.Grid
	a    *spgemm.Dist[float64]
	peak chunkPeak
	kept keptRows
}

func (t *distTop) N() int64           { return t.a.M }
func (t *distTop) Local() *sparse.CSR { return t.a.Local }

// frontier gathers the grid row's frontiers (gatherFrontier) and reports
// whether the adjacency has values.
func (t *distTop) frontier(v []int64, keys []uint64) (f *frontier, valued bool, err error) {
	f, err = gatherFrontier(t.g, t.a.M, v, keys)
	return f, t.a.Local.Values != nil, err
}

// chunkPeak records the largest chunk of unthinned rows a distributed
// topology has held at once (for the memory tests).
type chunkPeak struct{ rows, entries int64 }

func (p *chunkPeak) note(rows, entries int64) {
	p.rows, p.entries = max(p.rows, rows), max(p.entries, entries)
}

func (t *dist15D) Name() string { return string(Layout15D) }

func (t *dist15D) rows(v []int64, keys []uint64, pick picker) (*sparse.CSR, error) {
	rs, _, err := t.thinned(v, keys, pick, false)
	return rs, err
}

// keptView is the thinned rows of a hop as a 1.5D topology with c = 1
// kept them, in the order their chunks came: row x of the frontier has
// the entries ind[start[pos[x]]:start[pos[x]+1]]. It is valid until the
// topology's next call.
type keptView struct {
	ind, start []int64
	pos        []int
}

// row returns the entries of row x of the frontier.
func (v *keptView) row(x int64) []int64 {
	p := v.pos[x]
	s, e := v.start[p], v.start[p+1]
	return v.ind[s:e:e]
}

// rowsKept is rows without gathering the thinned rows into one matrix:
// with c = 1 it returns them where they were kept (a keptView, valid
// until the next call), so that a bulk's blocks read them there, and a
// bulk's sample is not copied once more; with c > 1 (the rows come back
// from the grid row's ranks as one matrix) it returns rows' matrix.
func (t *dist15D) rowsKept(v []int64, keys []uint64, pick picker) (*sparse.CSR, *keptView, error) {
	return t.thinned(v, keys, pick, t.g.PC == 1)
}

// thinned is rows, or, with view (c = 1 only), rowsKept's view of the
// kept rows.
func (t *dist15D) thinned(v []int64, keys []uint64, pick picker, view bool) (*sparse.CSR, *keptView, error) {
	g, n := t.g, t.a.M
	f, valued, err := t.frontier(v, keys)
	if err != nil {
		return nil, nil, err
	}
	if err := t.degrees(); err != nil {
		return nil, nil, err
	}
	qv := f.q.Local.Indices // the vertex of each row of Q_i
	kept := &t.kept
	kept.reset() // nothing left from a call that failed
	kept.expect = len(qv)
	if c := g.PC; c > 1 {
		kept.expect = 0
		for _, u := range qv {
			if collective.BlockOf(t.a.RowBounds, u)%c == g.Col {
				kept.expect++
			}
		}
	}
	if valued {
		err = streamThin(t, sparse.PlusTimes[float64]{}, f.q, t.a, f, true, pick, kept)
	} else {
		// A pattern: P's values are not needed, and (or, and) over
		// booleans forms it without them (the same entries, the same
		// bytes on the wire: a pattern's blocks travel without values).
		err = streamThin(t, sparse.OrAnd{}, patternOf(f.q), patternOf(t.a), f, false, pick, kept)
	}
	if err != nil {
		return nil, nil, err
	}
	if view {
		return nil, kept.view(len(v)), nil
	}
	// Row x of Q_i was computed by replica (block of its vertex) mod c.
	// The return of the rows is the product's delivery (what Mul15D's
	// reduce-scatter did): it counts under metrics.PhaseSpGEMM. With c = 1
	// this rank computed every row of Q_i, its own frontier: the sorted
	// rows are the result, and there is nothing to return.
	c := g.PC
	rs := kept.sorted(valued, n)
	if c == 1 {
		if rs.m.NRows != int64(len(v)) {
			panic("sampling: 1.5D rows lost a frontier row")
		}
		return rs.m, nil, nil
	}
	by := func(x int64) int { return collective.BlockOf(t.a.RowBounds, qv[x]) % c }
	defer collective.SetPhase(g.Comm, metrics.PhaseSpGEMM)()
	m, err := returnRows(g.RowComm, n, rs, f.from, by, valued)
	return m, nil, err
}

// streamThin streams P = Q_i·A over sr (spgemm.Mul15DStream of q and a,
// Q_i and this rank's block as float64 or as patterns) and adds each chunk
// to kept as it comes, thinned by pick (keptRows.pick), or whole if pick
// is nil.
func streamThin[T sparse.Scalar, S sparse.Semiring[T]](t *dist15D, sr S, q, a *spgemm.Dist[T], f *frontier, valued bool, pick picker, kept *keptRows) error {
	n, qv := t.a.M, f.q.Local.Indices
	sc := newScratch()
	// kept copies what it keeps: each chunk may overwrite the last.
	s := &spgemm.Stream[T]{ChunkWork: chunkWork, Reuse: true, Degrees: t.deg, DistinctB: t.distinct}
	s.Chunk = func(_ int, rows []int64, c *sparse.Matrix[T]) error {
		t.peak.note(int64(len(rows)), c.NNZ())
		var vals []float64
		if valued {
			vals = any(c.Values).([]float64)
		}
		if pick == nil {
			kept.add(rows, &sparse.CSR{NRows: c.NRows, NCols: n, Indptr: c.Indptr, Indices: c.Indices, Values: vals})
		} else {
			kept.pick(c.Indptr, c.Indices, vals, nil, rows, qv, f.keys, pick, sc)
		}
		return nil
	}
	if !valued && pick != nil {
		// A pattern's P row is its row of the piece: pick reads it there,
		// with nothing copied but what it keeps.
		s.Select = func(_ int, rows []int64, piece *sparse.Matrix[T], brows []int64) error {
			var entries int64
			for _, b := range brows {
				entries += piece.Indptr[b+1] - piece.Indptr[b]
			}
			t.peak.note(int64(len(rows)), entries)
			kept.pick(piece.Indptr, piece.Indices, nil, brows, rows, qv, f.keys, pick, sc)
			return nil
		}
	}
	return spgemm.Mul15DStream(t.g, sr, q, a, s)
}

// patternOf returns d with its block viewed as a boolean pattern: the
// same row offsets and column indices (shared, not copied), no values.
func patternOf(d *spgemm.Dist[float64]) *spgemm.Dist[bool] {
	l := d.Local
	return &spgemm.Dist[bool]{M: d.M, N: d.N, RowBounds: d.RowBounds, ColBounds: d.ColBounds, I: d.I, J: d.J, Replica: d.Replica,
		Local: &sparse.Matrix[bool]{NRows: l.NRows, NCols: l.NCols, Indptr: l.Indptr, Indices: l.Indices}}
}

// thin returns the rows of the chunk c (rows of Q_i, whose vertices are
// qv[rows[x]] and keys keys[rows[x]]) that pick keeps, or c itself (as a
// pattern unless valued) if pick is nil. valued is true only for a
// float64 c (the values of a pattern chunk are not kept).
func thin[T sparse.Scalar](n int64, c *sparse.Matrix[T], valued bool, qv, keys []int64, rows []int64, pick picker, sc *scratch) *sparse.CSR {
	var vals []float64
	if valued {
		vals = any(c.Values).([]float64)
	}
	if pick == nil {
		return &sparse.CSR{NRows: c.NRows, NCols: c.NCols, Indptr: c.Indptr, Indices: c.Indices, Values: vals}
	}
	vs, ks := make([]int64, len(rows)), make([]uint64, len(rows))
	for x, r := range rows {
		vs[x], ks[x] = qv[r], uint64(keys[r])
	}
	return pickRows(n, c.Indptr, c.Indices, vals, vs, ks, pick, sc)
}

// keptRows collects rows of Q_i as they come, chunk after chunk: their
// entries side by side in one arena (ind, and val when valued), which
// grows by doubling, not by an allocation per chunk. Row y kept (row
// rows[y] of Q_i) has the entries ind[start[y]:start[y+1]]. The zero
// value is empty and ready to use.
//
// expect, when set, is the number of rows the call will keep (a bulk's
// whole frontier on this replica): once keptGuessRows rows are kept, an
// arena that must grow grows to the entries those rows predict for expect
// rows, an eighth over (at most four times its size, against a guess from
// unusual first rows), instead of doubling: each growth copies all the
// entries kept, and the first call of a bulk run, most of its calls at
// k = 16, grew its arena from one hop's size to the next hop's that way.
type keptRows struct {
	rows   []int64
	start  []int64
	ind    []int64
	val    []float64
	expect int
	at     []int // sorted's table, kept zeroed between calls
	pos    []int // view's table
}

// keptGuessRows is how many rows keptRows keeps before it predicts its
// entries from them.
const keptGuessRows = 64

// room returns the capacity to give an arena of have entries that needs
// room for need more: twice have, or, once the rows kept can predict the
// call's entries (k.expect set, at least keptGuessRows rows kept, or all
// of the expected ones), their prediction plus an eighth, up to four times
// have.
func (k *keptRows) room(have, need int) int {
	c := 2 * have
	if k.expect > 0 && len(k.rows) >= min(k.expect, keptGuessRows) {
		per := float64(have) / float64(len(k.rows))
		c = max(c, min(int(per*float64(k.expect)*1.125), 4*have))
	}
	return max(c, have+need)
}

// add keeps the rows of part, rows rows of Q_i (row x of part is row
// rows[x]), copying their entries (and values, if part has them).
func (k *keptRows) add(rows []int64, part *sparse.CSR) {
	if len(k.start) == 0 {
		k.start = append(k.start, 0)
	}
	for x, r := range rows {
		s, e := part.Indptr[x], part.Indptr[x+1]
		k.ind = append(k.ind, part.Indices[s:e]...)
		if part.Values != nil {
			k.val = append(k.val, part.Values[s:e]...)
		}
		k.rows, k.start = append(k.rows, r), append(k.start, int64(len(k.ind)))
	}
}

// pick keeps, of each row x of the chunk (row at[x] of the matrix indptr,
// indices, values, or row x when at is nil; values nil for a pattern),
// row rows[x] of Q_i, whose vertex is qv[rows[x]] and key keys[rows[x]],
// the entries pick chooses (as pickRows does), written straight into the
// arena.
func (k *keptRows) pick(indptr, indices []int64, values []float64, at, rows, qv, keys []int64, pick picker, sc *scratch) {
	if len(k.start) == 0 {
		k.start = append(k.start, 0)
	}
	ind, val := k.ind, k.val // locals: the loop keeps them in registers
	for x, r := range rows {
		i := int64(x)
		if at != nil {
			i = at[x]
		}
		lo, hi := indptr[i], indptr[i+1]
		// The row two ahead on its way to the cache while this one draws
		// (the rows of a chunk are scattered over the piece).
		if x+2 < len(rows) {
			n := int64(x + 2)
			if at != nil {
				n = at[x+2]
			}
			if q, e := indptr[n], indptr[n+1]; q < e {
				prefetchRow(&indices[q], int(e-q))
			}
		}
		cols := indices[lo:hi]
		var vals []float64
		if values != nil {
			vals = values[lo:hi]
		}
		ps := pick(sc, uint64(keys[r]), qv[r], cols, vals)
		if len(ind)+len(ps) > cap(ind) {
			c := k.room(len(ind), len(ps))
			ind = append(make([]int64, 0, c), ind...)
			if values != nil {
				val = append(make([]float64, 0, c), val...)
			}
		}
		if len(ps) == len(cols) {
			// Every entry (the positions are distinct and ascending).
			ind = append(ind, cols...)
			val = append(val, vals...)
		} else {
			ind = slices.Grow(ind, len(ps))
			dst := ind[len(ind) : len(ind)+len(ps)]
			for y, p := range ps {
				dst[y] = cols[p]
			}
			ind = ind[:len(ind)+len(ps)]
			if vals != nil {
				for _, p := range ps {
					val = append(val, vals[p])
				}
			}
		}
		k.rows, k.start = append(k.rows, r), append(k.start, int64(len(ind)))
	}
	k.ind, k.val = ind, val
}

// sorted returns the kept rows as one matrix of ncols columns in
// ascending order of their rows of Q_i, with those rows, and empties k
// (keeping its arrays for the next rows). A
// row of Q_i is kept at most once (Q has one entry per row, so its product
// row comes whole from one chunk). The rows are placed by a table over the
// span of their rows of Q_i, not sorted, and the result is allocated once
// at its size: O(rows + entries + span), whatever the number of chunks.
func (k *keptRows) sorted(valued bool, ncols int64) rowSet {
	nr, ne := int64(len(k.rows)), int64(len(k.ind))
	out := &sparse.CSR{NRows: nr, NCols: ncols, Indptr: make([]int64, nr+1), Indices: make([]int64, ne)}
	if valued {
		out.Values = make([]float64, ne)
	}
	ids := make([]int64, nr)
	defer k.reset()
	if nr == 0 {
		return rowSet{ids: ids, m: out}
	}
	lo, hi := slices.Min(k.rows), slices.Max(k.rows)
	// at[r−lo] is 1 + the position of row r among the kept rows (0: not
	// kept); the table is kept for the next call, and zeroed as it is
	// read.
	if int64(len(k.at)) < hi-lo+1 {
		k.at = make([]int, hi-lo+1)
	}
	at := k.at[:hi-lo+1]
	for y, r := range k.rows {
		if at[r-lo] != 0 {
			panic("sampling: a row of Q kept twice")
		}
		at[r-lo] = y + 1
	}
	var e, z int64
	for d, a := range at {
		if a == 0 {
			continue
		}
		at[d] = 0
		s, t := k.start[a-1], k.start[a]
		copy(out.Indices[e:], k.ind[s:t])
		if valued {
			copy(out.Values[e:], k.val[s:t])
		}
		e += t - s
		ids[z] = lo + int64(d)
		z++
		out.Indptr[z] = e
	}
	return rowSet{ids: ids, m: out}
}

// view returns the kept rows as a keptView of the m rows of Q_i, every
// one of which must have been kept exactly once; k keeps them until its
// next reset.
func (k *keptRows) view(m int) *keptView {
	if len(k.rows) != m {
		panic("sampling: 1.5D rows lost a frontier row")
	}
	if cap(k.pos) < m {
		k.pos = make([]int, m)
	}
	pos := k.pos[:m]
	for x := range pos {
		pos[x] = -1
	}
	for y, r := range k.rows {
		if pos[r] >= 0 {
			panic("sampling: a row of Q kept twice")
		}
		pos[r] = y
	}
	return &keptView{ind: k.ind, start: k.start, pos: pos}
}

// reset empties k, keeping its arrays.
func (k *keptRows) reset() {
	k.rows, k.start, k.ind, k.val = k.rows[:0], append(k.start[:0], 0), k.ind[:0], k.val[:0]
	k.expect = 0
}

// rowSet is rows ids of Q_i (ascending), row y of m being row ids[y].
type rowSet struct {
	ids []int64
	m   *sparse.CSR
}

// returnRows sends every row of rs to the rank of the grid row (rc) whose
// frontier it belongs to (rows [from[x], from[x+1]) of Q_i are rank x's)
// and returns this rank's |frontier| rows, in order; row x of Q_i was
// computed by rank by(x) of rc. Three Alltoallv calls over rc: row
// lengths, columns and (if valued) values.
func returnRows(rc collective.Comm, n int64, rs rowSet, from []int64, by func(x int64) int, valued bool) (*sparse.CSR, error) {
	c, k := rc.Size(), rc.Rank()
	rowsTo, rowsFrom := make([]int, c), make([]int, c)
	entTo := make([]int, c)
	for y, r := range rs.ids {
		x := collective.BlockOf(from, r)
		rowsTo[x]++
		entTo[x] += int(rs.m.Degree(int64(y)))
	}
	lo, hi := from[k], from[k+1]
	for r := lo; r < hi; r++ {
		rowsFrom[by(r)]++
	}
	lens := make([]int64, rs.m.NRows)
	for y := range lens {
		lens[y] = rs.m.Degree(int64(y))
	}
	gotLens, err := collective.AlltoallvFlat(rc, lens, rowsTo, rowsFrom)
	if err != nil {
		return nil, err
	}
	entFrom := make([]int, c)
	rowAt := make([]int64, c+1) // first row of gotLens from each rank
	for y := range c {
		rowAt[y+1] = rowAt[y] + int64(rowsFrom[y])
		for _, l := range gotLens[rowAt[y]:rowAt[y+1]] {
			entFrom[y] += int(l)
		}
	}
	ind, err := collective.AlltoallvFlat(rc, rs.m.Indices, entTo, entFrom)
	if err != nil {
		return nil, err
	}
	var val []float64
	if valued {
		if val, err = collective.AlltoallvFlat(rc, rs.m.Values, entTo, entFrom); err != nil {
			return nil, err
		}
	}
	// Own rows in order: row r's entries are the next of its computer's.
	entAt := make([]int64, c+1)
	for y := range c {
		entAt[y+1] = entAt[y] + int64(entFrom[y])
	}
	nv := hi - lo
	out := &sparse.CSR{NRows: nv, NCols: n, Indptr: make([]int64, nv+1), Indices: make([]int64, 0, len(ind))}
	if valued {
		out.Values = make([]float64, 0, len(val))
	}
	for r := lo; r < hi; r++ {
		y := by(r)
		l := gotLens[rowAt[y]]
		rowAt[y]++
		e := entAt[y]
		out.Indices = append(out.Indices, ind[e:e+l]...)
		if valued {
			out.Values = append(out.Values, val[e:e+l]...)
		}
		entAt[y] += l
		out.Indptr[r-lo+1] = int64(len(out.Indices))
	}
	return out, nil
}

// frontier is a grid row's stacked frontier: Q_i (one row per frontier
// vertex of the grid row's ranks, in rank order, a one in the vertex's
// column), held whole by every rank of the grid row (the 1.5D layout of
// spgemm, Replica = g.Col), the rows' random-stream keys, and where the
// rows came from: Q_i's rows [from[x], from[x+1]) are those of rank x of
// the grid row.
type frontier struct {
	q    *spgemm.Dist[float64]
	keys []int64
	from []int64
}

// gatherFrontier stacks the frontiers v (and their keys) of the ranks of
// this rank's grid row into Q_i, with Q's row blocks (one per grid row,
// its ranks' rows in rank order) known to every rank: an Allgatherv of
// one count per rank over g.Comm, then of the vertex ids and of the keys
// over the grid row.
func gatherFrontier(g *collective.Grid, n int64, v []int64, keys []uint64) (*frontier, error) {
	c, i, k := g.PC, g.Row, g.Col
	counts, err := collective.AllgatherCounts(g.Comm, len(v))
	if err != nil {
		return nil, err
	}
	rowBounds := make([]int64, g.PR+1)
	for r, x := range counts {
		rowBounds[r/c+1] += int64(x)
	}
	for x := range g.PR {
		rowBounds[x+1] += rowBounds[x]
	}
	mine := counts[i*c : (i+1)*c] // rows of the ranks of this grid row
	from := make([]int64, c+1)
	for x, cnt := range mine {
		from[x+1] = from[x] + int64(cnt)
	}
	m := from[c]

	qv := make([]int64, m)
	if err := g.RowComm.Allgatherv(collective.BufOf(v), collective.BufOf(qv), mine); err != nil {
		return nil, err
	}
	ik := make([]int64, len(keys))
	for x, key := range keys {
		ik[x] = int64(key)
	}
	qk := make([]int64, m)
	if err := g.RowComm.Allgatherv(collective.BufOf(ik), collective.BufOf(qk), mine); err != nil {
		return nil, err
	}
	q := &sparse.CSR{NRows: m, NCols: n, Indptr: make([]int64, m+1), Indices: qv}
	for r := range q.Indptr {
		q.Indptr[r] = int64(r)
	}
	qd := &spgemm.Dist[float64]{M: rowBounds[g.PR], N: n, RowBounds: rowBounds, ColBounds: []int64{0, n}, I: i, Replica: k, Local: q}
	return &frontier{q: qd, keys: qk, from: from}, nil
}
