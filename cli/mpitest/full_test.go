package mpitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
)

// fullEpoch is the part of a full-graph --metrics epoch record the tests
// check: bytes sent by phase, summed over ranks.
type fullEpoch struct {
	Epoch   int              `json:"epoch"`
	ValAcc  *float64         `json:"val_acc"`
	Bytes   map[string]int64 `json:"bytes"`
	Batches int              `json:"batches"`
}

// fullFinal is the part of a full-graph run's final object the tests check.
type fullFinal struct {
	Backend       string           `json:"backend"`
	Ranks         int              `json:"ranks"`
	EpochsRun     int              `json:"epochs_run"`
	BytesPerEpoch map[string]int64 `json:"bytes_per_epoch"`
	Analytical    map[string]int64 `json:"analytical_bytes_per_epoch"`
	HaloRows      int64            `json:"halo_rows"`
	StateBytes    []int64          `json:"state_bytes"`
	Config        struct {
		Mode      string `json:"mode"`
		Stages    int    `json:"stages"`
		Pipelines int    `json:"pipelines"`
		Chunks    int    `json:"chunks"`
	} `json:"config"`
	Comm struct {
		PerRank []collective.Snapshot `json:"per_rank"`
	} `json:"comm"`
}

// readFull returns the epoch records of a full-graph --metrics file and
// its final object.
func readFull(t *testing.T, path string) ([]fullEpoch, fullFinal) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var epochs []fullEpoch
	var fin fullFinal
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var tag struct {
			Final bool `json:"final"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &tag))
		if tag.Final {
			require.NoError(t, json.Unmarshal(sc.Bytes(), &fin))
			continue
		}
		var e fullEpoch
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		epochs = append(epochs, e)
	}
	require.NoError(t, sc.Err())
	return epochs, fin
}

// fullTrainPhases are the phases of a full-graph training epoch and
// fullEvalPhase that of an evaluation, as the metrics name them (the
// stable keys of README's Full-graph training; metrics.PhaseAct, …).
var fullTrainPhases = []string{"act", "act-grad", "halo", "grad"}

const fullEvalPhase = "eval"

// Full-graph training under mpirun (graph parallel, GNNPipe, hybrid)
// follows the in-process backend running the same program: the same
// losses up to the order of float32 sums inside MPI_Allreduce, and exactly
// the same bytes, per epoch and phase and per rank and kind of call. In
// the MPI run every phase's measured bytes equal pipe.Analytical's volume,
// both as the trainer reports them per epoch and as the communicator
// counted them over the whole run.
func TestFullMPIMatchesInproc(t *testing.T) {
	skipUnlessMPI(t)
	// A 4-layer GCNII of width 16 on Cora trains 4 epochs in about a second
	// on 4 ranks; --lr 0.05 moves the loss by more than the tolerance each
	// epoch (checked below), so the loss comparison can fail.
	const epochs, evalEvery, layers = 4, 2, 4
	base := []string{"train", "--data", "data/cora", "--model", "gcnii", "--layers", fmt.Sprint(layers), "--hidden", "16",
		"--epochs", fmt.Sprint(epochs), "--eval-every", fmt.Sprint(evalEvery), "--seed", "3", "--partition", "metis", "--lr", "0.05"}
	losses := map[string][]float64{} // by case name, MPI runs
	for _, tc := range []struct {
		mode                  string
		np, chunks, pipelines int
		stages, parts         int // the layout the run must report
		act, halo             bool
	}{
		{mode: "graph", np: 2, chunks: 1, stages: 1, parts: 2, halo: true},
		{mode: "graph", np: 4, chunks: 1, stages: 1, parts: 4, halo: true},
		{mode: "pipe", np: 2, chunks: 2, stages: 2, parts: 1, act: true},
		{mode: "pipe", np: 4, chunks: 2, stages: 4, parts: 1, act: true},
		{mode: "hybrid", np: 4, chunks: 2, pipelines: 2, stages: 2, parts: 2, act: true, halo: true},
	} {
		name := fmt.Sprintf("%s/np=%d", tc.mode, tc.np)
		t.Run(name, func(t *testing.T) {
			args := append([]string{}, base...)
			args = append(args, "--mode", tc.mode, "--chunks", fmt.Sprint(tc.chunks))
			if tc.pipelines > 0 {
				args = append(args, "--pipelines", fmt.Sprint(tc.pipelines))
			}
			dir := t.TempDir()
			m1, m2 := filepath.Join(dir, "mpi.jsonl"), filepath.Join(dir, "inproc.jsonl")
			r := mpirun(t, 2*time.Minute, tc.np, bin, append(args, "--metrics", m1)...)
			require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
			require.Contains(t, r.stdout, "bytes per epoch, measured (analytical)")
			l := local(t, append([]string{"--ranks", fmt.Sprint(tc.np)}, append(args, "--metrics", m2)...)...)
			require.Equal(t, 0, l.code, "stderr:\n%s", l.stderr)

			// Losses: the same curve on both backends.
			a, _ := readMetrics(t, m1)
			b, _ := readMetrics(t, m2)
			require.Len(t, a, epochs)
			require.Len(t, b, epochs)
			for i := range a {
				require.Equal(t, i+1, a[i].Epoch)
				require.InEpsilon(t, b[i].Loss, a[i].Loss, 1e-4, "epoch %d", i+1)
			}
			la := lossesOf(a)
			require.Greater(t, math.Abs(la[0]-la[epochs-1])/la[0], 1e-3, "the loss must move by more than the tolerance: %v", la)
			losses[name] = la

			ea, fa := readFull(t, m1)
			eb, fb := readFull(t, m2)
			require.Equal(t, "mpi", fa.Backend)
			require.Equal(t, "inproc", fb.Backend)
			require.Equal(t, tc.np, fa.Ranks)
			require.Equal(t, tc.np, fb.Ranks)
			require.Equal(t, epochs, fa.EpochsRun)
			require.Equal(t, epochs, fb.EpochsRun)
			require.Equal(t, tc.mode, fa.Config.Mode)
			require.Equal(t, tc.stages, fa.Config.Stages)
			require.Equal(t, tc.parts, fa.Config.Pipelines)
			require.Equal(t, tc.chunks, fa.Config.Chunks)

			// Bytes: exactly the same on both backends, by epoch and phase,
			// and by rank, phase and kind of call over the whole run.
			require.Equal(t, eb, ea)
			require.Equal(t, fb.BytesPerEpoch, fa.BytesPerEpoch)
			require.Equal(t, fb.Analytical, fa.Analytical)
			require.Equal(t, fb.HaloRows, fa.HaloRows)
			require.Equal(t, fb.StateBytes, fa.StateBytes)
			require.Len(t, fa.Comm.PerRank, tc.np)
			require.Equal(t, withoutTime(fb.Comm.PerRank), withoutTime(fa.Comm.PerRank))

			// The layout moves what it should: stage-to-stage rows in pipe
			// and hybrid, halo rows between parts in graph and hybrid.
			an := fa.Analytical
			require.Equal(t, tc.act, an["act"] > 0, "act %d", an["act"])
			require.Equal(t, an["act"], an["act-grad"])
			require.Equal(t, tc.halo, an["halo"] > 0, "halo %d", an["halo"])
			require.Equal(t, tc.halo, fa.HaloRows > 0, "halo rows %d", fa.HaloRows)
			require.Positive(t, an["grad"])
			require.Positive(t, an[fullEvalPhase])

			// Measured equals analytical in the MPI run: the mean per epoch,
			// every epoch, and every evaluation (epochs 2 and 4).
			for _, ph := range fullTrainPhases {
				require.Equal(t, an[ph], fa.BytesPerEpoch[ph], "bytes_per_epoch[%s]", ph)
			}
			evals := 0
			for _, e := range ea {
				require.Equal(t, tc.chunks, e.Batches, "epoch %d", e.Epoch)
				for _, ph := range fullTrainPhases {
					require.Equal(t, an[ph], e.Bytes[ph], "epoch %d, %s", e.Epoch, ph)
				}
				want := int64(0)
				if e.Epoch%evalEvery == 0 || e.Epoch == epochs {
					require.NotNil(t, e.ValAcc, "epoch %d is evaluated", e.Epoch)
					want = an[fullEvalPhase]
					evals++
				}
				require.Equal(t, want, e.Bytes[fullEvalPhase], "epoch %d, eval", e.Epoch)
			}
			require.Equal(t, 2, evals)
			// The communicator's own counts over the run, summed over
			// ranks: epochs × the training volume, evals × the evaluation's.
			total := map[string]int64{}
			for _, s := range fa.Comm.PerRank {
				for _, ph := range append([]string{fullEvalPhase}, fullTrainPhases...) {
					total[ph] += s.Phase(ph).SentBytes
				}
			}
			for _, ph := range fullTrainPhases {
				require.Equal(t, int64(epochs)*an[ph], total[ph], "comm.per_rank, phase %s", ph)
			}
			require.Equal(t, int64(evals)*an[fullEvalPhase], total[fullEvalPhase], "comm.per_rank, phase eval")
		})
	}
	// Under MPI too, the rank count changes where the work runs, not what
	// it computes: graph parallelism is exact full-graph training on any
	// number of parts, and GNNPipe's chunks see the same histories however
	// many stages the layers are split into.
	for _, pair := range [][2]string{{"graph/np=2", "graph/np=4"}, {"pipe/np=2", "pipe/np=4"}} {
		a, b := losses[pair[0]], losses[pair[1]]
		if a == nil || b == nil {
			continue // a subtest failed or was filtered out
		}
		for i := range a {
			require.InEpsilon(t, a[i], b[i], 1e-4, "%s against %s, epoch %d", pair[1], pair[0], i+1)
		}
	}
}

// A flag or setting that full-graph training refuses fails the job under
// mpirun with the reason, quickly, before any training and without
// leaving anything behind.
func TestFullBadInput(t *testing.T) {
	skipUnlessMPI(t)
	ck := filepath.Join(t.TempDir(), "ck")
	for _, tc := range []struct {
		name string
		np   int
		args []string
		want string
	}{
		{"resume-nothing", 2, []string{"--mode", "pipe", "--resume", "--checkpoint", ck},
			"no full-graph checkpoint to resume from"},
		{"resume-no-dir", 2, []string{"--mode", "pipe", "--resume"},
			"train: resume needs a checkpoint directory"},
		{"cache-frac", 2, []string{"--mode", "pipe", "--cache-frac", "0.5"},
			"train: --cache-frac applies to minibatch training, not to --mode pipe"},
		{"minibatch-chunks", 2, []string{"--chunks", "2"},
			"train: --chunks applies to full-graph training"},
		{"fanouts", 2, []string{"--mode", "pipe", "--fanouts", "5,5"},
			"train: --fanouts applies to minibatch training, not to --mode pipe"},
		{"graph-chunks", 2, []string{"--mode", "graph", "--chunks", "2"},
			"train: --mode graph processes each part whole"},
		{"pipelines", 4, []string{"--mode", "hybrid", "--pipelines", "3"},
			"train: 3 pipelines do not divide the 4 ranks"},
		{"stages", 2, []string{"--mode", "pipe", "--layers", "1"},
			"train: 1 layers for 2 pipeline stages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"train", "--data", "data/cora", "--model", "gcnii", "--epochs", "1"}, tc.args...)
			r := mpirun(t, time.Minute, tc.np, bin, args...)
			require.NotEqual(t, 0, r.code, "stdout:\n%s", r.stdout)
			require.Less(t, r.took, 10*time.Second, "stderr:\n%s", r.stderr)
			// Every rank finds the error itself, before any collective, but
			// the first to abort may end the others before they print, so
			// one rank's message is what can be relied on.
			require.Contains(t, r.stderr, tc.want)
			require.Regexp(t, `gnnmpi: rank [0-9]+: `, r.stderr)
			require.NotContains(t, r.stdout, "epoch   1", "no training before the error")

			// The in-process backend refuses the same.
			l := local(t, append([]string{"--ranks", fmt.Sprint(tc.np)}, args...)...)
			require.NotEqual(t, 0, l.code)
			require.Contains(t, l.stderr, tc.want)
		})
	}
	_, err := os.Stat(ck)
	require.True(t, os.IsNotExist(err), "resuming from nothing created the checkpoint directory: %v", err)
}
