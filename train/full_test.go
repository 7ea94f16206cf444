package train

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/model"
	"gnnmpi/pipe"
)

func fullConfig(mode string) FullConfig {
	cfg := FullDefaults(model.ConvGCNII)
	cfg.Mode, cfg.Epochs, cfg.Chunks = mode, 3, 2
	if mode == ModeGraph {
		cfg.Chunks = 1
	}
	cfg.Pipe.Model.Layers, cfg.Pipe.Model.Hidden = 4, 8
	cfg.FeatureNorm = "none"
	return cfg
}

// runFull trains cfg on p in-process ranks, the parts METIS-partitioned.
func runFull(t *testing.T, p int, cfg FullConfig) []*FullResult {
	t.Helper()
	g := sbm()
	stages, err := FullStages(cfg, p)
	require.NoError(t, err)
	parts := p / stages
	book := graph.BlockPartition(g.NumNodes, 1)
	if parts > 1 {
		book, err = graph.MetisPartition(g, parts, "random", 1)
		require.NoError(t, err)
	}
	results := make([]*FullResult, p)
	err = inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Distribute(g, "random", book, c.Rank()/stages)
		if err != nil {
			return err
		}
		results[c.Rank()], err = RunFull(collective.WithStats(c, nil), d, cfg, Hooks{})
		return err
	})
	require.NoError(t, err)
	return results
}

func TestRunFullModes(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		p, pipes  int
		act, halo bool
	}{{ModeGraph, 4, 0, false, true}, {ModePipe, 4, 0, true, false}, {ModeHybrid, 4, 2, true, true}} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := fullConfig(tc.mode)
			cfg.Pipelines = tc.pipes
			res := runFull(t, tc.p, cfg)
			r0 := res[0]
			require.Len(t, r0.Epochs, 3)
			for r := 1; r < tc.p; r++ {
				assert.Equal(t, withoutTimes(res[r].Epochs, r0.Epochs), r0.Epochs, "rank %d", r)
			}
			// Measured bytes per epoch equal the analytical volume.
			for _, ph := range []string{pipe.PhaseAct, pipe.PhaseGrad, pipe.PhaseHalo, pipe.PhaseAllreduce} {
				assert.Equal(t, r0.Analytical[ph], r0.BytesPerEpoch[ph], ph)
				for _, e := range r0.Epochs {
					assert.Equal(t, r0.Analytical[ph], e.Bytes[ph], "%s epoch %d", ph, e.Epoch)
				}
			}
			assert.Equal(t, r0.Analytical[pipe.PhaseEval], r0.Epochs[0].Bytes[pipe.PhaseEval])
			assert.Equal(t, tc.act, r0.BytesPerEpoch[pipe.PhaseAct] > 0)
			assert.Equal(t, tc.halo, r0.BytesPerEpoch[pipe.PhaseHalo] > 0)
			assert.Positive(t, r0.BestEpoch)
			assert.Len(t, r0.StateBytes, tc.p)
			assert.Positive(t, r0.StateBytes[0])
			assert.Equal(t, pipe.NumParams(model.DeepConfig{Kind: model.ConvGCNII, In: 32, Hidden: 8, Out: 8, Layers: 4, Alpha: 0.1, Lambda: 0.5}), r0.NumParams)
		})
	}
}

func TestFullConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*FullConfig)
		p    int
		want string
	}{
		{func(c *FullConfig) { c.Mode = "tensor" }, 2, "unknown mode"},
		{func(c *FullConfig) { c.Mode, c.Pipelines = ModeHybrid, 3 }, 4, "do not divide"},
		{func(c *FullConfig) { c.Pipe.Model.Layers = 2 }, 4, "every stage needs a layer"},
		{func(c *FullConfig) { c.Mode, c.Chunks = ModeGraph, 3 }, 2, "--chunks is for pipe"},
		{func(c *FullConfig) { c.ChunkMethod = "block" }, 2, "chunk partition"},
		{func(c *FullConfig) { c.Pipe.Model.Kind = "gat" }, 2, "kind"},
	} {
		cfg := fullConfig(ModePipe)
		tc.edit(&cfg)
		assert.ErrorContains(t, cfg.Validate(tc.p), tc.want)
	}
	// Data loaded with the wrong replication for the mode.
	g := sbm()
	err := inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Distribute(g, "random", graph.BlockPartition(g.NumNodes, 2), c.Rank())
		if err != nil {
			return err
		}
		_, err = RunFull(c, d, fullConfig(ModePipe), Hooks{})
		return err
	})
	assert.ErrorContains(t, err, "load with feature replication 2")
}
