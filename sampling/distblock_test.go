package sampling

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/sparse"
)

// blockLayout is a distributed topology built from row blocks.
type blockLayout struct {
	algo   Layout // "1.5d" or "2d"
	pr, pc int
}

func (l blockLayout) String() string { return fmt.Sprintf("%s/%dx%d", l.algo, l.pr, l.pc) }

var blockLayouts = []blockLayout{
	{"1.5d", 1, 1}, {"1.5d", 2, 1}, {"1.5d", 1, 2}, {"1.5d", 3, 1}, {"1.5d", 2, 2}, {"1.5d", 4, 1},
	{"2d", 1, 1}, {"2d", 2, 2},
}

// unevenRowBounds cuts n into nb blocks of uneven sizes, block 1 empty when
// there are at least three (as the part offsets of a partitioned dataset
// may be).
func unevenRowBounds(n int64, nb int) []int64 {
	b := make([]int64, nb+1)
	w := make([]int64, nb)
	var total int64
	for x := range w {
		w[x] = int64(2*x + 1)
		if nb >= 3 && x == 1 {
			w[x] = 0
		}
		total += w[x]
	}
	for x := range nb {
		b[x+1] = b[x] + n*w[x]/total
	}
	b[nb] = n
	return b
}

// sampleBlocks samples batches on the ranks of layout l, minibatch b on
// rank b mod p, bulk at a time, every rank building its topology from its
// own row block of adj (and, for ladies, its rows of Â by
// GCNNormalizedBlock), and returns the minibatches in order and the
// topologies.
func sampleBlocks(t *testing.T, l blockLayout, kind Kind, fanouts []int, adj *sparse.CSR, bulk int, batches [][]int64, keys []uint64) ([]*MiniBatch, []Topology) {
	t.Helper()
	p := l.pr * l.pc
	out := make([]*MiniBatch, len(batches))
	tops := make([]Topology, p)
	var mu sync.Mutex
	err := inproc.Run(p, inproc.Options{}, func(cm collective.Comm) error {
		g, err := collective.NewGrid(cm, l.pr, l.pc)
		if err != nil {
			return err
		}
		rb := unevenRowBounds(adj.NRows, g.PR)
		local := sparse.SelectRows(adj, rangeIDs(rb[g.Row], rb[g.Row+1]))
		s, err := NewBlock(kind, l.algo, g, rb, local, fanouts)
		if err != nil {
			return err
		}
		tops[cm.Rank()] = s.(interface{ Topology() Topology }).Topology()
		if err := sampleShare(s, cm.Rank(), p, bulk, batches, keys, out, &mu); err != nil {
			return err
		}
		return g.Free()
	})
	require.NoError(t, err)
	return out, tops
}

func rangeIDs(lo, hi int64) []int64 {
	ids := make([]int64, hi-lo)
	for x := range ids {
		ids[x] = lo + int64(x)
	}
	return ids
}

// symmetrized returns adj + adjᵀ as a pattern.
func symmetrized(t testing.TB, adj *sparse.CSR) *sparse.CSR {
	var rows, cols []int64
	for v := range adj.NRows {
		for _, u := range adj.Row(v) {
			rows, cols = append(rows, v, u), append(cols, u, v)
		}
	}
	s, err := sparse.FromCOO(adj.NRows, adj.NCols, rows, cols, nil)
	require.NoError(t, err)
	return s
}

// blockGraphs are the graphs the row-block topologies are checked on.
func blockGraphs(t *testing.T) []struct {
	name string
	adj  *sparse.CSR
} {
	r := rand.New(rand.NewPCG(21, 22))
	directed := randomAdj(t, r, 230, 12, true)
	_, file, _, _ := runtime.Caller(0)
	cora, err := graph.Load(filepath.Join(filepath.Dir(file), "..", "data", "cora"), graph.ReadOptions{NoFeatures: true, NoLabels: true})
	require.NoError(t, err)
	rm, err := graph.RMAT(graph.DefaultRMAT(9, 8))
	require.NoError(t, err)
	sbm, err := graph.SBM(graph.SBMParams{Nodes: 600, Classes: 3, AvgDegree: 8, Homophily: 0.7, TrainFrac: 0.6, ValidFrac: 0.2, Seed: 5})
	require.NoError(t, err)
	return []struct {
		name string
		adj  *sparse.CSR
	}{
		{"directed", directed},
		{"symmetric", symmetrized(t, directed)},
		{"cora", cora.Adj},
		{"rmat", rm},
		{"sbm", sbm.Adj},
	}
}

