package train

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
)

// sbm is a small planted-partition graph on which a GNN clearly beats the
// features alone (graph.DefaultSBM: about 50% from features, above 90%
// after one round of neighbourhood averaging).
var sbm = sync.OnceValue(func() *graph.Dataset {
	p := graph.DefaultSBM(600)
	p.TrainFrac, p.ValidFrac = 0.3, 0.2
	d, err := graph.SBM(p)
	if err != nil {
		panic(err)
	}
	return d
})

func testConfig(kind model.Kind) Config {
	cfg := Defaults(kind, ModeMinibatch).Minibatch
	cfg.Epochs = 4
	cfg.BatchSize = 40
	cfg.Fanouts = []int{5, 5}
	cfg.Model.Hidden = 16
	if kind == "gat" {
		cfg.Model.Hidden, cfg.Model.Heads = 4, 2
	}
	cfg.EvalMemory = 50 * 11 * 32 // several inference chunks per rank
	cfg.FeatureNorm = "none"      // SBM features are signed
	cfg.Backends = gpuBackends    // as main hands them down
	return cfg
}

// runP trains on p in-process ranks with a random partition and returns
// rank 0's result.
func runP(t *testing.T, p int, cfg Config, bookOf func(*graph.Dataset, int) *partition.Book) *Result {
	t.Helper()
	g := sbm()
	if bookOf == nil {
		bookOf = func(g *graph.Dataset, p int) *partition.Book { return partition.Random(g.NumNodes, p, 5) }
	}
	results, err := runRanks(p, cfg, bookOf(g, p))
	require.NoError(t, err)
	for r := 1; r < p; r++ {
		require.Equal(t, results[0].Epochs, withoutTimes(results[r].Epochs, results[0].Epochs), "rank %d disagrees", r)
	}
	return results[0]
}

// runRanks trains on the test graph on p in-process ranks with the given
// partition and returns every rank's result and the first error.
func runRanks(p int, cfg Config, book *partition.Book) ([]*Result, error) {
	results, _, err := runRanksOn(p, cfg, book, func(int) Hooks { return Hooks{} }, true)
	return results, err
}

// runRanksOn trains cfg on the test graph on p in-process ranks with the
// given partition, rank r with hooksOf(r), and returns every rank's result
// and error, and the job's. With failFast a rank's error is its
// goroutine's, which ends the job (inproc.Run aborts the others); without
// it every rank runs to its own end and the job's error is the harness's
// only.
func runRanksOn(p int, cfg Config, book *partition.Book, hooksOf func(r int) Hooks, failFast bool) ([]*Result, []error, error) {
	g := sbm()
	results, errs := make([]*Result, p), make([]error, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Distribute(g, "random", book, c.Rank()/max(cfg.Replication, 1))
		if err != nil {
			return err
		}
		results[c.Rank()], errs[c.Rank()] = Run(collective.WithStats(c, nil), d, cfg, hooksOf(c.Rank()))
		if failFast {
			return errs[c.Rank()]
		}
		return nil
	})
	return results, errs, err
}

// withoutTimes returns a copy of got with times taken from ref (times are
// measured, everything else must agree).
func withoutTimes(got, ref []EpochStats) []EpochStats {
	out := make([]EpochStats, len(got))
	for i := range got {
		out[i] = got[i]
		if i < len(ref) {
			out[i].Seconds, out[i].PhaseSeconds = ref[i].Seconds, ref[i].PhaseSeconds
		}
	}
	return out
}

func losses(res *Result) []float64 {
	var l []float64
	for _, e := range res.Epochs {
		l = append(l, e.Loss)
	}
	return l
}

func TestTrainLearns(t *testing.T) {
	for _, kind := range []model.Kind{model.KindSAGE, model.KindGCN, model.KindGAT} {
		for _, p := range []int{1, 3} {
			t.Run(string(kind)+"/p="+string(rune('0'+p)), func(t *testing.T) {
				cfg := testConfig(kind)
				cfg.Epochs, cfg.LR, cfg.Model.Dropout, cfg.Model.AttnDropout = 30, 0.02, 0.1, 0
				res := runP(t, p, cfg, nil)
				l := losses(res)
				require.Less(t, l[len(l)-1], l[0], "loss must fall")
				// Features alone give about 50%; the graph lifts it well above.
				t.Logf("best val %.3f test %.3f at epoch %d", res.BestValAcc, res.TestAcc, res.BestEpoch)
				require.Greater(t, res.BestValAcc, 0.75)
				require.Greater(t, res.TestAcc, 0.7)
				require.Positive(t, res.BestEpoch)
			})
		}
	}
}

func TestSameSeedSameLosses(t *testing.T) {
	for _, shuffle := range []Shuffle{ShuffleLocal, ShuffleGlobal} {
		cfg := testConfig("sage")
		cfg.Shuffle = shuffle
		a := runP(t, 2, cfg, nil)
		b := runP(t, 2, cfg, nil)
		require.Equal(t, losses(a), losses(b), "bit-identical losses")
		cfg.Seed++
		c := runP(t, 2, cfg, nil)
		require.NotEqual(t, losses(a), losses(c))
	}
}

