package sampling

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// randomAdj returns an n×n adjacency whose row v has up to maxDeg entries.
// A messy one has unsorted rows, repeated entries and self-loops; about a
// fifth of the rows are empty either way.
func randomAdj(t testing.TB, r *rand.Rand, n int64, maxDeg int, messy bool) *sparse.CSR {
	var rows, cols []int64
	for v := range n {
		if r.IntN(5) == 0 {
			continue
		}
		deg := r.IntN(maxDeg + 1)
		seen := map[int64]bool{}
		for range deg {
			u := r.Int64N(n)
			if !messy && (u == v || seen[u]) {
				continue
			}
			seen[u] = true
			rows = append(rows, v)
			cols = append(cols, u)
		}
	}
	a, err := sparse.FromCOO(n, n, rows, cols, nil)
	require.NoError(t, err)
	if !messy {
		a.SortRows()
	}
	return a
}

// sample1 samples one minibatch with key.
func sample1(t testing.TB, s Sampler, seeds []int64, key uint64) *MiniBatch {
	t.Helper()
	ms, err := s.Sample([][]int64{seeds}, []uint64{key})
	require.NoError(t, err)
	require.Len(t, ms, 1)
	return ms[0]
}

// neighbours returns the distinct neighbours of v in ascending order.
func neighbours(a *sparse.CSR, v int64) []int64 {
	nb := slices.Clone(a.Row(v))
	slices.Sort(nb)
	return slices.Compact(nb)
}

// checkBlock verifies the structural contract of a block sampled from adj
// with the given fanout (negative: all neighbours).
func checkBlock(t *testing.T, adj *sparse.CSR, b Block, fanout int) {
	t.Helper()
	require.NoError(t, b.Adj.Validate())
	require.Nil(t, b.Adj.Values)
	require.Equal(t, int64(len(b.Dst)), b.Adj.NRows)
	require.Equal(t, int64(len(b.Src)), b.Adj.NCols)
	require.Equal(t, b.Dst, b.Src[:len(b.Dst)], "Src must begin with Dst")
	pos := map[int64]int{}
	for j, v := range b.Src {
		_, dup := pos[v]
		require.False(t, dup, "source %d repeated", v)
		pos[v] = j
	}
	// The sources after Dst are exactly the sampled vertices that are not
	// destinations, in order of first appearance (rows in order, each row in
	// ascending global id).
	var order []int64
	seen := map[int64]bool{}
	for _, v := range b.Dst {
		seen[v] = true
	}
	for i, v := range b.Dst {
		row := b.Adj.Row(int64(i))
		for k := 1; k < len(row); k++ {
			require.Less(t, row[k-1], row[k], "row %d not sorted and distinct", i)
		}
		nb := neighbours(adj, v)
		gids := make([]int64, len(row))
		for k, j := range row {
			gids[k] = b.Src[j]
			_, ok := slices.BinarySearch(nb, gids[k])
			require.True(t, ok, "sampled edge %d→%d not in the graph", v, gids[k])
		}
		want := len(nb)
		if fanout >= 0 {
			want = min(fanout, len(nb))
		}
		require.Len(t, row, want, "row of %d (degree %d, fanout %d)", v, len(nb), fanout)
		if want == len(nb) {
			slices.Sort(gids)
			require.Equal(t, nb, gids, "all neighbours of %d kept", v)
		}
		slices.Sort(gids)
		for _, g := range gids {
			if !seen[g] {
				seen[g] = true
				order = append(order, g)
			}
		}
	}
	require.Equal(t, len(b.Dst)+len(order), len(b.Src), "sources not reached by any edge")
	if len(order) > 0 {
		require.Equal(t, order, b.Src[len(b.Dst):], "order of new sources")
	}
}

// checkMiniBatch verifies the contract of a minibatch of seeds.
func checkMiniBatch(t *testing.T, adj *sparse.CSR, fanouts []int, seeds []int64, m *MiniBatch) {
	t.Helper()
	require.Len(t, m.Blocks, len(fanouts))
	require.Equal(t, len(seeds), len(m.Seeds))
	if len(seeds) > 0 {
		require.Equal(t, seeds, m.Seeds)
	}
	require.Equal(t, m.Seeds, m.Blocks[len(m.Blocks)-1].Dst)
	require.Equal(t, m.Blocks[0].Src, m.Input())
	for l, b := range m.Blocks {
		checkBlock(t, adj, b, fanouts[len(fanouts)-1-l])
		if l+1 < len(m.Blocks) {
			require.Equal(t, m.Blocks[l+1].Src, b.Dst, "block %d: Dst must be the next block's Src", l)
		}
	}
}

