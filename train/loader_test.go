package train

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/metrics"
	"gnnmpi/partition"
)

// untimed returns a copy of es without the measured times.
func untimed(es []EpochStats) []EpochStats {
	out := make([]EpochStats, len(es))
	for i, e := range es {
		e.Seconds, e.PhaseSeconds, e.CriticalPhaseSeconds, e.WaitSeconds, e.GradExposedSeconds, e.GradWaitSeconds = 0, nil, nil, 0, 0, 0
		out[i] = e
	}
	return out
}

// The overlapped pipeline computes exactly what the sequential loop does:
// the same losses, accuracies, bytes by phase (the loader's phases counted
// on its own communicator) and fetched rows, for every sampler, topology,
// bulk, feature replication, cache and dtype.
func TestOverlapSameLosses(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    int
		set  func(*Config)
	}{
		{"sage/p=1", 1, func(*Config) {}},
		{"sage/p=2", 2, func(*Config) {}},
		{"gcn/p=3/bulk=3", 3, func(c *Config) { c.Model.Kind, c.Bulk = "gcn", 3 }},
		{"sage/p=4/1.5d/c=2", 4, func(c *Config) { c.Topology, c.C = Topology15D, 2 }},
		{"sage/p=4/1.5d/c=2/replication=2/cache", 4, func(c *Config) {
			c.Topology, c.C, c.Replication, c.Cache, c.CacheFrac = Topology15D, 2, 2, alltoall.CacheDegree, 0.2
		}},
		{"sage/p=4/replication=4/sim-cache/f16", 4, func(c *Config) {
			c.Replication, c.Cache, c.CacheFrac, c.FeatureDType = 4, alltoall.CacheSim, 0.3, alltoall.F16
		}},
		{"ladies/p=2/global-shuffle", 2, func(c *Config) {
			c.Model.Kind, c.Sampler, c.Fanouts, c.Shuffle = "gcn", SamplerLADIES, []int{60, 60}, ShuffleGlobal
		}},
		{"gat/p=2/bulk=2", 2, func(c *Config) { c.Model.Kind, c.Model.Hidden, c.Model.Heads, c.Bulk = "gat", 4, 2, 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("sage")
			cfg.Epochs = 3
			tc.set(&cfg)
			book := func(g int64, p int) *partition.Book { return partition.Random(g, p/cfg.Replication, 5) }
			cfg.Overlap, cfg.OverlapCores = false, 0
			seq, err := runRanks(tc.p, cfg, book(sbm().NumNodes, tc.p))
			require.NoError(t, err)
			cfg.Overlap, cfg.OverlapCores = true, 0
			ovl, err := runRanks(tc.p, cfg, book(sbm().NumNodes, tc.p))
			require.NoError(t, err)
			require.Equal(t, untimed(seq[0].Epochs), untimed(ovl[0].Epochs))
			require.Equal(t, seq[0].Best, ovl[0].Best)
			require.Equal(t, seq[0].Stores, ovl[0].Stores)
			for _, e := range ovl[0].Epochs {
				if tc.p > 1 {
					require.Positive(t, e.Bytes[metrics.PhaseGrad], "grad bytes")
				}
				require.Equal(t, e.PhaseSeconds[metrics.PhaseWait], e.WaitSeconds)
				require.GreaterOrEqual(t, e.WaitSeconds, 0.0)
				if tc.p > 1 && cfg.Replication < tc.p {
					require.Positive(t, e.Bytes[metrics.PhaseFetch], "fetch bytes")
				}
				if cfg.Topology == Topology15D {
					require.Positive(t, e.Bytes[metrics.PhaseSpGEMM], "1.5d products")
				}
			}
			// Without overlap the compute loop waits for every preparation.
			for _, e := range seq[0].Epochs {
				require.Positive(t, e.WaitSeconds)
			}
		})
	}
}

// Byte counts by phase with overlap are those of the sequential loop, on
// every rank, in the run's final account too: the loader's phases (sample,
// spgemm, fetch) and the compute loop's (grad, metrics) never take each
// other's traffic although both goroutines communicate at once.
func TestOverlapPhasesPerRank(t *testing.T) {
	const p = 4
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Topology, cfg.C = 2, Topology15D, 2
	book := partition.Random(sbm().NumNodes, p, 5)
	snaps := func(overlap bool) []collective.Snapshot {
		cfg.Overlap, cfg.OverlapCores = overlap, 0
		out := make([]collective.Snapshot, p)
		err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			d, err := Distribute(sbm(), "random", book, c.Rank())
			if err != nil {
				return err
			}
			s := collective.NewStats()
			if _, err := Run(collective.WithStats(c, s), d, cfg, Hooks{}); err != nil {
				return err
			}
			out[c.Rank()] = s.Snapshot().WithoutTime()
			return nil
		})
		require.NoError(t, err)
		return out
	}
	seq, ovl := snaps(false), snaps(true)
	require.Equal(t, seq, ovl)
	for _, ph := range []string{metrics.PhaseSample, metrics.PhaseSpGEMM, metrics.PhaseFetch, metrics.PhaseGrad, metrics.PhaseMetrics} {
		require.Positive(t, ovl[1].Phase(ph).SentBytes, ph)
	}
}

