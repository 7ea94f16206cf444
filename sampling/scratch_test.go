package sampling

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// idTable behaves as a map from vertex to int32, through resets to
// smaller and larger sizes and growth past the size it was reset for,
// hashed (the range of the keys unknown or large) or direct (a range at
// most twice its slots), and from one form to the other.
func TestIdTable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var tab idTable
	for trial, tc := range []struct {
		m      int
		n      int64 // the keys' range, 0: unknown
		direct bool
	}{
		{0, 0, false}, {5, 1 << 40, false}, {1000, 0, false}, {3, 100, true}, {70000, 0, false},
		{10, 128, true}, {1000, 4096, true}, {1000, 4097, false}, {70000, 200000, true}, {2, 60, true},
	} {
		want := map[int64]int32{}
		tab.reset(tc.m, tc.n)
		require.Equal(t, tc.direct, tab.direct, "m=%d n=%d", tc.m, tc.n)
		span := tc.n
		if span == 0 {
			span = 1 << 40
		}
		for x := range 3*tc.m + 100 { // past m: a hashed table grows
			v := r.Int64N(span)
			if trial%2 == 0 {
				v = r.Int64N(min(span, int64(2*tc.m+50))) // many repeats
			}
			got := tab.put(v, int32(x))
			if w, ok := want[v]; ok {
				require.Equal(t, w, got, "put(%d) of a stored key", v)
			} else {
				require.Equal(t, int32(x), got, "put(%d) of a new key", v)
				want[v] = int32(x)
			}
		}
		for v, w := range want {
			require.Equal(t, w, tab.get(v))
		}
		require.Equal(t, int32(-1), tab.get(1<<41), "absent key")
		for v := range min(span, 200) {
			if _, ok := want[v]; !ok {
				require.Equal(t, int32(-1), tab.get(v), "absent key %d", v)
			}
		}
		if !tab.direct {
			require.Equal(t, len(want), tab.used)
			require.LessOrEqual(t, 2*tab.used, int(tab.mask+1), "at most half full")
		}
	}
	for _, n := range []int64{0, 50} {
		tab.reset(1, n)
		require.Equal(t, int32(-1), tab.get(0), "reset empties the table")
	}
	// A direct table whose generation wraps clears its stamps.
	tab.gen = 0
	tab.reset(1, 50)
	require.Equal(t, int32(3), tab.put(7, 3)) // stamped with generation 1
	tab.gen = math.MaxUint32
	tab.reset(1, 50)
	require.Equal(t, uint32(1), tab.gen)
	require.Equal(t, int32(-1), tab.get(7), "a stamp of generation 1 outlived the wrap")
}

// randomBatches returns k minibatches of size distinct seeds of [0, n)
// and their keys.
func randomBatches(r *rand.Rand, n int64, k, size int) ([][]int64, []uint64) {
	batches, keys := make([][]int64, k), make([]uint64, k)
	for b := range k {
		seen := map[int64]bool{}
		for len(batches[b]) < size {
			if v := r.Int64N(n); !seen[v] {
				seen[v] = true
				batches[b] = append(batches[b], v)
			}
		}
		keys[b] = r.Uint64()
	}
	return batches, keys
}

// The blocks, whose sources idTable numbers, equal those of arrayRelabel
// and arrayBlock (the implementation before the table, with an array of n
// entries) on the same rows, for SAGE and LADIES on R-MAT and SBM graphs.
func TestTableEqualsArray(t *testing.T) {
	rm, err := graph.RMAT(graph.DefaultRMAT(12, 8))
	require.NoError(t, err)
	sbm, err := graph.SBM(graph.DefaultSBM(3000))
	require.NoError(t, err)
	for _, g := range []struct {
		name string
		adj  *sparse.CSR
	}{{"rmat", rm}, {"sbm", sbm.Adj}} {
		n := g.adj.NRows
		batches, keys := randomBatches(rand.New(rand.NewPCG(3, 4)), n, 5, 64)
		sage, err := NewNodeWise(g.adj, []int{10, 5, -1})
		require.NoError(t, err)
		ladies, err := NewLayerWise(g.adj, []int{200, 100, 50})
		require.NoError(t, err)
		for _, s := range []Sampler{sage, ladies} {
			t.Run(fmt.Sprintf("%s/%T", g.name, s), func(t *testing.T) {
				ms, err := s.Sample(batches, keys)
				require.NoError(t, err)
				pos := make([]int32, n)
				for v := range pos {
					pos[v] = -1
				}
				for b, m := range ms {
					for l, blk := range m.Blocks {
						h := len(m.Blocks) - 1 - l
						want := referenceBlock(t, s, blk.Dst, keys[b], h, pos)
						require.Equal(t, want, blk, "minibatch %d, block %d", b, l)
					}
				}
			})
		}
	}
}