func TestNodeWise(t *testing.T) {
	r := rng.New(1, 1)
	for _, tc := range []struct {
		name    string
		n       int64
		maxDeg  int
		messy   bool
		fanouts []int
		batch   int
	}{
		{"one layer", 50, 8, false, []int{3}, 10},
		{"all neighbours", 50, 8, true, []int{-1, -1}, 7},
		{"zero fanout", 30, 5, false, []int{0, 2}, 5},
		{"graphsage 25,10", 400, 60, false, []int{25, 10}, 32},
		{"messy 3 layers", 200, 12, true, []int{5, 4, 3}, 20},
		{"fanout near degree", 100, 12, false, []int{11, 10}, 30},
		{"single seed", 40, 6, false, []int{4, 4, 4, 4}, 1},
		{"no seeds", 40, 6, false, []int{4, 4}, 0},
		{"every vertex", 60, 10, true, []int{2}, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adj := randomAdj(t, r, tc.n, tc.maxDeg, tc.messy)
			s, err := NewNodeWise(adj, tc.fanouts)
			require.NoError(t, err)
			for trial := range 5 {
				seeds := r.Perm(int(tc.n))[:tc.batch]
				ids := make([]int64, len(seeds))
				for i, v := range seeds {
					ids[i] = int64(v)
				}
				orig := slices.Clone(ids)
				key := rng.Mix(2, uint64(trial))
				m := sample1(t, s, ids, key)
				assert.Equal(t, orig, ids, "seeds modified")
				checkMiniBatch(t, adj, tc.fanouts, ids, m)
				ref := referenceSample(adj, tc.fanouts, ids, key)
				require.Equal(t, ref, m, "matrix path differs from the per-row reference")
			}
		})
	}
}

func TestNodeWiseDeterminism(t *testing.T) {
	r := rng.New(3)
	adj := randomAdj(t, r, 500, 40, false)
	s, err := NewNodeWise(adj, []int{10, 5})
	require.NoError(t, err)
	seeds := []int64{4, 400, 17, 99, 250, 3}
	a := sample1(t, s, seeds, 91)
	assert.Equal(t, a, sample1(t, s, seeds, 91))
	c := sample1(t, s, seeds, 92)
	assert.NotEqual(t, a.Blocks[0].Adj, c.Blocks[0].Adj, "different keys gave the same sample")
}

// A bulk of k minibatches equals the k minibatches sampled one by one, in
// any order of the bulk, overlapping seeds and empty minibatches included.
func TestNodeWiseBulk(t *testing.T) {
	r := rng.New(5)
	adj := randomAdj(t, r, 300, 30, true)
	s, err := NewNodeWise(adj, []int{6, 4, 3})
	require.NoError(t, err)
	var batches [][]int64
	var keys []uint64
	for b := range 16 {
		size := r.IntN(40)
		if b == 3 {
			size = 0
		}
		var seeds []int64
		for _, v := range r.Perm(300)[:size] {
			seeds = append(seeds, int64(v))
		}
		batches = append(batches, seeds)
		keys = append(keys, rng.Mix(7, uint64(b)))
	}
	bulk, err := s.Sample(batches, keys)
	require.NoError(t, err)
	require.Len(t, bulk, len(batches))
	for b := range batches {
		checkMiniBatch(t, adj, s.Fanouts, batches[b], bulk[b])
		require.Equal(t, sample1(t, s, batches[b], keys[b]), bulk[b], "minibatch %d", b)
	}
	// Reversed order: the same minibatches, reversed.
	rb, rk := slices.Clone(batches), slices.Clone(keys)
	slices.Reverse(rb)
	slices.Reverse(rk)
	rev, err := s.Sample(rb, rk)
	require.NoError(t, err)
	slices.Reverse(rev)
	require.Equal(t, bulk, rev)
}

func TestNewNodeWiseErrors(t *testing.T) {
	sq := &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 2}, Indices: []int64{1, 0}}
	for _, tc := range []struct {
		name    string
		adj     *sparse.CSR
		fanouts []int
	}{
		{"nil adjacency", nil, []int{1}},
		{"not square", &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}}, []int{1}},
		{"invalid", &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 1}, Indices: []int64{5}}, []int{1}},
		{"no fanouts", sq, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewNodeWise(tc.adj, tc.fanouts)
			assert.Error(t, err)
			assert.Nil(t, s)
		})
	}
	f := []int{2, 1}
	s, err := NewNodeWise(sq, f)
	require.NoError(t, err)
	f[0] = 7
	assert.Equal(t, []int{2, 1}, s.Fanouts, "fanouts not copied")
}