// loaderComm is the in-process id of the trainer's loader communicator in
// runRanks: the first communicator split from the world (collective.Dup in
// newTrainer). On 2 ranks with the test config, after 2 calls of setup,
// every minibatch's fetch is 3 Alltoallv calls on it, 3 minibatches per
// epoch and rank, and evaluation after every epoch fetches its input
// layer's halo in 3 more: calls 15 … 23 are the second epoch's fetches,
// made by the loader goroutine with overlap.
const loaderComm = 1

// A failure of the loader (an error or a panic in one of its calls on one
// rank) or of the compute loop (the gradient Allreduce) ends training with
// that error on every rank, with or without overlap, and without waiting
// for the deadlock timeout.
func TestLoaderErrorEndsEveryRank(t *testing.T) {
	injected := errors.New("injected failure")
	for _, tc := range []struct {
		name string
		hook func(ev inproc.Event) error
		want string
	}{
		{"loader-error", func(ev inproc.Event) error {
			if ev.Comm == loaderComm && ev.Op == collective.OpAlltoallv && ev.WorldRank == 1 && ev.Seq == 19 {
				return injected
			}
			return nil
		}, "rank 1: alltoall"},
		{"loader-panic", func(ev inproc.Event) error {
			if ev.Comm == loaderComm && ev.Op == collective.OpAlltoallv && ev.WorldRank == 0 && ev.Seq == 19 {
				panic("injected panic")
			}
			return nil
		}, "injected panic"},
		{"grad-error", func(ev inproc.Event) error {
			// The first Sync (a Barrier) of the gradient sum of the second
			// epoch's second step (world calls: 6 of setup and the shared
			// segments' allocation, then per epoch 3 steps of 2 Syncs
			// each, 4 of evaluation and 3 of metrics).
			if ev.Comm == 0 && ev.Op == collective.OpBarrier && ev.WorldRank == 1 && ev.Seq == 22 {
				return injected
			}
			return nil
		}, "rank 1: injected failure"},
	} {
		for _, overlap := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/overlap=%v", tc.name, overlap), func(t *testing.T) {
				const p = 2
				cfg := testConfig("sage")
				cfg.Epochs, cfg.Overlap, cfg.OverlapCores = 3, overlap, 0
				book := partition.Random(sbm().NumNodes, p, 5)
				errs := make([]error, p)
				start := time.Now()
				err := inproc.Run(p, inproc.Options{Timeout: time.Minute, Hook: tc.hook}, func(c collective.Comm) error {
					defer func() {
						if v := recover(); v != nil { // without overlap the panic is the rank's own
							errs[c.Rank()] = fmt.Errorf("panic: %v", v)
							panic(v)
						}
					}()
					d, err := Distribute(sbm(), "random", book, c.Rank())
					if err != nil {
						return err
					}
					_, errs[c.Rank()] = Run(collective.WithStats(c, nil), d, cfg, Hooks{})
					return errs[c.Rank()]
				})
				require.ErrorContains(t, err, tc.want)
				if tc.name != "loader-panic" {
					require.ErrorIs(t, err, injected)
				} else if overlap {
					require.ErrorContains(t, err, "minibatch loader: panic", "the loader goroutine's panic becomes its rank's error")
				}
				require.Less(t, time.Since(start), 20*time.Second, "ended by the failure, not by the timeout")
				for r, e := range errs {
					require.Error(t, e, "rank %d must fail too", r)
				}
			})
		}
	}
}

// The critical rank's phases are one rank's: each at most the slowest
// rank's in that phase, and without overlap the training phases add up to
// no more than that rank's epoch, the epoch's time.
func TestCriticalPhases(t *testing.T) {
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Overlap = 2, false
	res, err := runRanks(3, cfg, partition.Random(sbm().NumNodes, 3, 5))
	require.NoError(t, err)
	for _, e := range res[0].Epochs {
		sum := 0.0
		for _, ph := range timePhases {
			require.Contains(t, e.CriticalPhaseSeconds, ph)
			require.LessOrEqual(t, e.CriticalPhaseSeconds[ph], e.PhaseSeconds[ph], ph)
			if ph != metrics.PhaseEval && ph != metrics.PhaseWait {
				sum += e.CriticalPhaseSeconds[ph]
			}
		}
		require.LessOrEqual(t, sum, e.Seconds*(1+1e-9))
	}
}