// The minibatches sampled over row blocks, in 1.5D (c = 1, 2) and 2D,
// equal the replicated sampler's for the same seeds and keys, field for
// field, for sage and ladies, with uneven row bounds.
func TestBlockTopologiesSameMinibatches(t *testing.T) {
	samplers := []struct {
		kind    Kind
		fanouts []int
	}{{"sage", []int{4, 3}}, {"sage", []int{-1, 2}}, {"ladies", []int{25, 12}}}
	for _, gr := range blockGraphs(t) {
		r := rand.New(rand.NewPCG(31, uint64(gr.adj.NRows)))
		batches, keys := testBatches(r, gr.adj.NRows, 7, 12)
		for _, sm := range samplers {
			ref, err := New(sm.kind, gr.adj, sm.fanouts, nil)
			require.NoError(t, err)
			want, err := ref.Sample(batches, keys)
			require.NoError(t, err)
			for _, l := range blockLayouts {
				name := fmt.Sprintf("%s/%s%v/%s", gr.name, sm.kind, sm.fanouts, l)
				t.Run(name, func(t *testing.T) {
					got, tops := sampleBlocks(t, l, sm.kind, sm.fanouts, gr.adj, 2, batches, keys)
					require.Equal(t, string(l.algo), tops[0].Name())
					for b := range want {
						sameMiniBatch(t, want[b], got[b], fmt.Sprintf("minibatch %d", b))
					}
				})
			}
		}
	}
}

// Small chunks (many per stage) give the same minibatches.
func TestBlockTopologiesSmallChunks(t *testing.T) {
	defer func(w int64) { chunkWork = w }(chunkWork)
	chunkWork = 5
	r := rand.New(rand.NewPCG(41, 42))
	adj := randomAdj(t, r, 200, 10, true)
	batches, keys := testBatches(r, adj.NRows, 6, 15)
	for _, kind := range []Kind{KindSAGE, KindLADIES} {
		fanouts := []int{3, 2}
		if kind == "ladies" {
			fanouts = []int{20, 10}
		}
		ref, err := New(kind, adj, fanouts, nil)
		require.NoError(t, err)
		want, err := ref.Sample(batches, keys)
		require.NoError(t, err)
		for _, l := range []blockLayout{{"1.5d", 2, 2}, {"1.5d", 3, 1}, {"2d", 2, 2}} {
			got, _ := sampleBlocks(t, l, kind, fanouts, adj, 3, batches, keys)
			for b := range want {
				sameMiniBatch(t, want[b], got[b], fmt.Sprintf("%s %s minibatch %d", kind, l, b))
			}
		}
	}
}

