package train

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/partition"
)

// runHooked trains on the test graph on p in-process ranks, rank r with
// hooksOf(r), and returns every rank's result and error; each rank runs
// to its own end (runRanksOn without failFast).
func runHooked(t *testing.T, p int, cfg Config, hooksOf func(r int) Hooks) ([]*Result, []error) {
	t.Helper()
	results, errs, err := runRanksOn(p, cfg, partition.Random(sbm().NumNodes, p, 5), hooksOf, false)
	require.NoError(t, err)
	return results, errs
}

// stopConfig is the test configuration with nine steps per epoch.
func stopConfig(overlap bool) Config {
	cfg := testConfig("sage")
	cfg.BatchSize, cfg.Epochs = 10, 3
	cfg.Overlap, cfg.OverlapCores = overlap, 0
	return cfg
}

// requireSameRun requires that got trained exactly the epochs of want:
// the same losses and accuracies, the same best epoch and the same final
// and best parameters.
func requireSameRun(t *testing.T, want, got *Result) {
	t.Helper()
	require.Equal(t, losses(want), losses(got))
	for i := range want.Epochs {
		require.Equal(t, want.Epochs[i].TrainAcc, got.Epochs[i].TrainAcc, "epoch %d", i+1)
		require.Equal(t, want.Epochs[i].ValAcc, got.Epochs[i].ValAcc, "epoch %d", i+1)
	}
	require.Equal(t, want.BestEpoch, got.BestEpoch)
	require.Equal(t, want.Best, got.Best)
	require.Equal(t, want.Last, got.Last)
}

// A run stopped inside an epoch, by a signal to the process (every
// in-process rank sees it) or by a stop request of one rank only, stops
// every rank at the same step, checkpoints, returns *Stopped, and a
// resumed run ends with exactly the epochs and weights of an
// uninterrupted one.
func TestStopInsideEpochResumesExactly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		overlap bool
		signal  bool // else only rank 1 asks to stop
	}{
		{"signal", false, true},
		{"signal/overlap", true, true},
		{"one rank", false, false},
		{"one rank/overlap", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const p, stopEpoch, stopBatch = 2, 2, 3
			cfg := stopConfig(tc.overlap)
			full, errs := runHooked(t, p, cfg, func(int) Hooks { return Hooks{} })
			require.NoError(t, errors.Join(errs...))

			cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 10
			var sigs atomic.Int32
			if tc.signal {
				ch := make(chan os.Signal, 1)
				signal.Notify(ch, syscall.SIGUSR1)
				defer signal.Stop(ch)
				go func() {
					for range ch {
						sigs.Add(1)
					}
				}()
			}
			asked := make([]atomic.Bool, p)
			_, errs = runHooked(t, p, cfg, func(r int) Hooks {
				return Hooks{
					Batch: func(epoch, batch, _ int) {
						if epoch == stopEpoch && batch == stopBatch && (tc.signal && r == 0 || !tc.signal && r == 1) {
							if tc.signal {
								require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGUSR1))
								for sigs.Load() == 0 {
									time.Sleep(time.Millisecond)
								}
							}
							asked[r].Store(true)
						}
					},
					Stop: func() bool { return tc.signal && sigs.Load() > 0 || asked[r].Load() },
				}
			})
			var stops []Stopped
			for r, err := range errs {
				var st *Stopped
				require.ErrorAs(t, err, &st, "rank %d", r)
				stops = append(stops, *st)
			}
			require.Equal(t, stops[0], stops[1], "the ranks stopped at different boundaries")
			require.Equal(t, stopEpoch, stops[0].Epoch)
			// At most two steps after the request, at a step boundary.
			require.Greater(t, stops[0].Step, stopBatch)
			require.LessOrEqual(t, stops[0].Step, stopBatch+2)
			require.Equal(t, cfg.CheckpointDir, stops[0].Checkpoint)

			cfg.Resume = true
			resumed, errs := runHooked(t, p, cfg, func(int) Hooks { return Hooks{} })
			require.NoError(t, errors.Join(errs...))
			requireSameRun(t, full[0], resumed[0])
			require.Equal(t, stops[0].Step, resumed[0].Epochs[stopEpoch-1].FromStep)
			require.Zero(t, resumed[0].Epochs[stopEpoch].FromStep)
		})
	}
}