func TestSampleErrors(t *testing.T) {
	adj := &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 1, 2, 3}, Indices: []int64{1, 2, 0}}
	s, err := NewNodeWise(adj, []int{1})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		seeds []int64
		msg   string
	}{
		{"too large", []int64{0, 3}, "outside"},
		{"negative", []int64{-1}, "outside"},
		{"repeated", []int64{2, 0, 2}, "repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := s.Sample([][]int64{{1}, tc.seeds}, []uint64{1, 2})
			require.ErrorContains(t, err, tc.msg)
			require.ErrorContains(t, err, "minibatch 1")
			assert.Nil(t, m)
		})
	}
	m, err := s.Sample([][]int64{{0}}, nil)
	require.ErrorContains(t, err, "0 keys for 1 minibatches")
	assert.Nil(t, m)
}

// TestUniformity samples the neighbours of the centre of a star many times
// and checks that every leaf is taken about equally often (Pearson's
// chi-square against the uniform inclusion probability fanout/degree).
// The fanouts cover plain rejection (5 of 50) and the regime that rebuilds
// the prefix sums (40 of 50).
func TestUniformity(t *testing.T) {
	const deg, trials = 50, 20000
	rows, cols := make([]int64, deg), make([]int64, deg)
	for k := range cols {
		cols[k] = int64(k + 1)
	}
	adj, err := sparse.FromCOO(deg+1, deg+1, rows, cols, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		new  func(*sparse.CSR, []int) (Sampler, error)
	}{
		{"nodewise", func(a *sparse.CSR, f []int) (Sampler, error) { return NewNodeWise(a, f) }},
		{"plain", func(a *sparse.CSR, f []int) (Sampler, error) { return NewPlain(a, f) }},
	} {
		for _, fanout := range []int{1, 5, 40, 49} {
			t.Run(fmt.Sprintf("%s/fanout=%d", tc.name, fanout), func(t *testing.T) {
				s, err := tc.new(adj, []int{fanout})
				require.NoError(t, err)
				count := make([]float64, deg+1)
				for trial := range trials {
					b := sample1(t, s, []int64{0}, rng.Mix(12345, uint64(fanout), uint64(trial))).Blocks[0]
					for _, j := range b.Adj.Indices {
						count[b.Src[j]]++
					}
				}
				expect := float64(trials) * float64(fanout) / deg
				var chi2 float64
				for _, c := range count[1:] {
					chi2 += (c - expect) * (c - expect) / expect
				}
				// Without replacement the counts are less variable than
				// multinomial ones, so the statistic is at most about chi-square
				// with 49 degrees of freedom: mean 49, standard deviation 9.9.
				// 110 is six standard deviations above the mean.
				assert.Less(t, chi2, 110.0, "chi-square of leaf counts")
			})
		}
	}
}

// The plain baseline sampler keeps the minibatch contract on graphs
// without repeated entries.
func TestPlain(t *testing.T) {
	r := rng.New(11)
	for _, fanouts := range [][]int{{3}, {25, 10}, {-1, 2}, {0, 4}, {5, 4, 3}} {
		adj := randomAdj(t, r, 200, 30, false)
		s, err := NewPlain(adj, fanouts)
		require.NoError(t, err)
		var batches [][]int64
		var keys []uint64
		for b := range 4 {
			var seeds []int64
			for _, v := range r.Perm(200)[:10*b] {
				seeds = append(seeds, int64(v))
			}
			batches, keys = append(batches, seeds), append(keys, uint64(b))
		}
		ms, err := s.Sample(batches, keys)
		require.NoError(t, err)
		for b := range batches {
			checkMiniBatch(t, adj, fanouts, batches[b], ms[b])
		}
	}
	_, err := NewPlain(randomAdj(t, r, 10, 3, false), nil)
	require.Error(t, err)
}

// TestDartsWeighted checks the inclusion frequencies of weighted sampling
// without replacement against the exact probabilities of successive
// sampling, enumerated over all draw orders.
func TestDartsWeighted(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    []float64
		s    int
	}{
		{"one of four", []float64{1, 2, 3, 4}, 1},
		{"two of four", []float64{1, 2, 3, 4}, 2},
		{"zeros", []float64{0, 5, 0, 1, 2}, 2},
		// A dominant weight: after it is taken every dart would land on
		// it; the rebuild keeps the sampler fast and exact.
		{"skewed", []float64{1e9, 1, 1, 1, 2}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const trials = 40000
			r := testPCG(77)
			var d darts
			freq := make([]float64, len(tc.w))
			for range trials {
				got := d.draw(len(tc.w), tc.w, tc.s, r)
				require.Len(t, got, tc.s)
				require.True(t, slices.IsSorted(got))
				for _, k := range got {
					freq[k]++
				}
			}
			want := inclusion(tc.w, tc.s)
			for k := range freq {
				p := want[k]
				// Four binomial standard deviations, plus a little for p
				// near 0 or 1.
				tol := 4*math.Sqrt(p*(1-p)/trials) + 1e-9
				assert.InDelta(t, p, freq[k]/trials, tol, "inclusion of %d", k)
			}
		})
	}
}

