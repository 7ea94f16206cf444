package train

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/model"
)

// elasticConfig is the test configuration of kind with the elastic
// schedule (global shuffle, global batch size) and the default dropout
// (for GAT, feature and attention dropout), whose masks are keyed by
// vertex.
func elasticConfig(kind model.Kind) Config {
	cfg := testConfig(kind)
	cfg.BatchSize, cfg.GlobalBatchSize, cfg.Shuffle, cfg.Epochs = 0, 40, ShuffleGlobal, 6
	return cfg
}

// elasticCases are the rank counts and models of the elastic tests: 4 → 2
// and 2 → 4, GraphSAGE and GAT (with attention dropout).
var elasticCases = []struct {
	kind model.Kind
	p, q int
}{{"sage", 4, 2}, {"sage", 2, 4}, {"gat", 4, 2}, {"gat", 2, 4}}

// stopAt returns the hooks of a run whose every rank asks to stop once it
// has seen step step of epoch begin.
func stopAt(epoch, step int) func(int) Hooks {
	return func(int) Hooks {
		var seen bool
		return Hooks{Batch: func(e, s, _ int) {
			if e == epoch && s == step {
				seen = true
			}
		}, Stop: func() bool { return seen }}
	}
}

// relDrift returns the largest relative difference of the per-epoch
// losses of a and b.
func relDrift(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(a[i]-b[i])/math.Abs(a[i]))
	}
	return d
}

// A checkpoint written inside an epoch at p ranks with the elastic
// schedule resumes at p′ ≠ p, and the resumed run's losses agree with the
// uninterrupted runs' at p and at p′ to float32 round-off: the steps take
// the same global minibatches, samples and dropout masks at any rank
// count, and only the order of the gradient sums differs. The bound 1e-5
// is the measured drift (below 1e-6 here; over 10 epochs on Cora see
// docs/training.md) with room for other BLAS.
func TestElasticResume(t *testing.T) {
	for _, tc := range elasticCases {
		t.Run(fmt.Sprintf("%s/%d to %d", tc.kind, tc.p, tc.q), func(t *testing.T) {
			const stopEpoch, stopStep = 3, 2
			cfg := elasticConfig(tc.kind)
			atP, errs := runHooked(t, tc.p, cfg, func(int) Hooks { return Hooks{} })
			require.NoError(t, errors.Join(errs...))
			atQ, errs := runHooked(t, tc.q, cfg, func(int) Hooks { return Hooks{} })
			require.NoError(t, errors.Join(errs...))
			require.InDelta(t, 0, relDrift(losses(atP[0]), losses(atQ[0])), 1e-5, "the curve depends on the rank count")

			cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 10
			_, errs = runHooked(t, tc.p, cfg, stopAt(stopEpoch, stopStep))
			var st *Stopped
			require.ErrorAs(t, errs[0], &st)
			require.Equal(t, stopEpoch, st.Epoch)
			require.Positive(t, st.Step)

			cfg.Resume = true
			got, errs := runHooked(t, tc.q, cfg, func(int) Hooks { return Hooks{} })
			require.NoError(t, errors.Join(errs...))
			require.Len(t, got[0].Epochs, cfg.Epochs)
			require.Equal(t, st.Step, got[0].Epochs[stopEpoch-1].FromStep)
			require.Equal(t, losses(atP[0])[:stopEpoch-1], losses(got[0])[:stopEpoch-1], "the epochs before the checkpoint")
			dp, dq := relDrift(losses(atP[0]), losses(got[0])), relDrift(losses(atQ[0]), losses(got[0]))
			t.Logf("%d → %d ranks: largest relative loss drift %.2g from the run at %d, %.2g from the run at %d", tc.p, tc.q, dp, tc.p, dq, tc.q)
			require.LessOrEqual(t, dp, 1e-5)
			require.LessOrEqual(t, dq, 1e-5)
		})
	}
}

// Without the elastic schedule a checkpoint resumes only at its own rank
// count, and the refusal names both counts and the settings that make it
// resumable.
func TestElasticResumeRefused(t *testing.T) {
	cfg := elasticConfig("sage")
	cfg.Shuffle, cfg.Epochs = ShuffleLocal, 2
	cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 1
	_, errs := runHooked(t, 2, cfg, func(int) Hooks { return Hooks{} })
	require.NoError(t, errors.Join(errs...))
	cfg.Resume, cfg.Epochs = true, 3
	_, errs = runHooked(t, 4, cfg, func(int) Hooks { return Hooks{} })
	for _, err := range errs {
		require.ErrorContains(t, err, "was written at 2 ranks, this run has 4")
		require.ErrorContains(t, err, "resume with 2 ranks, or train with Shuffle global and GlobalBatchSize N")
	}
}

// runPartsHooked trains on p in-process ranks from the partitioned
// dataset dir, rank r with hooksOf(r), and returns every rank's result and
// error.
func runPartsHooked(t *testing.T, p int, dir string, cfg Config, hooksOf func(r int) Hooks) ([]*Result, []error) {
	t.Helper()
	results, errs := make([]*Result, p), make([]error, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Load(c, dir, LoadOptions{Replication: cfg.Replication})
		if err != nil {
			return err
		}
		results[c.Rank()], errs[c.Rank()] = Run(collective.WithStats(c, nil), d, cfg, hooksOf(c.Rank()))
		return nil
	})
	require.NoError(t, err)
	return results, errs
}

// A checkpoint of a partitioned dataset in 4 parts, written inside an
// epoch at p ranks with a global batch size, resumes at p′ ≠ p (4 → 2 and
// 2 → 4: both suit 4 parts), and the losses agree with the uninterrupted
// runs' at p and p′ to float32 round-off: the dataset parts, not the
// ranks, cut the epoch. The bound is TestElasticResume's.
func TestElasticResumeParts(t *testing.T) {
	dir := partDir(t, 4)
	for _, tc := range elasticCases {
		t.Run(fmt.Sprintf("%s/%d to %d", tc.kind, tc.p, tc.q), func(t *testing.T) {
			const stopEpoch, stopStep = 3, 2
			cfg := elasticConfig(tc.kind)
			cfg.Shuffle, cfg.Topology = ShuffleLocal, Topology15D
			none := func(int) Hooks { return Hooks{} }
			atP, errs := runPartsHooked(t, tc.p, dir, cfg, none)
			require.NoError(t, errors.Join(errs...))
			atQ, errs := runPartsHooked(t, tc.q, dir, cfg, none)
			require.NoError(t, errors.Join(errs...))
			require.LessOrEqual(t, relDrift(losses(atP[0]), losses(atQ[0])), 1e-5, "the curve depends on the rank count")

			cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 10
			_, errs = runPartsHooked(t, tc.p, dir, cfg, stopAt(stopEpoch, stopStep))
			var st *Stopped
			require.ErrorAs(t, errs[0], &st)
			require.Equal(t, stopEpoch, st.Epoch)

			cfg.Resume = true
			got, errs := runPartsHooked(t, tc.q, dir, cfg, none)
			require.NoError(t, errors.Join(errs...))
			require.Equal(t, st.Step, got[0].Epochs[stopEpoch-1].FromStep)
			dp, dq := relDrift(losses(atP[0]), losses(got[0])), relDrift(losses(atQ[0]), losses(got[0]))
			t.Logf("%d → %d ranks: largest relative loss drift %.2g from the run at %d, %.2g from the run at %d", tc.p, tc.q, dp, tc.p, dq, tc.q)
			require.LessOrEqual(t, dp, 1e-5)
			require.LessOrEqual(t, dq, 1e-5)
		})
	}
}
