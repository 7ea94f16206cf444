package dist

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// datasets returns Cora (sparse features) and a generated SBM graph made
// directed, weighted and with repeated edges (dense features), whole.
func datasets(t *testing.T) map[string]*graph.Dataset {
	t.Helper()
	cora, err := graph.Load(filepath.Join("..", "..", "data", "cora"), graph.ReadOptions{FeatureFormat: graph.FeatureCSR})
	require.NoError(t, err)
	require.NotNil(t, cora.FeatCSR)
	sbm, err := graph.SBM(graph.DefaultSBM(500))
	require.NoError(t, err)
	// Drop every third edge (so the graph is directed), repeat every
	// seventh, and weigh them all.
	var r, c []int64
	var w []float64
	for i := range sbm.Adj.NRows {
		for k, j := range sbm.Adj.Row(i) {
			if (i+j+int64(k))%3 == 0 {
				continue
			}
			r, c, w = append(r, i), append(c, j), append(w, float64(i*1000+j))
			if j%7 == 0 {
				r, c, w = append(r, i), append(c, j), append(w, -float64(j))
			}
		}
	}
	adj, err := sparse.FromCOO(sbm.NumNodes, sbm.NumNodes, r, c, w)
	require.NoError(t, err)
	sbm.Adj = adj
	require.NotNil(t, sbm.Feat)
	return map[string]*graph.Dataset{"cora": cora, "sbm": sbm}
}

// blockOf returns rows [lo, hi) of d as a Block.
func blockOf(d *graph.Dataset, lo, hi int64) *Block {
	ids := rangeOf(lo, hi)
	b := &Block{Lo: lo, Adj: sparse.SelectRows(d.Adj, ids), Splits: map[string]Members{}}
	if d.Feat != nil {
		f := d.Feat.Cols
		b.Feat = &dense.Matrix{Rows: int(hi - lo), Cols: f, Data: d.Feat.Data[int(lo)*f : int(hi)*f]}
	}
	if d.FeatCSR != nil {
		b.FeatCSR = sparse.SelectRows(d.FeatCSR, ids)
	}
	if d.Labels != nil {
		b.Labels = d.Labels[lo:hi]
	}
	in := func(vs []int64) []int64 {
		out := []int64{}
		for _, v := range vs {
			if v >= lo && v < hi {
				out = append(out, v)
			}
		}
		return out
	}
	for name, s := range d.Splits {
		b.Splits[name] = Members{in(s.Train), in(s.Valid), in(s.Test)}
	}
	return b
}

// TestRedistributeMatchesMakePart relabels and redistributes Cora and a
// weighted directed graph over p = 1..4 and 9 in-process ranks for a fixed
// random assignment of K parts (K below, equal to and above p), and checks
// that every part equals graph.MakePart of the whole dataset with the
// book of the same assignment, and each part is received by its writer.
// With K = 3 the columns go in rounds of 5 and 64, cutting rows across
// rounds, and the halo's columns are sorted in chunks of as many; else in
// one round and one chunk.
func TestRedistributeMatchesMakePart(t *testing.T) {
	for name, d := range datasets(t) {
		for _, k := range []int{1, 3, 4, 7} {
			for _, round := range []int64{5, 64, 1 << 21} {
				if round < 1<<21 && k != 3 {
					continue
				}
				t.Run(fmt.Sprintf("round=%d", round), func(t *testing.T) {
					defer func(round int64, chunk int) { columnRound, fetchChunk = round, chunk }(columnRound, fetchChunk)
					columnRound = round
					if round < 1<<21 {
						fetchChunk = int(round)
					}
					testRedistribute(t, name, d, k)
				})
			}
		}
	}
}

// testRedistribute is TestRedistributeMatchesMakePart for d with k parts.
func testRedistribute(t *testing.T, name string, d *graph.Dataset, k int) {
	rng := rand.New(rand.NewPCG(uint64(k), 5))
	whole := make([]int32, d.NumNodes)
	for v := range whole {
		whole[v] = int32(rng.IntN(k))
	}
	book, err := partition.New(whole, k, "random")
	require.NoError(t, err)
	wantOff, _ := graph.Relabel(book)
	for _, p := range rankCounts {
		t.Run(fmt.Sprintf("%s/k=%d/p=%d", name, k, p), func(t *testing.T) {
			var mu sync.Mutex
			got := map[int]*PartRows{}
			run(t, p, func(c collective.Comm) error {
				lo, hi := BlockRange(d.NumNodes, p, c.Rank())
				off, parts, err := Redistribute(c, d.NumNodes, blockOf(d, lo, hi), whole[lo:hi], k)
				if err != nil {
					return err
				}
				assert.Equal(t, wantOff, off)
				mu.Lock()
				defer mu.Unlock()
				for _, pr := range parts {
					assert.Equal(t, c.Rank(), Writer(pr.Part, p))
					got[pr.Part] = pr
				}
				return nil
			})
			require.Len(t, got, k)
			for q := range k {
				want, err := graph.MakePart(d, book, q)
				require.NoError(t, err)
				pr := got[q]
				assert.Equal(t, want.Lo, pr.Lo)
				assert.Equal(t, want.Hi, pr.Hi)
				assert.Equal(t, want.Adj, pr.Adj, "part %d adjacency", q)
				assert.Equal(t, want.Feat, pr.Feat, "part %d dense features", q)
				assert.Equal(t, want.FeatCSR, pr.FeatCSR, "part %d sparse features", q)
				assert.Equal(t, want.Labels, pr.Labels, "part %d labels", q)
				assert.Equal(t, want.OrigIDs, pr.OrigIDs, "part %d original ids", q)
				require.Len(t, pr.Splits, len(want.Splits))
				for s, w := range want.Splits {
					assert.Equal(t, Members{w.Train, w.Valid, w.Test}, pr.Splits[s], "part %d split %s", q, s)
				}
			}
		})
	}
}

// TestNewIDsPermutation checks on every rank count that the new ids form a
// permutation of [0, n), each part's a run ascending with the original id.
func TestNewIDsPermutation(t *testing.T) {
	const n, k = 101, 5
	whole := make([]int32, n)
	for v := range whole {
		whole[v] = int32((v * 13) % k)
	}
	for _, p := range rankCounts {
		all := make([]int64, n)
		run(t, p, func(c collective.Comm) error {
			lo, hi := BlockRange(n, p, c.Rank())
			ids, off, err := NewIDs(c, whole[lo:hi], k)
			copy(all[lo:hi], ids)
			assert.Len(t, off, k+1)
			return err
		})
		seen := slices.Clone(all)
		slices.Sort(seen)
		assert.Equal(t, rangeOf(0, n), seen, "p=%d", p)
		for v := 1; v < n; v++ {
			for u := range v {
				if whole[u] == whole[v] {
					assert.Less(t, all[u], all[v], "p=%d", p)
				}
			}
		}
	}
}

// TestReciprocal checks Reciprocal against graph.Reciprocity on the test
// graphs (Cora symmetric, the random one not) at every rank count.
func TestReciprocal(t *testing.T) {
	for name, a := range testGraphs(t) {
		r, m := graph.Reciprocity(a)
		for _, p := range rankCounts {
			run(t, p, func(c collective.Comm) error {
				lo, hi := BlockRange(a.NRows, p, c.Rank())
				got, err := Reciprocal(c, a.NRows, lo, rows(a, lo, hi))
				assert.Equal(t, r == m, got, "%s p=%d", name, p)
				return err
			})
		}
	}
}