// referenceBlock returns the block of hop h of the minibatch of the given
// key whose destinations are dst, built from the rows of s's topology by
// arrayRelabel or arrayBlock with pos.
func referenceBlock(t *testing.T, s Sampler, dst []int64, key uint64, h int, pos []int32) Block {
	keys := make([]uint64, len(dst))
	for i := range keys {
		keys[i] = key
	}
	switch s := s.(type) {
	case *NodeWise:
		smp, err := s.top.rows(dst, keys, uniformPicker(h, s.Fanouts[h]))
		require.NoError(t, err)
		return arrayRelabel(dst, smp, pos)
	case *LayerWise:
		r, err := s.top.rows(dst, keys, nil)
		require.NoError(t, err)
		rsq := &sparse.CSR{NRows: r.NRows, NCols: r.NCols, Indptr: r.Indptr, Indices: r.Indices, Values: make([]float64, len(r.Values))}
		for x, a := range r.Values {
			rsq.Values[x] = a * a
		}
		q := &sparse.CSR{NRows: 1, NCols: int64(len(dst)), Indptr: []int64{0, int64(len(dst))}}
		for x := range dst {
			q.Indices = append(q.Indices, int64(x))
		}
		p, err := sparse.Mul(q, rsq)
		require.NoError(t, err)
		var prefix []float64
		factors := drawLayer(p, []uint64{key}, h, s.Sizes[h], newStreams(), &prefix)
		return arrayBlock(dst, r, p.Row(0), factors[0], pos)
	}
	t.Fatalf("no reference for %T", s)
	return Block{}
}

// wideTopology is a graph of n vertices held by no array: row v has
// 1 + v%5 neighbours spread over [0, n), with values (for LADIES).
type wideTopology struct{ n int64 }

func (w wideTopology) N() int64     { return w.n }
func (w wideTopology) Name() string { return "wide" }

// Local returns nil: the graph is computed, not held.
func (w wideTopology) Local() *sparse.CSR { return nil }