// inclusion returns the probability that each item is among s drawn by
// successive sampling with weights w (each draw proportional to the weights
// of the items not yet drawn).
func inclusion(w []float64, s int) []float64 {
	p := make([]float64, len(w))
	taken := make([]bool, len(w))
	var rec func(depth int, prob float64)
	rec = func(depth int, prob float64) {
		if depth == s {
			for k, tk := range taken {
				if tk {
					p[k] += prob
				}
			}
			return
		}
		var total float64
		for k, x := range w {
			if !taken[k] {
				total += x
			}
		}
		for k, x := range w {
			if taken[k] || x == 0 {
				continue
			}
			taken[k] = true
			rec(depth+1, prob*x/total)
			taken[k] = false
		}
	}
	rec(0, 1)
	return p
}

func TestDarts(t *testing.T) {
	var d darts
	// Unit weights given explicitly draw exactly what nil weights draw.
	for _, n := range []int{3, 10, 64} {
		for _, s := range []int{1, 2, n / 2, n - 1} {
			ones := make([]float64, n)
			for k := range ones {
				ones[k] = 1
			}
			r1, r2 := testPCG(5, uint64(n), uint64(s)), testPCG(5, uint64(n), uint64(s))
			for range 50 {
				a := slices.Clone(d.draw(n, nil, s, r1))
				b := d.draw(n, ones, s, r2)
				require.Equal(t, a, b, "n=%d s=%d", n, s)
			}
		}
	}
	// Keeping all uses no randomness and skips zero weights.
	r := &pcg{hi: 6}
	before := *r
	assert.Equal(t, []int{0, 1, 2}, d.draw(3, nil, 3, r))
	assert.Equal(t, []int{0, 1, 2}, d.draw(3, nil, -1, r))
	assert.Equal(t, []int{1, 3}, d.draw(4, []float64{0, 2, 0, 1}, 2, r))
	assert.Empty(t, d.draw(4, nil, 0, r))
	assert.Empty(t, d.draw(0, nil, 3, r))
	assert.Equal(t, before, *r, "generator advanced")
	assert.Panics(t, func() { d.draw(2, []float64{1, -1}, 1, r) })
	assert.Panics(t, func() { d.draw(2, []float64{1, math.NaN()}, 1, r) })
	assert.Panics(t, func() { d.draw(2, []float64{math.Inf(1), 1}, 1, r) })
}

func TestFullBlock(t *testing.T) {
	// 0→{2,1,2}, 1→{}, 2→{3,0}, 3→{3}: repeats count once, self-loops are
	// kept.
	adj := &sparse.CSR{NRows: 4, NCols: 4, Indptr: []int64{0, 3, 3, 5, 6},
		Indices: []int64{2, 1, 2, 3, 0, 3}}
	b := FullBlock(adj, []int64{2, 3, 1})
	want := Block{
		Adj: &sparse.CSR{NRows: 3, NCols: 4, Indptr: []int64{0, 2, 3, 3},
			// Row 0 (vertex 2) has neighbours 0 and 3: 0 is new (local 3),
			// 3 is destination 1.
			Indices: []int64{1, 3, 1}},
		Dst: []int64{2, 3, 1},
		Src: []int64{2, 3, 1, 0},
	}
	assert.Equal(t, want, b)

	r := rng.New(4)
	big := randomAdj(t, r, 300, 20, true)
	dst := []int64{5, 77, 0, 299, 150}
	checkBlock(t, big, FullBlock(big, dst), -1)
	// FullBlock equals node-wise sampling with fanout −1.
	s, err := NewNodeWise(big, []int{-1})
	require.NoError(t, err)
	assert.Equal(t, sample1(t, s, dst, 1).Blocks[0], FullBlock(big, dst))

	assert.PanicsWithValue(t, "sampling: destination vertex out of range", func() { FullBlock(adj, []int64{4}) })
	assert.PanicsWithValue(t, "sampling: destination vertex repeated", func() { FullBlock(adj, []int64{1, 1}) })
}

