package dist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// rankCounts are the rank counts of the in-process tests; 9 ranks on a
// 7-vertex graph leaves some ranks without rows.
var rankCounts = []int{1, 2, 3, 4, 9}

// run runs fn on p in-process ranks.
func run(t *testing.T, p int, fn func(c collective.Comm) error) {
	t.Helper()
	require.NoError(t, inproc.Run(p, inproc.Options{Timeout: time.Minute}, fn))
}

// rows returns rows [lo, hi) of a.
func rows(a *sparse.CSR, lo, hi int64) *sparse.CSR {
	ids := make([]int64, 0, hi-lo)
	for g := lo; g < hi; g++ {
		ids = append(ids, g)
	}
	return sparse.SelectRows(a, ids)
}

// testGraphs returns Cora (symmetric, from data/cora), a random directed
// graph with self-loops and repeated edges, and a 7-vertex graph with an
// isolated vertex.
func testGraphs(t *testing.T) map[string]*sparse.CSR {
	t.Helper()
	cora, err := graph.ReadOGB(filepath.Join("..", "..", "data", "cora"), graph.ReadOptions{NoFeatures: true})
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 300
	var r, c []int64
	for range 1500 {
		i := rng.Int64N(n)
		r = append(r, i)
		if rng.IntN(10) == 0 {
			c = append(c, i) // a self-loop
		} else {
			c = append(c, rng.Int64N(n))
		}
	}
	random, err := sparse.FromCOO(n, n, r, c, nil)
	require.NoError(t, err)
	tiny, err := sparse.FromCOO(7, 7, []int64{0, 0, 1, 2, 4, 5, 6, 6}, []int64{1, 1, 2, 0, 5, 4, 6, 0}, nil)
	require.NoError(t, err)
	return map[string]*sparse.CSR{"cora": cora.Adj, "random": random, "tiny": tiny}
}

// hashEngine is a deterministic test engine: vertex g goes to part
// (g·7919) mod parts, so that parts are spread over every rank's rows.
// It records the graphs it is given, by rank.
type hashEngine struct {
	mu     sync.Mutex
	graphs map[int]*Graph
}

func (h *hashEngine) part(c collective.Comm, g *Graph, parts int, seed int64) ([]int32, error) {
	h.mu.Lock()
	h.graphs[c.Rank()] = g
	h.mu.Unlock()
	out := make([]int32, g.Adj.NRows)
	for i := range out {
		out[i] = int32((g.Lo + int64(i)) * 7919 % int64(parts))
	}
	return out, nil
}

// TestPartitionMatchesSingleRank checks, for every graph and rank count,
// that the symmetrized blocks the engine sees are the rows of the
// single-rank symmetrization without self-loops, and that the distributed
// edge cut, sizes and gathered parts equal those of the book built from
// the whole graph.
func TestPartitionMatchesSingleRank(t *testing.T) {
	for name, a := range testGraphs(t) {
		n := a.NRows
		wantSym := graph.DropSelfLoops(graph.Symmetrize(a))
		wantSym.Values = nil
		for _, p := range rankCounts {
			for _, parts := range []int{1, 3, 4} {
				t.Run(fmt.Sprintf("%s/p=%d/parts=%d", name, p, parts), func(t *testing.T) {
					eng := &hashEngine{graphs: map[int]*Graph{}}
					var book []int32
					cuts := make([]int64, p)
					sizes := make([][]int64, p)
					run(t, p, func(c collective.Comm) error {
						lo, hi := BlockRange(n, p, c.Rank())
						block := rows(a, lo, hi)
						part, err := Partition(c, n, lo, block, parts, 1, eng.part)
						if err != nil {
							return err
						}
						if cuts[c.Rank()], err = EdgeCut(c, n, lo, block, part); err != nil {
							return err
						}
						if sizes[c.Rank()], err = Sizes(c, part, parts); err != nil {
							return err
						}
						all, err := GatherParts(c, part, 0)
						if err != nil {
							return err
						}
						if c.Rank() == 0 {
							book = all
						} else if all != nil {
							return errors.New("GatherParts returned parts on a rank other than root")
						}
						return nil
					})
					b, err := partition.New(book, parts, "test")
					require.NoError(t, err)
					for q := range p {
						g := eng.graphs[q]
						lo, hi := BlockRange(n, p, q)
						assert.Equal(t, rows(wantSym, lo, hi), g.Adj, "rank %d", q)
						assert.Equal(t, wantSym.NNZ(), g.NNZ)
						assert.Equal(t, lo, g.Lo)
						assert.Equal(t, b.EdgeCut(a), cuts[q], "rank %d", q)
						assert.Equal(t, b.Sizes(), sizes[q], "rank %d", q)
					}
				})
			}
		}
	}
}

func TestBlockRange(t *testing.T) {
	for _, n := range []int64{0, 1, 7, 10, 2708} {
		for _, p := range rankCounts {
			b := partition.Block(n, p)
			for r := range p {
				lo, hi := BlockRange(n, p, r)
				assert.Equal(t, b.Owned(r), rangeOf(lo, hi), "n=%d p=%d r=%d", n, p, r)
			}
		}
	}
}

func rangeOf(lo, hi int64) []int64 {
	out := []int64{}
	for g := lo; g < hi; g++ {
		out = append(out, g)
	}
	return out
}

// TestPartitionErrors checks that bad blocks, a bad part count and an
// engine returning bad parts on one rank fail every rank alike.
func TestPartitionErrors(t *testing.T) {
	a := testGraphs(t)["tiny"]
	const p = 3
	for _, tc := range []struct {
		name   string
		lo     func(r int) int64 // first row of rank r
		parts  int
		engine Engine
		want   string
	}{
		{"gap", func(r int) int64 { lo, _ := BlockRange(7, p, r); return lo + int64(r/2) }, 2, nil, "want them to start at"},
		{"parts", nil, 0, nil, "into 0 parts"},
		{"engine range", nil, 2, func(c collective.Comm, g *Graph, parts int, seed int64) ([]int32, error) {
			out := make([]int32, g.Adj.NRows)
			if c.Rank() == 1 {
				out[0] = int32(parts)
			}
			return out, nil
		}, "invalid parts on 1 rank"},
		{"engine length", nil, 2, func(c collective.Comm, g *Graph, parts int, seed int64) ([]int32, error) {
			return make([]int32, g.Adj.NRows+int64(c.Rank())), nil
		}, "invalid parts on 2 rank"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, p)
			err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				lo, hi := BlockRange(7, p, c.Rank())
				block := rows(a, lo, hi)
				if tc.lo != nil {
					lo = tc.lo(c.Rank())
				}
				_, errs[c.Rank()] = Partition(c, 7, lo, block, tc.parts, 1, tc.engine)
				return nil
			})
			require.NoError(t, err)
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
				assert.Contains(t, err.Error(), tc.want, "rank %d", r)
			}
		})
	}
}

func TestImbalance(t *testing.T) {
	assert.Equal(t, 1.0, Imbalance([]int64{3, 3, 3}))
	assert.Equal(t, 1.5, Imbalance([]int64{1, 3, 2}))
	assert.Equal(t, 1.0, Imbalance([]int64{0, 0}))
}