func (w wideTopology) row(v int64) []int64 {
	out := make([]int64, 0, 5)
	for j := range 1 + v%5 {
		out = append(out, int64(rng.Mix(uint64(v), uint64(j))%uint64(w.n)))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (w wideTopology) rows(v []int64, keys []uint64, pick picker) (*sparse.CSR, error) {
	m := &sparse.CSR{NRows: int64(len(v)), NCols: w.n, Indptr: make([]int64, len(v)+1),
		Indices: make([]int64, 0, 5*len(v)), Values: make([]float64, 0, 5*len(v))}
	for i, u := range v {
		for _, c := range w.row(u) {
			m.Indices = append(m.Indices, c)
			m.Values = append(m.Values, 1/float64(2+u%5))
		}
		m.Indptr[i+1] = int64(len(m.Indices))
	}
	if pick == nil {
		return m, nil
	}
	return pickRows(w.n, m.Indptr, m.Indices, nil, v, keys, pick, newScratch()), nil
}

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// On a graph of 2^26 vertices and few edges, a Sample call (with the rows
// its topology makes) and a FullBlockRows allocate in proportion to their
// blocks, under n/16 bytes: nothing of the graph's order (an array of n
// int32 per goroutine, as the samplers had before idTable, is 256 MiB).
func TestScratchNotOfLengthN(t *testing.T) {
	const n = 1 << 26
	top := wideTopology{n}
	batches, keys := randomBatches(rand.New(rand.NewPCG(5, 6)), n, 2, 256)
	sage, err := NewNodeWiseOn(top, []int{4, 3})
	require.NoError(t, err)
	ladies, err := NewLayerWiseOn(top, []int{300, 200})
	require.NoError(t, err)
	for _, s := range []Sampler{sage, ladies} {
		tables = sync.Pool{New: tables.New} // no table kept from earlier tests
		var ms []*MiniBatch
		bytes := allocated(func() { ms, err = s.Sample(batches, keys) })
		require.NoError(t, err)
		var entries int64
		for _, m := range ms {
			for _, b := range m.Blocks {
				entries += int64(len(b.Src)) + b.Adj.NNZ()
			}
		}
		t.Logf("%T: %d bytes for %d block entries", s, bytes, entries)
		require.Less(t, bytes, uint64(n/16), "%T allocates O(n)", s)
	}
	// FullBlockRows over 300 rows of the wide graph.
	const lo = n - 1000
	blk := &sparse.CSR{NRows: 300, NCols: n, Indptr: make([]int64, 301)}
	for v := int64(lo); v < lo+300; v++ {
		blk.Indices = append(blk.Indices, top.row(v)...)
		blk.Indptr[v-lo+1] = int64(len(blk.Indices))
	}
	dst := []int64{lo + 7, lo + 299, lo, lo + 100}
	bytes := allocated(func() { FullBlockRows(blk, lo, dst) })
	require.Less(t, bytes, uint64(n/16), "FullBlockRows allocates O(n)")
}

// arrayRelabel is relabel as it was before idTable, numbering the sources
// with an array pos of n entries (−1 everywhere on entry and on return):
// the reference for the table.
func arrayRelabel(dst []int64, smp *sparse.CSR, pos []int32) Block {
	nd := len(dst)
	src := make([]int64, nd, nd+len(smp.Indices))
	copy(src, dst)
	for i, v := range dst {
		pos[v] = int32(i)
	}
	adj := &sparse.CSR{NRows: int64(nd), Indptr: smp.Indptr, Indices: make([]int64, len(smp.Indices))}
	for q, v := range smp.Indices {
		j := pos[v]
		if j < 0 {
			j = int32(len(src))
			pos[v] = j
			src = append(src, v)
		}
		adj.Indices[q] = int64(j)
	}
	for _, v := range src {
		pos[v] = -1
	}
	for i := range nd {
		slices.Sort(adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]])
	}
	adj.NCols = int64(len(src))
	return Block{Adj: adj, Dst: src[:nd:nd], Src: slices.Clip(src)}
}

// arrayBlock is block as it was before idTable, numbering the sources with
// an array pos of n entries (−1 everywhere on entry and on return): the
// reference for the table.
func arrayBlock(dst []int64, norm *sparse.CSR, cols []int64, factor []float64, pos []int32) Block {
	nd := len(dst)
	src := make([]int64, nd, nd+len(cols))
	copy(src, dst)
	for i, v := range dst {
		pos[v] = int32(i)
	}
	weight := make(map[int64]float64, len(cols))
	for t, u := range cols {
		if factor[t] == 0 {
			continue
		}
		weight[u] = factor[t]
		if pos[u] < 0 {
			pos[u] = int32(len(src))
			src = append(src, u)
		}
	}
	adj := &sparse.CSR{NRows: int64(nd), NCols: int64(len(src)), Indptr: make([]int64, nd+1)}
	for i := range dst {
		lo, hi := norm.Indptr[i], norm.Indptr[i+1]
		for x := lo; x < hi; x++ {
			u := norm.Indices[x]
			if f, ok := weight[u]; ok {
				adj.Indices = append(adj.Indices, int64(pos[u]))
				adj.Values = append(adj.Values, norm.Values[x]*f)
			}
		}
		adj.Indptr[i+1] = int64(len(adj.Indices))
	}
	for _, v := range src {
		pos[v] = -1
	}
	if adj.Indices == nil {
		adj.Indices, adj.Values = []int64{}, []float64{}
	}
	adj.SortRows()
	return Block{Adj: adj, Dst: src[:nd:nd], Src: slices.Clip(src)}
}

