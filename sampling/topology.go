package sampling

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"gnnmpi/internal/prefetch"
	"gnnmpi/sparse"
)

// Topology is where the matrix a sampler reads lives (the adjacency A for
// node-wise sampling, Â for LADIES): whole on every rank (Replicated) or
// distributed (Distributed15DBlock, Distributed2D). A sampler asks it, once
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
	// Name returns "replicated", "1.5d" or "2d".
	Name() string
	// Local returns the part of the matrix this rank holds (the whole
	// matrix when replicated, its block when distributed), for memory
	// accounting; it must not be modified.
	Local() *sparse.CSR
	// rows returns the |v|×N matrix whose row i holds the entries of row
	// v[i] of the matrix (sorted, repeats merged into their count) that
	// pick keeps (all if pick is nil), with their values if the matrix has
	// values. keys[i] is the key of row i's minibatch. The matrix is the
	// caller's: it shares no array with the topology, and the caller may
	// overwrite it.
	rows(v []int64, keys []uint64, pick picker) (*sparse.CSR, error)
}

// picker chooses among the candidates of the row of vertex v in the
// minibatch of the given key: it returns the positions it keeps, distinct
// and ascending, in a slice valid until its next call with the same
// scratch. It must be a pure function of its arguments (and of the
// sampler's configuration), so that every rank picks alike, and must not
// modify cols or vals, which may be the topology's own rows.
type picker func(sc *scratch, key uint64, v int64, cols []int64, vals []float64) []int

// scratch is one goroutine's reusable state for pickers and for pickRows.
type scratch struct {
	d   darts
	st  *streams
	rp  pcg       // uniformPicker's RowStream generators
	ind []int64   // pickRows's kept columns, before they are copied out
	val []float64 // and their values
}

func newScratch() *scratch { return &scratch{st: newStreams()} }

// stream returns RowStream(key, h, v), valid until the next call.
func (sc *scratch) stream(key uint64, h int, v int64) *rand.Rand { return sc.st.at(key, h, v) }

// pickRows applies pick to every row of the |v|×n matrix (indptr,
// indices, values) (row i being vertex v[i] of the minibatch of keys[i];
// values nil for a pattern) and returns the kept entries, with their
// values if values is not nil. The kept entries gather in sc's buffers,
// which grow to the largest call's and are reused, and are copied out
// once at their size: a call allocates its result and nothing else.
func pickRows(n int64, indptr, indices []int64, values []float64, v []int64, keys []uint64, pick picker, sc *scratch) *sparse.CSR {
	return pickRowsAt(n, indptr, indices, values, nil, v, keys, pick, sc)
}

// pickAhead is how many rows ahead of its pick pickRowsAt asks for the
// cache lines of a row it reads in place.
const pickAhead = 8

// pickRowsAt is pickRows on row at[i] of (indptr, indices, values) as
// row i, for i < len(v), when at is not nil: the rows of a matrix picked
// in place, without copying them into a selection first. It prefetches
// the rows pickAhead ahead: rows scattered over an adjacency larger than
// the caches otherwise miss one after another.
func pickRowsAt(n int64, indptr, indices []int64, values []float64, at, v []int64, keys []uint64, pick picker, sc *scratch) *sparse.CSR {
	m := int64(len(v))
	out := &sparse.CSR{NRows: m, NCols: n, Indptr: make([]int64, m+1)}
	ind, val := sc.ind[:0], sc.val[:0]
	ask := func(i int64) {
		lo, hi := indptr[at[i]], indptr[at[i]+1]
		if hi > lo {
			prefetch.Lines(unsafe.Pointer(&indices[lo]), int(hi-lo)*8)
			if values != nil {
				prefetch.Lines(unsafe.Pointer(&values[lo]), int(hi-lo)*8)
			}
		}
	}
	if at != nil && prefetch.Enabled {
		for i := range min(pickAhead, m) {
			ask(i)
		}
	}
	for i := range m {
		r := i
		if at != nil {
			r = at[i]
			if prefetch.Enabled && i+pickAhead < m {
				ask(i + pickAhead)
			}
		}
		lo, hi := indptr[r], indptr[r+1]
		cols := indices[lo:hi]
		var vals []float64
		if values != nil {
			vals = values[lo:hi]
		}
		for _, k := range pick(sc, keys[i], v[i], cols, vals) {
			ind = append(ind, cols[k])
			if vals != nil {
				val = append(val, vals[k])
			}
		}
		out.Indptr[i+1] = int64(len(ind))
	}
	out.Indices = append(make([]int64, 0, len(ind)), ind...)
	if values != nil {
		out.Values = append(make([]float64, 0, len(val)), val...)
	}
	sc.ind, sc.val = ind, val
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

func (t *replicated) N() int64           { return t.m.NRows }
func (t *replicated) Name() string       { return string(LayoutReplicated) }
func (t *replicated) Local() *sparse.CSR { return t.m }

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
		if t.sorted {
			// P's rows would be m's rows copied (a selection of sorted,
			// distinct rows): pick from m's rows in place.
			parts[x] = pickRowsAt(t.m.NCols, t.m.Indptr, t.m.Indices, t.m.Values, v[lo:hi], v[lo:hi], keys[lo:hi], pick, sc)
			return
		}
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
// a topology (replicated, or the spgemm.Stream of a distributed one) forms
// at a time: 2^16 entries, 1 MiB of P with
// its values (a variable for the tests).
var chunkWork int64 = 1 << 16
