package train

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/pipe"
)

func fullConfig(mode Mode) FullConfig {
	cfg := Defaults(model.KindGCNII, ModePipe).Full
	cfg.Mode, cfg.Epochs, cfg.Chunks = mode, 3, 2
	if mode == ModeGraph {
		cfg.Chunks = 1
	}
	cfg.Model.Layers, cfg.Model.Hidden = 4, 8
	cfg.FeatureNorm = "none"
	return cfg
}

// runFull trains cfg on p in-process ranks, the parts METIS-partitioned.
func runFull(t *testing.T, p int, cfg FullConfig) []*FullResult {
	t.Helper()
	results, _, err := runFullHooks(t, p, cfg, Hooks{})
	require.NoError(t, err)
	return results
}

// runFullHooks trains cfg on p in-process ranks with hooks h and returns
// every rank's result and error, and the job's (the first) error.
func runFullHooks(t *testing.T, p int, cfg FullConfig, h Hooks) ([]*FullResult, []error, error) {
	t.Helper()
	return runFullHooked(t, p, cfg, func(int) Hooks { return h })
}

// runFullHooked is runFullHooks with rank r's hooks hooksOf(r).
func runFullHooked(t *testing.T, p int, cfg FullConfig, hooksOf func(r int) Hooks) ([]*FullResult, []error, error) {
	t.Helper()
	g := sbm()
	stages, err := FullStages(cfg, p)
	require.NoError(t, err)
	parts := p / stages
	book := partition.Block(g.NumNodes, 1)
	if parts > 1 {
		book, err = graph.MetisPartition(g, parts, "random", 1)
		require.NoError(t, err)
	}
	results, errs := make([]*FullResult, p), make([]error, p)
	err = inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		r := c.Rank()
		d, err := Distribute(g, "random", book, r/stages)
		if err != nil {
			return err
		}
		results[r], errs[r] = RunFull(collective.WithStats(c, nil), d, cfg, hooksOf(r))
		return errs[r]
	})
	return results, errs, err
}

func TestRunFullModes(t *testing.T) {
	for _, tc := range []struct {
		mode      Mode
		p, pipes  int
		act, halo bool
	}{{ModeGraph, 4, 0, false, true}, {ModePipe, 4, 0, true, false}, {ModeHybrid, 4, 2, true, true}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			cfg := fullConfig(tc.mode)
			cfg.Pipelines = tc.pipes
			res := runFull(t, tc.p, cfg)
			r0 := res[0]
			require.Len(t, r0.Epochs, 3)
			for r := 1; r < tc.p; r++ {
				assert.Equal(t, withoutTimes(res[r].Epochs, r0.Epochs), r0.Epochs, "rank %d", r)
			}
			// Measured bytes per epoch equal the analytical volume.
			for _, ph := range pipe.TrainPhases() {
				assert.Equal(t, r0.Analytical[ph], r0.BytesPerEpoch[ph], ph)
				for _, e := range r0.Epochs {
					assert.Equal(t, r0.Analytical[ph], e.Bytes[ph], "%s epoch %d", ph, e.Epoch)
				}
			}
			assert.Equal(t, r0.Analytical[metrics.PhaseEval], r0.Epochs[0].Bytes[metrics.PhaseEval])
			assert.Equal(t, tc.act, r0.BytesPerEpoch[metrics.PhaseAct] > 0)
			assert.Equal(t, tc.halo, r0.BytesPerEpoch[metrics.PhaseHalo] > 0)
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
		{func(c *FullConfig) { c.Model.Layers = 2 }, 4, "every stage needs a layer"},
		{func(c *FullConfig) { c.Mode, c.Chunks = ModeGraph, 3 }, 2, "Chunks is for pipe"},
		{func(c *FullConfig) { c.ChunkMethod = "block" }, 2, "chunk partition"},
		{func(c *FullConfig) { c.Model.Kind = "gat" }, 2, "kind"},
		{func(c *FullConfig) { c.CheckpointDir, c.CheckpointEvery = "ck", 0 }, 2, "checkpoint every 0 < 1"},
		{func(c *FullConfig) { c.Resume = true }, 2, "resume needs a checkpoint directory"},
	} {
		cfg := fullConfig(ModePipe)
		tc.edit(&cfg)
		assert.ErrorContains(t, cfg.Validate(tc.p), tc.want)
	}
	// Data loaded with the wrong replication for the mode.
	g := sbm()
	err := inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Distribute(g, "random", partition.Block(g.NumNodes, 2), c.Rank())
		if err != nil {
			return err
		}
		_, err = RunFull(c, d, fullConfig(ModePipe), Hooks{})
		return err
	})
	assert.ErrorContains(t, err, "load with feature replication 2")
}

