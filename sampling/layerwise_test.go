package sampling

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// normRow returns the entries of row v of Â as a map.
func normRow(norm *sparse.CSR, v int64) map[int64]float64 {
	m := map[int64]float64{}
	for q := norm.Indptr[v]; q < norm.Indptr[v+1]; q++ {
		m[norm.Indices[q]] = norm.Values[q]
	}
	return m
}

// ladiesProbs returns the candidates of the destinations dst and their
// LADIES probabilities p_u ∝ Σ_{v∈dst} Â(v,u)².
func ladiesProbs(norm *sparse.CSR, dst []int64) map[int64]float64 {
	p := map[int64]float64{}
	var total float64
	for _, v := range dst {
		for u, x := range normRow(norm, v) {
			p[u] += x * x
			total += x * x
		}
	}
	for u := range p {
		p[u] /= total
	}
	return p
}

func TestGCNNormalized(t *testing.T) {
	// 0→{1,1,2}, 1→{0}, 2→{}: repeats once, self loops added.
	adj := &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 3, 4, 4}, Indices: []int64{1, 1, 2, 0}}
	got := GCNNormalized(adj)
	d := []float64{3, 2, 1}
	want := &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 3, 5, 6}, Indices: []int64{0, 1, 2, 0, 1, 2},
		Values: []float64{1 / math.Sqrt(d[0]*d[0]), 1 / math.Sqrt(d[0]*d[1]), 1 / math.Sqrt(d[0]*d[2]),
			1 / math.Sqrt(d[1]*d[0]), 1 / math.Sqrt(d[1]*d[1]), 1 / math.Sqrt(d[2]*d[2])}}
	assert.Equal(t, want, got)
}

// The blocks chain, carry Â's values times the importance weights at
// sampled columns only, hold at most Sizes[h] sampled vertices, and are
// exact when the candidates are few.
func TestLayerWiseBlocks(t *testing.T) {
	r := rng.New(21)
	adj := randomAdj(t, r, 200, 25, true)
	s, err := NewLayerWise(adj, []int{30, 12, 5})
	require.NoError(t, err)
	seeds := []int64{3, 150, 77, 12}
	for trial := range 20 {
		m := sample1(t, s, seeds, rng.Mix(22, uint64(trial)))
		require.Equal(t, seeds, m.Seeds)
		require.Equal(t, m.Blocks[0].Src, m.Input())
		for l, b := range m.Blocks {
			require.NoError(t, b.Adj.Validate())
			require.True(t, b.Adj.RowsSorted())
			require.Equal(t, b.Dst, b.Src[:len(b.Dst)])
			if l+1 < len(m.Blocks) {
				require.Equal(t, m.Blocks[l+1].Src, b.Dst)
			}
			size := s.Sizes[len(s.Sizes)-1-l]
			probs := ladiesProbs(s.Norm, b.Dst)
			// The sampled vertices: the columns with an entry.
			sampled := map[int64]bool{}
			for _, j := range b.Adj.Indices {
				sampled[b.Src[j]] = true
			}
			require.LessOrEqual(t, len(sampled), max(size, len(probs)))
			exact := len(probs) <= size
			if !exact {
				require.LessOrEqual(t, len(sampled), size)
			}
			for i, v := range b.Dst {
				row := normRow(s.Norm, v)
				lo, hi := b.Adj.Indptr[i], b.Adj.Indptr[i+1]
				for q := lo; q < hi; q++ {
					u := b.Src[b.Adj.Indices[q]]
					x, ok := row[u]
					require.True(t, ok, "entry (%d,%d) not in Â", v, u)
					f := b.Adj.Values[q] / x
					if exact {
						require.Equal(t, x, b.Adj.Values[q])
						continue
					}
					// f = c_u/(size·p_u) for a whole number c_u ≥ 1.
					c := f * float64(size) * probs[u]
					require.InDelta(t, math.Round(c), c, 1e-9)
					require.GreaterOrEqual(t, math.Round(c), 1.0)
				}
				if exact {
					require.Equal(t, int64(len(row)), hi-lo, "exact block misses neighbours of %d", v)
				}
			}
		}
	}
}

// A bulk equals its minibatches sampled one by one.
func TestLayerWiseBulk(t *testing.T) {
	r := rng.New(23)
	adj := randomAdj(t, r, 300, 20, false)
	s, err := NewLayerWise(adj, []int{40, 20})
	require.NoError(t, err)
	var batches [][]int64
	var keys []uint64
	for b := range 10 {
		var seeds []int64
		for _, v := range r.Perm(300)[:r.IntN(30)] {
			seeds = append(seeds, int64(v))
		}
		batches = append(batches, seeds)
		keys = append(keys, rng.Mix(24, uint64(b)))
	}
	bulk, err := s.Sample(batches, keys)
	require.NoError(t, err)
	for b := range batches {
		require.Equal(t, sample1(t, s, batches[b], keys[b]), bulk[b], "minibatch %d", b)
	}
	other := sample1(t, s, batches[1], keys[1]+1)
	assert.NotEqual(t, bulk[1].Blocks[0].Src, other.Blocks[0].Src, "different keys gave the same sample")
}

