package sampling

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"gnnmpi/collective"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// Topology is where the matrix a sampler reads lives (the adjacency A for
// node-wise sampling, Â for LADIES): whole on every rank (Replicated) or
// distributed in the 1.5D layout (Distributed15D). A sampler asks it, once
// per hop, for the rows of its frontiers, P = Q·M with Q the selection
// matrix of the frontier vertices, already thinned to the entries the
// sampler keeps; the thinning runs on whichever rank computes the row, and
// since a row's draws come only from its RowStream (its minibatch's key,
// the hop and the vertex), the result does not depend on where that is.
//
// The methods of a distributed Topology are collective over its
// communicator: every rank calls them the same number of times, with
// empty frontiers if it has nothing to sample.
type Topology interface {
	// N returns the order of the matrix (the number of vertices).
	N() int64
	// Name returns "replicated" or "1.5d".
	Name() string
	// rows returns the |v|×N matrix whose row i holds the entries of row
	// v[i] of the matrix (sorted, repeats merged into their count) that
	// pick keeps (all if pick is nil), with their values if the matrix has
	// values. keys[i] is the key of row i's minibatch.
	rows(v []int64, keys []uint64, pick picker) (*sparse.CSR, error)
}

// picker chooses among the candidates of the row of vertex v in the
// minibatch of the given key: it returns the positions it keeps, ascending,
// in a slice valid until its next call with the same scratch. It must be a
// pure function of its arguments (and of the sampler's configuration), so
// that every rank picks alike.
type picker func(sc *scratch, key uint64, v int64, cols []int64, vals []float64) []int

// scratch is one goroutine's reusable state for pickers.
type scratch struct {
	d  darts
	st *streams
}

func newScratch() *scratch { return &scratch{st: newStreams()} }

// stream returns RowStream(key, h, v), valid until the next call.
func (sc *scratch) stream(key uint64, h int, v int64) *rand.Rand { return sc.st.at(key, h, v) }

// pickRows applies pick to every row of the |v|×n matrix (indptr,
// indices, values) (row i being vertex v[i] of the minibatch of keys[i];
// values nil for a pattern) and returns the kept entries, with their
// values if values is not nil.
func pickRows(n int64, indptr, indices []int64, values []float64, v []int64, keys []uint64, pick picker, sc *scratch) *sparse.CSR {
	m := int64(len(indptr) - 1)
	out := &sparse.CSR{NRows: m, NCols: n, Indptr: make([]int64, m+1), Indices: []int64{}}
	if values != nil {
		out.Values = []float64{}
	}
	for i := range m {
		lo, hi := indptr[i], indptr[i+1]
		cols := indices[lo:hi]
		var vals []float64
		if values != nil {
			vals = values[lo:hi]
		}
		for _, k := range pick(sc, keys[i], v[i], cols, vals) {
			out.Indices = append(out.Indices, cols[k])
			if vals != nil {
				out.Values = append(out.Values, vals[k])
			}
		}
		out.Indptr[i+1] = int64(len(out.Indices))
	}
	return out
}

// Replicated returns the topology of m held whole by every rank: sampling
// does no communication. m is kept, not copied; it is read once to learn
// whether its rows are sorted and distinct.
func Replicated(m *sparse.CSR) Topology {
	t := &replicated{m: m, sorted: true}
	for i := int64(0); i < m.NRows && t.sorted; i++ {
		row := m.Row(i)
		for k := 1; k < len(row) && t.sorted; k++ {
			t.sorted = row[k-1] < row[k]
		}
	}
	if m.Values == nil {
		t.pat = &sparse.Matrix[bool]{NRows: m.NRows, NCols: m.NCols, Indptr: m.Indptr, Indices: m.Indices}
	}
	return t
}

type replicated struct {
	m      *sparse.CSR
	pat    *sparse.Matrix[bool] // m as a pattern over (or, and), when m has no values
	sorted bool                 // every row of m is sorted with no repeats
}

func (t *replicated) N() int64     { return t.m.NRows }
func (t *replicated) Name() string { return "replicated" }