// Sampling k minibatches together changes nothing: the loss curve is
// bit-identical for every bulk size, node-wise and LADIES alike.
func TestBulkSameLosses(t *testing.T) {
	for _, sampler := range []Sampler{SamplerSAGE, SamplerLADIES} {
		cfg := testConfig("gcn")
		cfg.Sampler = sampler
		if sampler == SamplerLADIES {
			cfg.Fanouts = []int{60, 60}
		}
		want := losses(runP(t, 2, cfg, nil))
		for _, k := range []int{3, 64} {
			cfg.Bulk = k
			require.Equal(t, want, losses(runP(t, 2, cfg, nil)), "%s bulk %d", sampler, k)
		}
		// The 1.5D topology gives the same minibatches, so the same curve.
		cfg.Topology = Topology15D
		for _, kc := range [][2]int{{1, 1}, {3, 2}} {
			cfg.Bulk, cfg.C = kc[0], kc[1]
			res := runP(t, 2, cfg, nil)
			require.Equal(t, want, losses(res), "%s 1.5d bulk %d c %d", sampler, kc[0], kc[1])
			require.Positive(t, res.BytesPerEpoch[metrics.PhaseSpGEMM], "1.5d samples by distributed products")
		}
	}
}

// LADIES trains GCN: the loss falls and accuracy rises well above the
// features alone.
func TestLADIESLearns(t *testing.T) {
	cfg := testConfig("gcn")
	cfg.Sampler, cfg.Fanouts = SamplerLADIES, []int{80, 80}
	cfg.Epochs, cfg.LR, cfg.Model.Dropout = 30, 0.02, 0.1
	res := runP(t, 2, cfg, nil)
	l := losses(res)
	require.Less(t, l[len(l)-1], l[0], "loss must fall")
	t.Logf("best val %.3f test %.3f at epoch %d", res.BestValAcc, res.TestAcc, res.BestEpoch)
	require.Greater(t, res.BestValAcc, 0.75)
	require.Greater(t, res.TestAcc, 0.7)
}

func TestSamplerConfigErrors(t *testing.T) {
	cfg := testConfig("sage")
	cfg.Sampler = SamplerLADIES
	requireSettings(t, cfg.Validate(), "use Model.Kind gcn", SettingModel)
	cfg = testConfig("gcn")
	cfg.Sampler, cfg.Fanouts = SamplerLADIES, []int{-1, 10}
	require.ErrorContains(t, cfg.Validate(), "must be positive")
	cfg = testConfig("gcn")
	cfg.Bulk = 0
	require.ErrorContains(t, cfg.Validate(), "bulk 0")
	cfg.Bulk, cfg.Sampler = 1, "fastgcn"
	require.ErrorContains(t, cfg.Validate(), "unknown sampler")
	cfg = testConfig("gcn")
	cfg.Topology = "3d"
	require.ErrorContains(t, cfg.Validate(), "unknown topology")
	cfg = testConfig("gcn")
	cfg.Topology = Topology2D
	_, err := runRanks(2, cfg, partition.Random(sbm().NumNodes, 2, 5))
	require.ErrorContains(t, err, "square number of ranks")
	cfg = testConfig("gcn")
	cfg.Topology, cfg.C = Topology15D, 3
	_, err = runRanks(2, cfg, partition.Random(sbm().NumNodes, 2, 5))
	require.ErrorContains(t, err, "does not divide")
}

// A run stopped after epoch 3 and resumed from its checkpoint continues
// exactly the loss curve of an uninterrupted run.
func TestResumeContinuesTheSameCurve(t *testing.T) {
	for _, opt := range []Optimizer{OptimizerAdam, OptimizerSGD} {
		t.Run(string(opt), func(t *testing.T) {
			cfg := testConfig("sage")
			cfg.Optimizer, cfg.Momentum, cfg.Epochs = opt, 0.9, 6
			full := runP(t, 2, cfg, nil)

			cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 1
			cfg.Epochs = 3
			runP(t, 2, cfg, nil)
			cfg.Epochs, cfg.Resume = 6, true
			resumed := runP(t, 2, cfg, nil)
			require.Equal(t, losses(full), losses(resumed))
			require.Equal(t, full.BestEpoch, resumed.BestEpoch)
			require.Equal(t, full.TestAcc, resumed.TestAcc)
			require.Equal(t, full.Best, resumed.Best)
		})
	}
}