// errKilled stops a run from its epoch hook, after the epoch's checkpoint,
// as a killed job stops.
var errKilled = errors.New("killed")

// killedAfter returns hooks that stop the run after epoch k.
func killedAfter(k int) Hooks {
	return Hooks{Epoch: func(st EpochStats) error {
		if st.Epoch == k {
			return errKilled
		}
		return nil
	}}
}

// A full-graph run killed after epoch k and resumed from its checkpoint
// continues exactly the curve of an uninterrupted run, in every mode, with
// every staleness remedy (the snapshot every 2 epochs taken before or after
// the kill, historical gradients kept or cleared), whether the last
// checkpoint is that of epoch k or an earlier one.
func TestFullResumeContinuesTheSameCurve(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     Mode
		p, pipes int
		every    int   // checkpoint every
		kills    []int // epochs after which the run is killed
		edit     func(*FullConfig)
	}{
		{"graph", ModeGraph, 2, 0, 1, []int{2}, nil},
		{"pipe", ModePipe, 2, 0, 1, []int{1, 2, 3}, func(c *FullConfig) {
			c.ShuffleChunks, c.ClearGrads, c.SnapshotEvery = true, true, 2
		}},
		{"pipe-every-2", ModePipe, 2, 0, 2, []int{3}, func(c *FullConfig) { c.SnapshotEvery = 2 }},
		{"pipe-keep-grads-sgd", ModePipe, 2, 0, 1, []int{2}, func(c *FullConfig) {
			c.ClearGrads, c.Optimizer, c.Momentum = false, OptimizerSGD, 0.9
		}},
		{"hybrid", ModeHybrid, 4, 2, 1, []int{3}, func(c *FullConfig) { c.SnapshotEvery = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fullConfig(tc.mode)
			cfg.Pipelines, cfg.Epochs, cfg.EvalEvery = tc.pipes, 5, 2
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			want := runFull(t, tc.p, cfg)[0]
			for _, k := range tc.kills {
				cfg := cfg
				cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), tc.every
				_, _, err := runFullHooks(t, tc.p, cfg, killedAfter(k))
				require.ErrorIs(t, err, errKilled)
				saved := k - k%tc.every
				requireCheckpointFiles(t, cfg.CheckpointDir, tc.p, saved)

				cfg.Resume = true
				res := runFull(t, tc.p, cfg)
				for r, got := range res {
					require.Equal(t, want.Epochs, withoutTimes(got.Epochs, want.Epochs), "killed after %d, rank %d", k, r)
					require.Equal(t, want.BestEpoch, got.BestEpoch)
					require.Equal(t, want.BestValAcc, got.BestValAcc)
					require.Equal(t, want.TestAcc, got.TestAcc)
				}
				requireCheckpointFiles(t, cfg.CheckpointDir, tc.p, cfg.Epochs)
			}
		})
	}
}

// requireCheckpointFiles checks that dir holds the manifest of epoch,
// exactly the p rank files of that epoch and the released (empty) lock
// file.
func requireCheckpointFiles(t *testing.T, dir string, p, epoch int) {
	t.Helper()
	lock, err := os.Stat(filepath.Join(dir, LockFile))
	require.NoError(t, err)
	require.Zero(t, lock.Size(), "the lock is released")
	var m fullManifest
	b, err := os.ReadFile(filepath.Join(dir, FullManifestFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &m))
	require.Equal(t, epoch, m.Epoch)
	want := []string{FullManifestFile, LockFile}
	for r := range p {
		want = append(want, FullRankFile(r, epoch))
	}
	require.Equal(t, want[2:], m.Files)
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	slices.Sort(want)
	require.Equal(t, want, got)
}

