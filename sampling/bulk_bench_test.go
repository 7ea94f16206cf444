package sampling

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/internal/rng"
)

// BenchmarkBulk15D measures node-wise sampling over the 1.5D topology on
// one rank (the streamed product's per-chunk work, no communication) of
// 16 minibatches of 1024 random seeds on R-MAT 16, sampled k at a time:
// bulk sampling amortises when the time and the allocations per minibatch
// fall as k grows. It reports edges/s and allocations per minibatch.
func BenchmarkBulk15D(b *testing.B) {
	const scale, ef, batch, batches = 16, 16, 1024, 16
	adj, err := graph.RMAT(graph.DefaultRMAT(scale, ef))
	require.NoError(b, err)
	fanouts := []int{15, 10}
	r := rng.New(1)
	seeds := make([][]int64, batches)
	keys := make([]uint64, batches)
	for x := range seeds {
		perm := r.Perm(int(adj.NRows))[:batch]
		for _, v := range perm {
			seeds[x] = append(seeds[x], int64(v))
		}
		keys[x] = r.Uint64()
	}
	for _, k := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("rmat=%d/b=%d/k=%d", scale, batch, k), func(b *testing.B) {
			var edges int64
			b.ReportAllocs()
			err := inproc.Run(1, inproc.Options{Timeout: time.Hour}, func(c collective.Comm) error {
				g, err := collective.NewGrid(c, 1, 1)
				if err != nil {
					return err
				}
				top, err := Distributed15D(g, adj)
				if err != nil {
					return err
				}
				s, err := NewNodeWiseOn(top, fanouts)
				if err != nil {
					return err
				}
				b.ResetTimer()
				for range b.N {
					for x := 0; x < batches; x += k {
						ms, err := s.Sample(seeds[x:x+k], keys[x:x+k])
						if err != nil {
							return err
						}
						for _, m := range ms {
							for _, blk := range m.Blocks {
								edges += blk.Adj.NNZ()
							}
						}
					}
				}
				return nil
			})
			require.NoError(b, err)
			b.ReportMetric(float64(edges)/b.Elapsed().Seconds(), "edges/s")
		})
	}
}