// relabel gives the same block whether it owns the sampled rows (and
// overwrites their indices) or not (and leaves them as they were), on
// rows with repeated vertices across and within rows.
func TestRelabelOwn(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	const n, nd = 500, 40
	dst := make([]int64, 0, nd)
	for _, v := range r.Perm(n)[:nd] {
		dst = append(dst, int64(v))
	}
	smp := &sparse.CSR{NRows: nd, NCols: n, Indptr: make([]int64, nd+1)}
	for i := range nd {
		for range r.IntN(12) {
			smp.Indices = append(smp.Indices, r.Int64N(60)) // many repeats
		}
		slices.Sort(smp.Indices[smp.Indptr[i]:])
		smp.Indptr[i+1] = int64(len(smp.Indices))
	}
	before := slices.Clone(smp.Indices)
	var tab idTable
	kept := relabel(dst, smp, &tab, false)
	require.Equal(t, before, smp.Indices, "relabel without own modified the rows")
	owned := relabel(dst, smp, &tab, true)
	require.Equal(t, kept, owned)
	pos := make([]int32, n)
	for v := range pos {
		pos[v] = -1
	}
	smp.Indices = before
	require.Equal(t, arrayRelabel(dst, smp, pos), owned)
}

// keptRows keeps the rows its picker chooses, in order of their rows of
// Q, whether or not it expects a count of rows: with one, its arena grows
// by doubling only until it has rows to predict from, then (at most four
// times at once) to the entries they predict for the expected rows, an
// eighth over, in a call whose rows keep a steady count of entries, and
// without one it doubles all the way; sorted's table, kept between calls,
// is left zeroed and gives the right rows on a second, smaller call.
func TestKeptRowsGrowth(t *testing.T) {
	const n, deg, fanout = 1000, 20, 7
	r := rand.New(rand.NewPCG(3, 4))
	adj := &sparse.CSR{NRows: n, NCols: n, Indptr: make([]int64, n+1)}
	for v := range n {
		for _, u := range r.Perm(n)[:deg] {
			adj.Indices = append(adj.Indices, int64(u))
		}
		slices.Sort(adj.Indices[adj.Indptr[v]:])
		adj.Indptr[v+1] = int64(len(adj.Indices))
	}
	take := uniformPicker(0, fanout) // fanout of every row's deg entries
	for _, tc := range []struct {
		name     string
		expect   bool
		maxGrows int
	}{
		// Chunk by chunk: the first chunk's doublings, four times its
		// entries after it, then the prediction.
		{name: "expected rows", expect: true, maxGrows: 3},
		{name: "no expectation", expect: false, maxGrows: 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k keptRows
			sc := newScratch()
			for call, nr := range []int{600, 37} {
				k.reset()
				if tc.expect {
					k.expect = nr
				}
				// Q's row y has vertex qv[y] and key keys[y]; the rows
				// come in descending order of Q's rows, in chunks of 50.
				qv, keys := make([]int64, nr), make([]int64, nr)
				for y := range nr {
					qv[y], keys[y] = r.Int64N(n), int64(y%3)
				}
				rows, at := make([]int64, nr), make([]int64, nr)
				for x := range nr {
					rows[x] = int64(nr - 1 - x)
					at[x] = qv[rows[x]]
				}
				grows, last := 0, cap(k.ind)
				for lo := 0; lo < nr; lo += 50 {
					hi := min(lo+50, nr)
					k.pick(adj.Indptr, adj.Indices, nil, at[lo:hi], rows[lo:hi], qv, keys, take, sc)
					if cap(k.ind) != last {
						grows, last = grows+1, cap(k.ind)
					}
				}
				if call == 0 {
					require.LessOrEqual(t, grows, tc.maxGrows)
					if tc.expect {
						require.LessOrEqual(t, cap(k.ind), int(1.125*fanout*float64(nr))+fanout)
					} else {
						require.Greater(t, grows, 3, "doubling from empty to %d entries", fanout*nr)
					}
				}
				got := k.sorted(false, n)
				wantIDs := make([]int64, nr)
				for y := range nr {
					wantIDs[y] = int64(y)
					cols := adj.Indices[adj.Indptr[qv[y]]:adj.Indptr[qv[y]+1]]
					var row []int64
					for _, p := range take(newScratch(), uint64(keys[y]), qv[y], cols, nil) {
						row = append(row, cols[p])
					}
					require.Len(t, row, fanout)
					require.Equal(t, row, got.m.Indices[got.m.Indptr[y]:got.m.Indptr[y+1]], "call %d, row %d", call, y)
				}
				require.Equal(t, wantIDs, got.ids)
				require.Zero(t, slices.Max(k.at), "sorted left its table dirty")
			}
		})
	}
}