// Without a checkpoint directory a stop ends the run cleanly, saving
// nothing.
func TestStopWithoutCheckpoint(t *testing.T) {
	cfg := stopConfig(false)
	_, errs := runHooked(t, 2, cfg, func(int) Hooks { return Hooks{Stop: func() bool { return true }} })
	for _, err := range errs {
		var st *Stopped
		require.ErrorAs(t, err, &st)
		require.Equal(t, Stopped{Epoch: 1, Step: 1}, *st)
		require.ErrorContains(t, err, "nothing saved")
	}
}

// Checkpoints every few steps leave the losses alone, and a run resumed
// from one written inside an epoch (a job killed after it) ends exactly
// as the uninterrupted run.
func TestCheckpointEveryStepsResumesExactly(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		cfg := stopConfig(overlap)
		plain, errs := runHooked(t, 2, cfg, func(int) Hooks { return Hooks{} })
		require.NoError(t, errors.Join(errs...))

		cfg.CheckpointDir, cfg.CheckpointSteps = t.TempDir(), 4
		kept := filepath.Join(t.TempDir(), CheckpointFile)
		stepped, errs := runHooked(t, 2, cfg, func(r int) Hooks {
			return Hooks{Batch: func(epoch, batch, _ int) {
				// Step 4 of epoch 2 is checkpointed before its
				// progress: keep the checkpoint file as a job
				// killed during step 4 would have left it: that of
				// step 4, or, while its write is still in flight
				// (ckptWriter), the one before.
				if r == 0 && epoch == 2 && batch == 4 {
					b, err := os.ReadFile(filepath.Join(cfg.CheckpointDir, CheckpointFile))
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(kept, b, 0o644))
				}
			}}
		})
		require.NoError(t, errors.Join(errs...))
		requireSameRun(t, plain[0], stepped[0])
		// Rank 0's step loop spent time in the checkpoints of every
		// epoch (steps 4 and 8 of 9), the plain run's in none.
		for e := range cfg.Epochs {
			require.Positive(t, stepped[0].Epochs[e].CheckpointSeconds, "epoch %d", e+1)
			require.Zero(t, plain[0].Epochs[e].CheckpointSeconds, "epoch %d", e+1)
		}

		ck, err := readCheckpoint(kept)
		require.NoError(t, err)
		// Nine steps an epoch: after step 4 of epoch 2 (Step 4), or
		// epoch 1's end (its last checkpoint: Step 0).
		where := [2]int{ck.Header.Epoch, ck.Header.Step}
		require.Contains(t, [][2]int{{2, 4}, {1, 0}}, where)
		require.NoError(t, os.Rename(kept, filepath.Join(cfg.CheckpointDir, CheckpointFile)))
		cfg.Resume = true
		resumed, errs := runHooked(t, 2, cfg, func(int) Hooks { return Hooks{} })
		require.NoError(t, errors.Join(errs...))
		requireSameRun(t, plain[0], resumed[0])
		require.Equal(t, ck.Header.Step, resumed[0].Epochs[1].FromStep)
	}
}

// A checkpoint written inside an epoch has its own magic, so that a
// binary that reads only epoch checkpoints refuses it; one whose step
// does not match its magic is refused.
func TestCheckpointStepFormat(t *testing.T) {
	ck := &checkpoint{Header: ckptHeader{Epoch: 2, Step: 5, Partial: []float64{1, 2, 3}}, Weights: []float32{1}}
	b, err := ck.encode()
	require.NoError(t, err)
	require.Equal(t, checkpointMagicStep, string(b[:len(checkpointMagicStep)]))
	got, err := decodeCheckpoint(b, "x.bin")
	require.NoError(t, err)
	require.Equal(t, ck.Header, got.Header)
	_, err = decodeRecord(b, "x.bin", checkpointMagic, &ckptHeader{}, func() []int { return []int{1, 0, 0} })
	require.ErrorContains(t, err, "bad magic")

	bad, err := encodeRecord(checkpointMagic, ckptHeader{Epoch: 2, Step: 5, Weights: 1}, []float32{1}, nil, nil)
	require.NoError(t, err)
	_, err = decodeCheckpoint(bad, "x.bin")
	require.ErrorContains(t, err, "does not match its format")
}