// referenceSample is NodeWise.Sample written directly: for each frontier
// vertex v at hop h, take its distinct neighbours in ascending order and
// throw darts at them with RowStream(key, h, v) (a linear scan instead of
// prefix sums), then build the block. It shares no code with the package
// but RowStream.
func referenceSample(adj *sparse.CSR, fanouts []int, seeds []int64, key uint64) *MiniBatch {
	m := &MiniBatch{Blocks: make([]Block, len(fanouts))}
	frontier := slices.Clone(seeds)
	for h, fanout := range fanouts {
		b := Block{Dst: frontier, Src: slices.Clone(frontier)}
		index := map[int64]int64{}
		for j, v := range b.Src {
			index[v] = int64(j)
		}
		var rows, cols []int64
		for i, v := range frontier {
			nb := neighbours(adj, v)
			var pick []int64
			if fanout < 0 || len(nb) <= fanout {
				pick = nb
			} else {
				pick = refDarts(nb, fanout, RowStream(key, h, v))
			}
			for _, u := range pick {
				j, ok := index[u]
				if !ok {
					j = int64(len(b.Src))
					index[u] = j
					b.Src = append(b.Src, u)
				}
				rows = append(rows, int64(i))
				cols = append(cols, j)
			}
		}
		a, err := sparse.FromCOO(int64(len(b.Dst)), int64(len(b.Src)), rows, cols, nil)
		if err != nil {
			panic(err)
		}
		a.SortRows()
		b.Adj = a
		m.Blocks[len(fanouts)-1-h] = b
		frontier = b.Src
	}
	m.Seeds = m.Blocks[len(fanouts)-1].Dst
	return m
}

// refDarts draws s of the candidates cand uniformly without replacement:
// a dart u in [0, remaining) picks the ⌊u⌋-th remaining candidate; darts on
// taken candidates are thrown again, and once more than half of the
// remaining candidates are taken they are removed. It returns the picks in
// ascending order.
func refDarts(cand []int64, s int, r *rand.Rand) []int64 {
	remaining := slices.Clone(cand)
	taken := map[int64]bool{}
	var out []int64
	since := 0
	for len(out) < s {
		k := int(r.Float64() * float64(len(remaining)))
		if k >= len(remaining) || taken[remaining[k]] {
			continue
		}
		taken[remaining[k]] = true
		out = append(out, remaining[k])
		since++
		if 2*since > len(remaining) && len(out) < s {
			remaining = slices.DeleteFunc(remaining, func(v int64) bool { return taken[v] })
			since = 0
		}
	}
	slices.Sort(out)
	return out
}

// BenchmarkNodeWise measures sampled edges per second on an R-MAT graph
// (Graph500 parameters) for minibatches of random seeds.
func BenchmarkNodeWise(b *testing.B) {
	for _, bc := range []struct {
		scale, ef, batch int
		fanouts          []int
	}{
		{16, 16, 1024, []int{25, 10}},
		{16, 16, 1024, []int{15, 10, 5}},
		{20, 16, 1024, []int{15, 10, 5}},
	} {
		var fs []string
		for _, f := range bc.fanouts {
			fs = append(fs, strconv.Itoa(f))
		}
		name := fmt.Sprintf("rmat=%d/ef=%d/b=%d/fanouts=%s", bc.scale, bc.ef, bc.batch, strings.Join(fs, ","))
		b.Run(name, func(b *testing.B) {
			if bc.scale > 16 && testing.Short() {
				b.Skip("large graph")
			}
			adj, err := graph.RMAT(graph.DefaultRMAT(bc.scale, bc.ef))
			require.NoError(b, err)
			s, err := NewNodeWise(adj, bc.fanouts)
			require.NoError(b, err)
			r := rng.New(1)
			ids := make([]int64, adj.NRows)
			for i := range ids {
				ids[i] = int64(i)
			}
			var edges, cand int64
			b.ReportAllocs()
			for b.Loop() {
				// Partial Fisher–Yates: the first batch ids are a uniform
				// sample of distinct vertices.
				for i := range bc.batch {
					j := i + r.IntN(len(ids)-i)
					ids[i], ids[j] = ids[j], ids[i]
				}
				ms, err := s.Sample([][]int64{ids[:bc.batch]}, []uint64{r.Uint64()})
				if err != nil {
					b.Fatal(err)
				}
				m := ms[0]
				for _, blk := range m.Blocks {
					edges += blk.Adj.NNZ()
					for _, v := range blk.Dst {
						cand += adj.Degree(v)
					}
				}
			}
			b.ReportMetric(float64(edges)/b.Elapsed().Seconds(), "edges/s")
			// The entries of P = Q·A per sampled edge: the price of
			// materialising the candidates.
			b.ReportMetric(float64(cand)/float64(edges), "nnz(P)/edge")
		})
	}
}