// Resuming fails on every rank, with an error naming the file, when the
// settings, the rank count or a rank's file do not match the checkpoint.
func TestFullResumeRejects(t *testing.T) {
	cfg := fullConfig(ModePipe)
	cfg.Epochs, cfg.CheckpointEvery = 2, 1
	src := t.TempDir()
	cfg.CheckpointDir = src
	runFull(t, 2, cfg)
	manifest, rank0, rank1 := FullManifestFile, FullRankFile(0, 2), FullRankFile(1, 2)
	edit := func(name string, f func(dir string, b []byte) []byte) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			path := filepath.Join(dir, name)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(path, f(dir, b), 0o644))
		}
	}
	for _, tc := range []struct {
		name   string
		p      int
		cfg    func(*FullConfig)
		damage func(t *testing.T, dir string)
		file   string // the file the error names ("": none)
		want   string
	}{
		{"chunks", 2, func(c *FullConfig) { c.Chunks = 3 }, nil, manifest, "Config.Chunks: checkpoint 2, this run 3"},
		{"seed", 2, func(c *FullConfig) { c.Seed = 9 }, nil, manifest, "Config.Pipe.Seed: checkpoint 1, this run 9"},
		{"snapshots", 2, func(c *FullConfig) { c.SnapshotEvery = 5 }, nil, manifest, "they differ in Config.Pipe.SnapshotEvery: checkpoint 23, this run 5"},
		{"ranks", 4, nil, nil, manifest, "written by 2 ranks; this run has 4: a full-graph checkpoint (--mode graph, pipe, hybrid) holds each rank's part or stage of the state in that rank's file and is not repartitioned or restaged, so it resumes only with 2 ranks"},
		{"corrupted", 2, nil, edit(rank1, func(_ string, b []byte) []byte { b[len(b)/2] ^= 0x10; return b }), rank1, "checksum mismatch"},
		{"truncated", 2, nil, edit(rank0, func(_ string, b []byte) []byte { return b[:len(b)-100] }), rank0, "checksum mismatch"},
		{"missing", 2, nil, func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, rank1))) }, rank1, "no such file"},
		{"other rank's file", 2, nil, edit(rank1, func(dir string, _ []byte) []byte {
			b, err := os.ReadFile(filepath.Join(dir, rank0))
			require.NoError(t, err)
			return b
		}), rank1, "holds rank 0's state after epoch 2, want rank 1's"},
		{"bad manifest", 2, nil, edit(manifest, func(_ string, b []byte) []byte { return b[:len(b)/2] }), manifest, "not a gnnmpi-full-checkpoint-1 manifest"},
		{"no checkpoint", 2, nil, func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, manifest))) }, "", "no full-graph checkpoint to resume from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir() // a copy of the checkpoint
			ents, err := os.ReadDir(src)
			require.NoError(t, err)
			for _, e := range ents {
				b, err := os.ReadFile(filepath.Join(src, e.Name()))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
			}
			if tc.damage != nil {
				tc.damage(t, dir)
			}
			c := cfg
			c.Epochs, c.Resume, c.CheckpointDir = 3, true, dir
			if tc.cfg != nil {
				tc.cfg(&c)
			}
			_, errs, err := runFullHooks(t, tc.p, c, Hooks{})
			require.Error(t, err)
			for r, err := range errs {
				require.ErrorContains(t, err, tc.want, "rank %d", r)
				if tc.file != "" {
					require.ErrorContains(t, err, filepath.Join(dir, tc.file), "rank %d", r)
				}
			}
			t.Log(err)
		})
	}
	// The undamaged checkpoint resumes.
	cfg.Epochs, cfg.Resume = 3, true
	res := runFull(t, 2, cfg)
	require.Len(t, res[0].Epochs, 3)
}