// In the full-graph modes an epoch is one optimizer step, so its end is
// the step boundary: a stop request of one rank only during epoch 2 stops
// every rank after it, with the checkpoint of epoch 2 written (no
// --checkpoint-every), and a resumed run continues the uninterrupted
// curve exactly.
func TestFullStopResumesExactly(t *testing.T) {
	for _, mode := range []Mode{ModePipe, ModeGraph} {
		t.Run(string(mode), func(t *testing.T) {
			const p = 2
			cfg := fullConfig(mode)
			cfg.Epochs, cfg.EvalEvery = 4, 1
			want := runFull(t, p, cfg)[0]

			cfg.CheckpointDir = t.TempDir()
			var asked atomic.Bool
			_, errs, err := runFullHooked(t, p, cfg, func(r int) Hooks {
				return Hooks{
					// Asked once epoch 1 is over: during epoch 2.
					Epoch: func(st EpochStats) error {
						if r == 1 && st.Epoch == 1 {
							asked.Store(true)
						}
						return nil
					},
					Stop: func() bool { return r == 1 && asked.Load() },
				}
			})
			require.Error(t, err)
			for r, err := range errs {
				var st *Stopped
				require.ErrorAs(t, err, &st, "rank %d", r)
				require.Equal(t, Stopped{Epoch: 3, Checkpoint: cfg.CheckpointDir}, *st, "rank %d", r)
			}
			requireCheckpointFiles(t, cfg.CheckpointDir, p, 2)

			cfg.Resume = true
			for r, got := range runFull(t, p, cfg) {
				require.Equal(t, want.Epochs, withoutTimes(got.Epochs, want.Epochs), "rank %d", r)
				require.Equal(t, want.TestAcc, got.TestAcc)
			}
		})
	}
}

// A stop asked for during an epoch's last step, which no step boundary
// follows, is acted on at the epoch's end before its evaluation (which may
// take longer than a scheduler's grace period): the run checkpoints the
// epoch unevaluated and stops after it, also after the last epoch; the
// resumed run makes the deferred evaluation first and ends with the
// uninterrupted run's epochs (evaluations and their bytes included),
// best epoch and weights.
func TestStopDefersEvaluation(t *testing.T) {
	const p = 2
	for _, stopEpoch := range []int{2, 3} {
		t.Run(fmt.Sprintf("epoch %d of 3", stopEpoch), func(t *testing.T) {
			cfg := stopConfig(false)
			cfg.EvalEvery = 1
			full, errs := runHooked(t, p, cfg, func(int) Hooks { return Hooks{} })
			require.NoError(t, errors.Join(errs...))

			cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 10
			_, errs = runHooked(t, p, cfg, func(int) Hooks {
				var asked atomic.Bool
				return Hooks{
					Batch: func(epoch, batch, batches int) {
						if epoch == stopEpoch && batch == batches-1 {
							asked.Store(true)
						}
					},
					Stop: asked.Load,
				}
			})
			for r, err := range errs {
				var st *Stopped
				require.ErrorAs(t, err, &st, "rank %d", r)
				require.Equal(t, Stopped{Epoch: stopEpoch + 1, Checkpoint: cfg.CheckpointDir}, *st, "rank %d", r)
			}

			cfg.Resume = true
			var logged atomic.Value
			resumed, errs := runHooked(t, p, cfg, func(r int) Hooks {
				return Hooks{Log: func(format string, args ...any) {
					if r == 0 && strings.Contains(format, "deferred by the stop") {
						logged.Store(fmt.Sprintf(format, args...))
					}
				}}
			})
			require.NoError(t, errors.Join(errs...))
			require.Contains(t, logged.Load(), fmt.Sprintf("evaluated epoch %d, deferred by the stop", stopEpoch))
			requireSameRun(t, full[0], resumed[0])
			for i, want := range full[0].Epochs {
				got := resumed[0].Epochs[i]
				require.Equal(t, [4]any{want.Evaluated, want.ValLoss, want.TestAcc, want.Bytes}, [4]any{got.Evaluated, got.ValLoss, got.TestAcc, got.Bytes}, "epoch %d", i+1)
			}
			require.Equal(t, full[0].TestAcc, resumed[0].TestAcc)
		})
	}
}