func (t *replicated) rows(v []int64, keys []uint64, pick picker) (*sparse.CSR, error) {
	if pick == nil {
		p := sparse.SelectRowsSR(sparse.PlusTimes[float64]{}, t.m, v, nil)
		if t.m.Values == nil {
			p.Values = nil
		}
		return p, nil
	}
	// Chunks of consecutive rows of bounded work (the entries of P they
	// make), taken in turn by up to GOMAXPROCS goroutines, each forming its
	// chunk's part of P = Q·A and thinning it at once with its own scratch:
	// P, which on a power-law graph is far larger than the sample, is never
	// held whole, and the draws of a row do not depend on the chunk.
	cuts := []int{0}
	var work int64
	for i, u := range v {
		work += t.m.Degree(u) + 1
		if work >= chunkWork && i+1 < len(v) {
			cuts, work = append(cuts, i+1), 0
		}
	}
	cuts = append(cuts, len(v))
	nc := len(cuts) - 1
	parts := make([]*sparse.CSR, nc)
	valued := t.m.Values != nil
	chunk := func(x int, sc *scratch) {
		lo, hi := cuts[x], cuts[x+1]
		if t.pat != nil { // a pattern product: P's values are not needed
			p := sparse.SelectRowsSR(sparse.OrAnd{}, t.pat, v[lo:hi], &sparse.Options{Threads: 1, SortedB: t.sorted})
			parts[x] = pickRows(t.m.NCols, p.Indptr, p.Indices, nil, v[lo:hi], keys[lo:hi], pick, sc)
			return
		}
		p := sparse.SelectRowsSR(sparse.PlusTimes[float64]{}, t.m, v[lo:hi], &sparse.Options{Threads: 1, SortedB: t.sorted})
		parts[x] = pickRows(t.m.NCols, p.Indptr, p.Indices, p.Values, v[lo:hi], keys[lo:hi], pick, sc)
	}
	if g := min(runtime.GOMAXPROCS(0), nc); g <= 1 {
		sc := newScratch()
		for x := range nc {
			chunk(x, sc)
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range g {
			wg.Go(func() {
				sc := newScratch()
				for x := int(next.Add(1) - 1); x < nc; x = int(next.Add(1) - 1) {
					chunk(x, sc)
				}
			})
		}
		wg.Wait()
	}
	if nc == 1 {
		return parts[0], nil
	}
	return sparse.VStack(parts, t.m.NCols, valued), nil
}

// chunkWork bounds the entries of P (plus one per row) that one chunk of
// the replicated topology forms at a time: 2^16 entries, 1 MiB of P with
// its values (a variable for the tests).
var chunkWork int64 = 1 << 16

// Distributed15D returns the topology of m distributed in the 1.5D layout
// of the (p/c)×c grid g (spgemm.Distribute15D): the rows of m cut into p/c
// blocks, each held by the c ranks of a grid row. Every rank passes the
// same m and keeps a copy of its block only, so that m may be dropped.
// It does not communicate.
//
// For a hop, the frontier rows of the c ranks of a grid row are gathered
// (Allgatherv of the vertex ids and their minibatches' keys over the grid
// row), P = Q·M is computed by spgemm.Mul15D, which leaves the rows of P
// spread evenly over the grid row, each rank thins the rows it holds with
// the sampler's draws and sends them back to the rank they came from
// (Alltoallv of the row lengths, columns and values over the grid row).
// The traffic counts under the current phase of g.Comm, except the
// product's, which counts under spgemm.Phase.
func Distributed15D(g *collective.Grid, m *sparse.CSR) (Topology, error) {
	if err := checkAdj(m); err != nil {
		return nil, err
	}
	d := spgemm.Distribute15D(g, m)
	loc := d.Local
	own := &sparse.CSR{NRows: loc.NRows, NCols: loc.NCols, Indptr: slices.Clone(loc.Indptr), Indices: slices.Clone(loc.Indices)}
	if loc.Values != nil {
		own.Values = slices.Clone(loc.Values)
	}
	d.Local = own
	return &dist15D{g: g, m: d}, nil
}

type dist15D struct {
	g *collective.Grid
	m *spgemm.Dist[float64]
}

func (t *dist15D) N() int64     { return t.m.M }
func (t *dist15D) Name() string { return "1.5d" }

func (t *dist15D) rows(v []int64, keys []uint64, pick picker) (*sparse.CSR, error) {
	g, n := t.g, t.m.M
	c, k := g.PC, g.Col
	valued := t.m.Local.Values != nil
	f, err := t.gatherFrontier(v, keys)
	if err != nil {
		return nil, err
	}
	pd, err := spgemm.Mul15D(g, sparse.PlusTimes[float64]{}, f.q, t.m, nil)
	if err != nil {
		return nil, err
	}

	// This rank holds rows [sub[k], sub[k+1]) of Q_i's product: thin them.
	sub := spgemm.Bounds(f.q.Local.NRows, c)
	lo, hi := sub[k], sub[k+1]
	p := pd.Local
	if pick != nil {
		rk := make([]uint64, hi-lo)
		for x := range rk {
			rk[x] = uint64(f.keys[lo+int64(x)])
		}
		var vals []float64
		if valued {
			vals = p.Values
		}
		p = pickRows(n, p.Indptr, p.Indices, vals, f.q.Local.Indices[lo:hi], rk, pick, newScratch())
	} else if !valued {
		p.Values = nil
	}
	return t.returnRows(p, sub, f.from, len(v))
}

// frontier15D is a grid row's stacked frontier: Q_i (one row per frontier
// vertex of the grid row's ranks, in rank order, a one in the vertex's
// column) in the 1.5D layout, the rows' random-stream keys, and where the
// rows came from: Q_i's rows [from[x], from[x+1]) are those of rank x of
// the grid row.
type frontier15D struct {
	q    *spgemm.Dist[float64]
	keys []int64
	from []int64
}

// gatherFrontier stacks the frontiers v (and their keys) of the ranks of
// this rank's grid row into Q_i, with Q's row blocks (one per grid row,
// its ranks' rows in rank order) known to every rank.
func (t *dist15D) gatherFrontier(v []int64, keys []uint64) (*frontier15D, error) {
	g, n := t.g, t.m.M
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
	return &frontier15D{q: qd, keys: qk, from: from}, nil
}

// returnRows sends every row of p (this rank's rows [sub[k], sub[k+1]) of
// Q_i's product) back to the rank of the grid row it came from (from, as
// in frontier15D) and returns this rank's nv rows, received from the ranks
// that computed them, in order.
func (t *dist15D) returnRows(p *sparse.CSR, sub, from []int64, nv int) (*sparse.CSR, error) {
	g, n := t.g, t.m.M
	c, k := g.PC, g.Col
	lo, hi := sub[k], sub[k+1]
	span := func(a0, a1, b0, b1 int64) int { return int(max(0, min(a1, b1)-max(a0, b0))) }
	rowsTo, rowsFrom := make([]int, c), make([]int, c)
	for x := range c {
		rowsTo[x] = span(lo, hi, from[x], from[x+1])
		rowsFrom[x] = span(from[k], from[k+1], sub[x], sub[x+1])
	}
	lens := make([]int64, p.NRows)
	for r := range lens {
		lens[r] = p.Indptr[r+1] - p.Indptr[r]
	}
	gotLens, err := collective.AlltoallvFlat(g.RowComm, lens, rowsTo, rowsFrom)
	if err != nil {
		return nil, err
	}
	entTo, entFrom := make([]int, c), make([]int, c)
	r0 := int64(0)
	for x, nr := range rowsTo {
		entTo[x] = int(p.Indptr[r0+int64(nr)] - p.Indptr[r0])
		r0 += int64(nr)
	}
	r0 = 0
	for x, nr := range rowsFrom {
		for _, l := range gotLens[r0 : r0+int64(nr)] {
			entFrom[x] += int(l)
		}
		r0 += int64(nr)
	}
	out := &sparse.CSR{NRows: int64(nv), NCols: n, Indptr: make([]int64, nv+1)}
	for r, l := range gotLens {
		out.Indptr[r+1] = out.Indptr[r] + l
	}
	if out.Indices, err = collective.AlltoallvFlat(g.RowComm, p.Indices, entTo, entFrom); err != nil {
		return nil, err
	}
	if p.Values != nil {
		if out.Values, err = collective.AlltoallvFlat(g.RowComm, p.Values, entTo, entFrom); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// New returns the sampler of the given kind over the graph adj: "sage"
// (NodeWise, fanouts per vertex), "ladies" (LayerWise, fanouts per
// minibatch and layer) or "plain" (Plain, the per-batch baseline), replicated when g is nil, else distributed in the
// 1.5D layout of g (collective over g.Comm). adj is the whole graph on
// every rank; a distributed sampler keeps only its block of it.
func New(kind string, adj *sparse.CSR, fanouts []int, g *collective.Grid) (Sampler, error) {
	if err := checkAdj(adj); err != nil {
		return nil, err
	}
	switch kind {
	case "sage":
		if g == nil {
			return NewNodeWise(adj, fanouts)
		}
		top, err := Distributed15D(g, adj)
		if err != nil {
			return nil, err
		}
		return NewNodeWiseOn(top, fanouts)
	case "ladies":
		if g == nil {
			return NewLayerWise(adj, fanouts)
		}
		if err := checkSizes(fanouts); err != nil {
			return nil, err
		}
		top, err := Distributed15D(g, GCNNormalized(adj))
		if err != nil {
			return nil, err
		}
		return NewLayerWiseOn(top, fanouts)
	case "plain":
		if g != nil {
			return nil, fmt.Errorf("sampling: the plain sampler reads a replicated graph only")
		}
		return NewPlain(adj, fanouts)
	}
	return nil, fmt.Errorf("sampling: unknown sampler %q (want sage, ladies or plain)", kind)
}
