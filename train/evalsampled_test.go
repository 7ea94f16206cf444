package train

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/metrics"
	"gnnmpi/model"
)

// evals returns the evaluated epochs' validation loss and accuracies.
func evals(t *testing.T, res *Result) [][3]float64 {
	t.Helper()
	var out [][3]float64
	for _, e := range res.Epochs {
		if e.Evaluated {
			out = append(out, [3]float64{e.ValLoss, e.ValAcc, e.TestAcc})
		}
	}
	require.NotEmpty(t, out, "no epoch evaluated")
	return out
}

// requireEvalsNear requires the same evaluations to rounding: the
// validation losses within 1e-5 relative, the accuracies equal.
func requireEvalsNear(t *testing.T, name string, want, got [][3]float64) {
	t.Helper()
	require.Len(t, got, len(want), name)
	for e := range want {
		require.InDelta(t, want[e][0], got[e][0], 1e-5*math.Abs(want[e][0]), "%s: evaluation %d: validation loss", name, e+1)
		require.Equal(t, want[e][1:], got[e][1:], "%s: evaluation %d: accuracies", name, e+1)
	}
}

// Evaluation with every hop's fanout −1 samples the validation and test
// vertices' whole receptive fields, so it gives layer-wise inference's
// evaluation to rounding, on one and two ranks, replicated and 1.5D, for
// every model; training is the same either way; the fetches count under
// phase eval.
func TestEvalAllNeighboursEqualsLayerwise(t *testing.T) {
	for _, kind := range model.MinibatchKinds {
		for _, tc := range []struct {
			name string
			p    int
			edit func(*Config)
		}{
			{"p=1", 1, func(*Config) {}},
			{"p=2", 2, func(*Config) {}},
			{"p=2/1.5d", 2, func(c *Config) { c.Topology = Topology15D }},
		} {
			name := fmt.Sprintf("%s/%s", kind, tc.name)
			t.Run(name, func(t *testing.T) {
				cfg := testConfig(kind)
				cfg.Epochs, cfg.EvalEvery = 2, 1
				tc.edit(&cfg)
				layerwise := runP(t, tc.p, cfg, nil)
				cfg.EvalFanouts, cfg.EvalBatchSize = []int{-1, -1}, 50
				sampled := runP(t, tc.p, cfg, nil)
				require.Equal(t, losses(layerwise), losses(sampled), "training does not depend on how evaluation runs")
				requireEvalsNear(t, name, evals(t, layerwise), evals(t, sampled))
				if tc.p > 1 {
					require.Positive(t, sampled.Epochs[0].Bytes[metrics.PhaseEval], "the fetches of evaluation")
				}
			})
		}
	}
}

// Sampled evaluation (positive fanouts) draws each vertex's neighbours from
// one key, the hop and the vertex: the same evaluation on one rank as on
// two, whatever the minibatches, of the same model (the elastic schedule
// trains the same model at any rank count); and it is an evaluation of a
// sample of the neighbourhoods, not layer-wise inference's.
func TestEvalSampledRankFree(t *testing.T) {
	cfg := elasticConfig("sage")
	cfg.Epochs, cfg.EvalEvery = 2, 1
	cfg.EvalFanouts, cfg.EvalBatchSize = []int{2, 2}, 30
	one := evals(t, runP(t, 1, cfg, nil))
	cfg.EvalBatchSize = 17
	two := evals(t, runP(t, 2, cfg, nil))
	requireEvalsNear(t, "p=1 against p=2", one, two)
	cfg.EvalFanouts = nil
	layerwise := evals(t, runP(t, 1, cfg, nil))
	require.NotEqual(t, layerwise[0][0], one[0][0], "a sample of the neighbourhoods")
}

// What evaluation by sampling cannot do is refused, naming the setting.
func TestEvalFanoutsErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.EvalFanouts = []int{5} }, "1 evaluation fanouts for 2 layers"},
		{func(c *Config) { c.EvalFanouts, c.EvalBatchSize = []int{5, 5}, 0 }, "evaluation batch size 0 < 1 (EvalBatchSize)"},
		{func(c *Config) { c.EvalFanouts = []int{5, 0} }, "train: evaluation: fanout 0 samples nothing"},
		{func(c *Config) { c.EvalFanouts = []int{-2, 5} }, "fanout -2"},
		{func(c *Config) {
			c.Model.Kind, c.Sampler, c.Fanouts, c.Topology, c.EvalFanouts = model.KindGCN, SamplerLADIES, []int{64, 64}, Topology15D, []int{-1, -1}
		}, "EvalFanouts samples node-wise; with the ladies sampler it needs Topology replicated"},
	} {
		cfg := testConfig("sage")
		tc.edit(&cfg)
		err := cfg.Validate()
		require.ErrorContains(t, err, tc.want)
	}
}
