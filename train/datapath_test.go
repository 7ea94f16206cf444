package train

import (
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/metrics"
	"gnnmpi/partition"
)

// TestDataPathRecord checks the loader's own timing against the epochs'
// summaries: the minibatches every rank prepared, the bytes of the rows
// fetched (dense float32 rows, summed over the ranks, against the epochs'
// fetched rows), every rank's rate bounded by the slowest rank's phase
// times, and a measured copy bandwidth.
func TestDataPathRecord(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       int
		overlap bool
	}{
		{"np1 inline", 1, false},
		{"np2 overlap", 2, true},
		{"np3 inline", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("sage")
			cfg.Epochs, cfg.Overlap, cfg.OverlapCores = 2, tc.overlap, 0
			g := sbm()
			results, err := runRanks(tc.p, cfg, partition.Random(g.NumNodes, tc.p, 5))
			require.NoError(t, err)
			var batches, rows, gathered int64
			var phaseSecs float64 // the slowest rank's sample and fetch seconds, epoch by epoch
			for _, e := range results[0].Epochs {
				batches += int64(e.Batches)
				rows += e.FetchRows
				phaseSecs += e.PhaseSeconds[metrics.PhaseSample] + e.PhaseSeconds[metrics.PhaseFetch]
			}
			for r, res := range results {
				d := res.DataPath
				require.NotNil(t, d, "rank %d", r)
				require.Equal(t, batches, d.Minibatches, "rank %d", r)
				require.Equal(t, results[0].DataPath.MinibatchesPerS, d.MinibatchesPerS, "rank %d: every rank reports every rank's rate", r)
				require.Len(t, d.MinibatchesPerS, tc.p)
				for q, mps := range d.MinibatchesPerS {
					// Rank q's seconds are at most the sum of the epochs'
					// maxima over the ranks.
					require.GreaterOrEqual(t, mps, float64(batches)/phaseSecs*(1-1e-9), "rank %d's rate", q)
				}
				require.Greater(t, d.GatherGBps, 0.0)
				require.Greater(t, d.CopyGBps, 0.0)
				gathered += d.GatheredBytes
			}
			require.Equal(t, rows*int64(g.Feat.Cols)*4, gathered, "gathered bytes over the ranks: fetched rows × features × 4")
		})
	}
}