// GCNNormalizedBlock gives the rows of GCNNormalized bit for bit.
func TestGCNNormalizedBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	adj := randomAdj(t, r, 150, 9, true)
	want := GCNNormalized(adj)
	for p := 1; p <= 4; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			rb := unevenRowBounds(adj.NRows, p)
			err := inproc.Run(p, inproc.Options{}, func(c collective.Comm) error {
				me := c.Rank()
				got, err := GCNNormalizedBlock(c, rb, sparse.SelectRows(adj, rangeIDs(rb[me], rb[me+1])))
				if err != nil {
					return err
				}
				w := rowRange(want, rb[me], rb[me+1])
				if got.NRows != w.NRows || got.NCols != w.NCols || !slices.Equal(got.Indptr, w.Indptr) ||
					!slices.Equal(got.Indices, w.Indices) || !slices.Equal(got.Values, w.Values) {
					return fmt.Errorf("rank %d: rows differ from GCNNormalized's", me)
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}

// A 1.5D hop holds, besides its block and one received block, one chunk
// of P at a time: with a small chunk work, the largest chunk stays within
// the work bound (or one row) while the bulk, and P with it, grows.
func TestDistributed15DMemoryBounded(t *testing.T) {
	defer func(w int64) { chunkWork = w }(chunkWork)
	chunkWork = 64
	adj, err := graph.RMAT(graph.DefaultRMAT(10, 8))
	require.NoError(t, err)
	var maxDeg int64
	for v := range adj.NRows {
		maxDeg = max(maxDeg, adj.Degree(v))
	}
	bound := max(chunkWork, maxDeg+1)
	r := rand.New(rand.NewPCG(61, 62))
	for _, bulk := range []int{1, 8, 32} {
		batches, keys := testBatches(r, adj.NRows, 2*bulk+1, 12)
		l := blockLayout{"1.5d", 2, 1}
		_, tops := sampleBlocks(t, l, "sage", []int{5, 5}, adj, bulk, batches, keys)
		for rank, top := range tops {
			pk := top.(*dist15D).peak
			require.LessOrEqual(t, pk.entries, bound, "bulk %d rank %d: largest chunk", bulk, rank)
			require.Positive(t, pk.entries)
		}
		// The product of the last hop: every source of the first hop's
		// blocks, far more entries than one chunk at the largest bulk.
		if bulk == 32 {
			ref, err := New("sage", adj, []int{5, 5}, nil)
			require.NoError(t, err)
			ms, err := ref.Sample(batches, keys)
			require.NoError(t, err)
			var pEntries int64
			for _, m := range ms {
				for _, v := range m.Blocks[0].Dst {
					pEntries += adj.Degree(v)
				}
			}
			require.Greater(t, pEntries, 10*bound, "P must outgrow a chunk for the test to mean anything")
		}
	}
}

// Bad row blocks and grids are errors.
func TestBlockTopologyErrors(t *testing.T) {
	adj := randomAdj(t, rand.New(rand.NewPCG(71, 72)), 20, 4, false)
	err := inproc.Run(2, inproc.Options{}, func(cm collective.Comm) error {
		g, err := collective.NewGrid(cm, 1, 2)
		if err != nil {
			return err
		}
		if _, err := Distributed2D(g, []int64{0, 20}, adj); err == nil {
			return fmt.Errorf("Distributed2D took a 1×2 grid")
		}
		if _, err := Distributed15DBlock(g, []int64{0, 10, 20}, adj); err == nil {
			return fmt.Errorf("Distributed15DBlock took 2 bounds for 1 grid row")
		}
		if _, err := Distributed15DBlock(g, []int64{0, 19}, adj); err == nil {
			return fmt.Errorf("Distributed15DBlock took bounds that do not reach n")
		}
		if _, err := Distributed15DBlock(g, []int64{0, 20}, rowRange(adj, 0, 10)); err == nil {
			return fmt.Errorf("Distributed15DBlock took a block of the wrong size")
		}
		top, err := Distributed15DBlock(g, []int64{0, 20}, adj)
		if err != nil {
			return err
		}
		if _, err := NewOn("plain", top, []int{2}); err == nil {
			return fmt.Errorf("NewOn built a plain sampler")
		}
		if _, err := NewOn("nope", top, []int{2}); err == nil {
			return fmt.Errorf("NewOn built an unknown sampler")
		}
		if _, err := NewBlock("sage", "3d", g, []int64{0, 20}, adj, []int{2}); err == nil {
			return fmt.Errorf("NewBlock took an unknown layout")
		}
		if _, err := GCNNormalizedBlock(cm, []int64{0, 20}, adj); err == nil {
			return fmt.Errorf("GCNNormalizedBlock took 1 block for 2 ranks")
		}
		return g.Free()
	})
	require.NoError(t, err)
}