// The importance weights make a block's aggregation unbiased: over many
// draws, the mean of Σ_u Adj(v,u)·x_u is Σ_u Â(v,u)·x_u for every
// destination v, within 5 standard errors.
func TestLayerWiseUnbiased(t *testing.T) {
	const n, trials, size = 120, 20000, 6
	r := rng.New(25)
	adj := randomAdj(t, r, n, 15, false)
	s, err := NewLayerWise(adj, []int{size})
	require.NoError(t, err)
	x := make([]float64, n)
	for v := range x {
		x[v] = r.NormFloat64()
	}
	dst := []int64{5, 40, 41, 99, 7}
	require.Greater(t, len(ladiesProbs(s.Norm, dst)), 3*size, "too few candidates to test sampling")
	sum, sumSq := make([]float64, len(dst)), make([]float64, len(dst))
	for trial := range trials {
		b := sample1(t, s, dst, rng.Mix(26, uint64(trial))).Blocks[0]
		for i := range dst {
			var y float64
			for q := b.Adj.Indptr[i]; q < b.Adj.Indptr[i+1]; q++ {
				y += b.Adj.Values[q] * x[b.Src[b.Adj.Indices[q]]]
			}
			sum[i] += y
			sumSq[i] += y * y
		}
	}
	for i, v := range dst {
		var exact float64
		for u, a := range normRow(s.Norm, v) {
			exact += a * x[u]
		}
		mean := sum[i] / trials
		se := math.Sqrt((sumSq[i]/trials - mean*mean) / trials)
		assert.InDelta(t, exact, mean, 5*se+1e-12, "destination %d: exact %g, mean %g ± %g", v, exact, mean, se)
	}
}

// Each candidate u is among the sampled vertices with probability
// 1 − (1 − p_u)^size (size independent draws): Pearson's statistic over the
// candidates stays below its mean plus six standard deviations.
func TestLayerWiseInclusion(t *testing.T) {
	const n, trials, size = 100, 20000, 8
	r := rng.New(27)
	adj := randomAdj(t, r, n, 12, false)
	s, err := NewLayerWise(adj, []int{size})
	require.NoError(t, err)
	dst := []int64{1, 2, 3, 50}
	probs := ladiesProbs(s.Norm, dst)
	require.Greater(t, len(probs), 2*size)
	count := map[int64]float64{}
	for trial := range trials {
		b := sample1(t, s, dst, rng.Mix(28, uint64(trial))).Blocks[0]
		seen := map[int64]bool{}
		for _, j := range b.Adj.Indices {
			seen[b.Src[j]] = true
		}
		for u := range seen {
			count[u]++
		}
	}
	var chi2 float64
	for u, p := range probs {
		pi := 1 - math.Pow(1-p, size)
		e := trials * pi
		chi2 += (count[u] - e) * (count[u] - e) / (e * (1 - pi))
	}
	dof := float64(len(probs))
	assert.Less(t, chi2, dof+6*math.Sqrt(2*dof), "inclusion frequencies: chi-square %.1f over %d candidates", chi2, len(probs))
	for u := range count {
		_, ok := probs[u]
		assert.True(t, ok, "vertex %d sampled but not a candidate", u)
	}
}

func TestNewLayerWiseErrors(t *testing.T) {
	sq := &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 2}, Indices: []int64{1, 0}}
	for _, tc := range []struct {
		name  string
		adj   *sparse.CSR
		sizes []int
	}{
		{"nil adjacency", nil, []int{1}},
		{"not square", &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}}, []int{1}},
		{"no sizes", sq, nil},
		{"zero size", sq, []int{4, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewLayerWise(tc.adj, tc.sizes)
			assert.Error(t, err)
			assert.Nil(t, s)
		})
	}
	s, err := NewLayerWise(sq, []int{1})
	require.NoError(t, err)
	_, err = s.Sample([][]int64{{0, 0}}, []uint64{1})
	assert.ErrorContains(t, err, "repeated")
	assert.Equal(t, []int{1}, slices.Clone(s.Sizes))
}

// BenchmarkLayerWise measures LADIES minibatches per second on an R-MAT
// graph (Graph500 parameters) for minibatches of random seeds, several
// minibatches per Sample call.
func BenchmarkLayerWise(b *testing.B) {
	for _, bc := range []struct {
		scale, ef, batch, k int
		sizes               []int
	}{
		{16, 16, 512, 4, []int{512, 512}},
		{20, 16, 1024, 4, []int{1024, 1024, 1024}},
	} {
		name := fmt.Sprintf("rmat=%d/ef=%d/b=%d/k=%d/sizes=%v", bc.scale, bc.ef, bc.batch, bc.k, bc.sizes)
		b.Run(name, func(b *testing.B) {
			if bc.scale > 16 && testing.Short() {
				b.Skip("large graph")
			}
			adj, err := graph.RMAT(graph.DefaultRMAT(bc.scale, bc.ef))
			require.NoError(b, err)
			s, err := NewLayerWise(adj, bc.sizes)
			require.NoError(b, err)
			r := rng.New(1)
			ids := make([]int64, adj.NRows)
			for i := range ids {
				ids[i] = int64(i)
			}
			var mbs int
			b.ReportAllocs()
			for b.Loop() {
				batches := make([][]int64, bc.k)
				keys := make([]uint64, bc.k)
				for x := range batches {
					// Partial Fisher–Yates: a uniform sample of distinct vertices.
					for i := range bc.batch {
						j := i + r.IntN(len(ids)-i)
						ids[i], ids[j] = ids[j], ids[i]
					}
					batches[x], keys[x] = slices.Clone(ids[:bc.batch]), r.Uint64()
				}
				if _, err := s.Sample(batches, keys); err != nil {
					b.Fatal(err)
				}
				mbs += bc.k
			}
			b.ReportMetric(float64(mbs)/b.Elapsed().Seconds(), "minibatches/s")
		})
	}
}