func TestResumeRejectsOtherSettings(t *testing.T) {
	cfg := testConfig("sage")
	cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Epochs = t.TempDir(), 1, 1
	runP(t, 2, cfg, nil)
	cfg.Resume, cfg.Epochs, cfg.Model.Hidden = true, 2, 8
	_, err := runRanks(2, cfg, partition.Random(sbm().NumNodes, 2, 5))
	require.ErrorContains(t, err, "other settings")
	require.ErrorContains(t, err, "Hidden: checkpoint")
	// Another rank count without the elastic schedule: the refusal names
	// both counts (TestElasticResumeRefused).
	cfg.Model.Hidden = testConfig("sage").Model.Hidden
	_, err = runRanks(4, cfg, partition.Random(sbm().NumNodes, 4, 5))
	require.ErrorContains(t, err, "written at 2 ranks, this run has 4")
}

// Exact layer-wise inference gives the same accuracy whatever the number of
// ranks, partition and chunking, since it computes the same function.
func TestEvaluationIndependentOfRanks(t *testing.T) {
	// Training differs with p (each rank's minibatches differ), so this
	// evaluates the initial model, which every p builds identically.
	g := sbm()
	for _, kind := range []model.Kind{model.KindSAGE, model.KindGCN, model.KindGAT} {
		var evs []evaluation
		for _, p := range []int{1, 2, 4} {
			book := partition.Random(g.NumNodes, p, 9)
			got := make([]evaluation, p)
			err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				d, err := Distribute(g, "random", book, c.Rank())
				if err != nil {
					return err
				}
				cfg := testConfig(kind)
				cfg.EvalMemory = int64(7 * (p + 1) * 11 * 32)
				tr, err := newTrainer(c, d, cfg)
				if err != nil {
					return err
				}
				got[c.Rank()], err = tr.evaluate()
				return err
			})
			require.NoError(t, err)
			for r := 1; r < p; r++ {
				require.Equal(t, got[0], got[r])
			}
			evs = append(evs, got[0])
		}
		for i := 1; i < len(evs); i++ {
			require.InEpsilon(t, evs[0].ValLoss, evs[i].ValLoss, 1e-4, "%s: validation loss", kind)
		}
		for i := 1; i < len(evs); i++ {
			require.InDelta(t, evs[0].ValAcc, evs[i].ValAcc, 1.0/120, "%s: val accuracy within one vertex", kind)
			require.InDelta(t, evs[0].TestAcc, evs[i].TestAcc, 1.0/120, "%s: test accuracy within one vertex", kind)
		}
	}
}

// The gradient Allreduce moves exactly what the closed-form volume says:
// one Allreduce of every parameter per step.
func TestGradBytesMatchFormula(t *testing.T) {
	cfg := testConfig("sage")
	cfg.Epochs, cfg.EvalEvery = 2, 0
	for _, p := range []int{1, 2, 3} {
		res := runP(t, p, cfg, nil)
		var want int64
		for r := range p {
			s, _ := collective.AllreduceVolume(r, p, res.NumParams, 4)
			want += s
		}
		for _, e := range res.Epochs {
			require.Equal(t, want*int64(e.Batches), e.Bytes[metrics.PhaseGrad], "p=%d", p)
			if p == 1 {
				require.Zero(t, e.Bytes[metrics.PhaseFetch])
			} else {
				require.Positive(t, e.Bytes[metrics.PhaseFetch])
			}
			require.Zero(t, e.Bytes[metrics.PhaseEval])
		}
	}
}

// The selection rules: validation accuracy with ties to the lower loss, or
// validation loss with ties to the higher accuracy.
func TestSelectionRules(t *testing.T) {
	hist := []EpochStats{
		{Epoch: 1, Evaluated: true, ValAcc: 0.80, ValLoss: 0.70},
		{Epoch: 2, Evaluated: true, ValAcc: 0.80, ValLoss: 0.60}, // acc tie, lower loss
		{Epoch: 3, Evaluated: true, ValAcc: 0.79, ValLoss: 0.50}, // lowest loss
		{Epoch: 4, Evaluated: true, ValAcc: 0.81, ValLoss: 0.55}, // highest acc
		{Epoch: 5, Evaluated: true, ValAcc: 0.82, ValLoss: 0.50}, // loss tie, higher acc
	}
	pick := func(sel Selection, n int) int {
		rec := &record{}
		for _, st := range hist[:n] {
			rec.add(st, sel, nil)
		}
		return rec.bestEpoch
	}
	require.Equal(t, []int{1, 2, 2, 4, 5}, []int{pick(SelectAcc, 1), pick(SelectAcc, 2), pick(SelectAcc, 3), pick(SelectAcc, 4), pick(SelectAcc, 5)})
	require.Equal(t, []int{1, 2, 3, 3, 5}, []int{pick(SelectLoss, 1), pick(SelectLoss, 2), pick(SelectLoss, 3), pick(SelectLoss, 4), pick(SelectLoss, 5)})
	cfg := Defaults(model.KindSAGE, ModeMinibatch).Minibatch
	cfg.Select = "best"
	require.ErrorContains(t, cfg.Validate(), "model selection")
}
