package pipe

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/model"
)

// resumeRun trains cfg on the test graph split as plan for epochs; after
// epoch stop (0: never) every rank takes its State, and a new trainer
// restored from it by restore runs the remaining epochs. It returns rank
// 0's stats of every epoch.
func resumeRun(t *testing.T, cfg Config, plan *Plan, epochs, stop int, restore func(tr *Trainer, s State) error) ([]Stats, error) {
	t.Helper()
	p := cfg.Layout.Ranks()
	out := make([][]Stats, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		r := c.Rank()
		data := testData(plan, cfg.Layout.Pipeline(r))
		tr, err := New(c, cfg, data)
		if err != nil {
			return err
		}
		for e := 1; e <= epochs; e++ {
			if e == stop+1 && stop > 0 {
				st := tr.State()
				if tr, err = New(c, cfg, data); err != nil {
					return err
				}
				if err := restore(tr, st); err != nil {
					return err
				}
			}
			st, err := tr.Epoch(e)
			if err != nil {
				return err
			}
			out[r] = append(out[r], st)
		}
		return nil
	})
	return out[0], err
}

// A trainer restored from State continues bit-identically, whichever
// staleness remedies and optimizer are on, before and after the first
// snapshot; restoring the weights and optimizer alone does not, so the
// historical state is what makes it exact.
func TestStateResumesTheSameCurve(t *testing.T) {
	plan := testPlan(t, 2, 3)
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		stops []int
	}{
		{"defaults", func(*Config) {}, []int{2}},
		{"snapshot-2", func(c *Config) { c.SnapshotEvery = 2 }, []int{1, 2, 3}},
		{"keep-grads-sgd", func(c *Config) { c.ClearGrads, c.Optimizer, c.Momentum = false, "sgd", 0.9 }, []int{2}},
		{"in-order", func(c *Config) { c.ShuffleChunks = false }, []int{2}},
	} {
		for _, lay := range []Layout{{2, 2}, {1, 2}} {
			t.Run(fmt.Sprintf("%s/S%d_P%d", tc.name, lay.Stages, lay.Pipelines), func(t *testing.T) {
				cfg := testConfig(model.ConvGCNII, lay)
				tc.edit(&cfg)
				const epochs = 5
				want, err := resumeRun(t, cfg, plan, epochs, 0, nil)
				require.NoError(t, err)
				for _, stop := range tc.stops {
					got, err := resumeRun(t, cfg, plan, epochs, stop, (*Trainer).SetState)
					require.NoError(t, err)
					require.Equal(t, want, got, "stopped after epoch %d", stop)
				}
				// Weights and optimizer only: the historical embeddings
				// restart from zero and the curve changes.
				got, err := resumeRun(t, cfg, plan, epochs, 2, func(tr *Trainer, s State) error {
					fresh := tr.State()
					fresh.Weights, fresh.Opt = s.Weights, s.Opt
					return tr.SetState(fresh)
				})
				require.NoError(t, err)
				assert.NotEqual(t, want[2].Loss, got[2].Loss)
			})
		}
	}
}

// With one chunk per part nothing is historical: the State holds no
// embeddings, gradients or snapshot, even with snapshots and kept
// gradients, and a trainer restored from it continues bit-identically.
func TestOneChunkStateHoldsNoHistory(t *testing.T) {
	plan := testPlan(t, 2, 1)
	cfg := testConfig(model.ConvGCNII, Layout{2, 2})
	cfg.SnapshotEvery, cfg.ClearGrads = 2, false
	const epochs = 4
	want, err := resumeRun(t, cfg, plan, epochs, 0, nil)
	require.NoError(t, err)
	got, err := resumeRun(t, cfg, plan, epochs, 2, func(tr *Trainer, s State) error {
		assert.NotEmpty(t, s.Weights)
		assert.Empty(t, s.Hist)
		assert.Empty(t, s.HistGrad)
		assert.Empty(t, s.Snap)
		return tr.SetState(s)
	})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestSetStateRejectsOtherShapes(t *testing.T) {
	plan := testPlan(t, 1, 2)
	cfg := testConfig(model.ConvGCNII, Layout{2, 1})
	cfg.SnapshotEvery = 2
	for _, tc := range []struct {
		name string
		edit func(*State)
		want string
	}{
		{"weights", func(s *State) { s.Weights = s.Weights[1:] }, "values of weights"},
		{"optimizer", func(s *State) { s.Opt = append(s.Opt, 1) }, "values of optimizer state"},
		{"optimizer kind", func(s *State) { s.Opt = append([]float32{2}, s.Opt[1:]...) }, "not an Adam state"},
		{"hist", func(s *State) { s.Hist = s.Hist[:len(s.Hist)-1] }, "values of historical embeddings"},
		{"hist and snapshot", func(s *State) { s.Snap = s.Hist }, "values of historical embeddings"},
		{"grads with ClearGrads", func(s *State) { s.HistGrad = s.Hist }, "values of historical gradients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resumeRun(t, cfg, plan, 2, 1, func(tr *Trainer, s State) error {
				before := tr.State()
				tc.edit(&s)
				err := tr.SetState(s)
				assert.Equal(t, before, tr.State(), "a failed SetState changes nothing")
				return err
			})
			require.ErrorContains(t, err, tc.want)
		})
	}
}
