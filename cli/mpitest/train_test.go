package mpitest

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// epochLine is the part of a --metrics JSONL record the tests compare.
type epochLine struct {
	Epoch int     `json:"epoch"`
	Loss  float64 `json:"loss"`
}

// readMetrics returns the epoch records and the final object's raw map.
func readMetrics(t *testing.T, path string) ([]epochLine, map[string]any) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var epochs []epochLine
	var fin map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var raw map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &raw))
		if raw["final"] == true {
			fin = raw
			continue
		}
		var e epochLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e))
		epochs = append(epochs, e)
	}
	require.NoError(t, sc.Err())
	return epochs, fin
}

func lossesOf(es []epochLine) []float64 {
	var l []float64
	for _, e := range es {
		l = append(l, e.Loss)
	}
	return l
}

// Training under mpirun follows the in-process backend's loss curve: the
// same program on the same data with the same seed and rank count. The
// only difference allowed is the order of the float32 gradient sums inside
// MPI_Allreduce.
func TestTrainMPIMatchesInproc(t *testing.T) {
	skipUnlessMPI(t)
	for _, np := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"train", "--data", "data/cora", "--epochs", "6", "--seed", "3"}
			m1, m2 := filepath.Join(dir, "mpi.jsonl"), filepath.Join(dir, "inproc.jsonl")
			r := mpirun(t, 3*time.Minute, np, bin, append(args, "--metrics", m1)...)
			require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
			require.Contains(t, r.stdout, "test accuracy")
			l := local(t, append([]string{"--ranks", fmt.Sprint(np)}, append(args, "--metrics", m2)...)...)
			require.Equal(t, 0, l.code, "stderr:\n%s", l.stderr)
			a, fa := readMetrics(t, m1)
			b, fb := readMetrics(t, m2)
			require.Len(t, a, 6)
			require.Len(t, b, 6)
			for i := range a {
				require.InEpsilon(t, b[i].Loss, a[i].Loss, 1e-4, "epoch %d", i+1)
			}
			require.Equal(t, "mpi", fa["backend"])
			require.Equal(t, "inproc", fb["backend"])
			require.EqualValues(t, np, fa["ranks"])
			// Byte counts are deterministic: the same on both backends.
			require.Equal(t, fb["bytes_per_epoch"], fa["bytes_per_epoch"])
		})
	}
}

// Under mpirun the overlapped pipeline (a loader goroutine sampling and
// fetching on its own communicator while the compute goroutine sums
// gradients: blocking calls on two threads under MPI_THREAD_MULTIPLE, or
// the MPI thread's nonblocking collectives under FUNNELED) gives exactly
// the losses and byte counts of --overlap=false, and follows the
// in-process backend's curve; every epoch reports wait_s.
func TestTrainOverlapMPI(t *testing.T) {
	skipUnlessMPI(t)
	const np = 2
	for _, run := range []struct {
		thread string
		extra  []string
	}{
		{"multiple", nil},
		{"multiple", []string{"--topology", "1.5d", "--cache", "degree", "--cache-frac", "0.2", "--bulk", "2"}},
		{"funneled", []string{"--topology", "1.5d", "--bulk", "2"}},
	} {
		t.Run(run.thread+fmt.Sprint(run.extra), func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--mpi-thread", run.thread, "train", "--data", "data/cora", "--epochs", "4", "--seed", "4"}, run.extra...)
			run := func(name string, overlap bool) ([]epochLine, map[string]any) {
				m := filepath.Join(dir, name+".jsonl")
				r := mpirun(t, 3*time.Minute, np, bin, append(args, "--overlap="+fmt.Sprint(overlap), "--metrics", m)...)
				require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
				return readMetrics(t, m)
			}
			on, fon := run("on", true)
			off, foff := run("off", false)
			require.Len(t, on, 4)
			require.Equal(t, lossesOf(off), lossesOf(on), "bit-identical losses with and without overlap")
			require.Equal(t, foff["bytes_per_epoch"], fon["bytes_per_epoch"])
			require.Equal(t, true, fon["config"].(map[string]any)["overlap"])

			m := filepath.Join(dir, "inproc.jsonl")
			l := local(t, append([]string{"--ranks", fmt.Sprint(np)}, append(args[2:], "--metrics", m)...)...)
			require.Equal(t, 0, l.code, "stderr:\n%s", l.stderr)
			in, fin := readMetrics(t, m)
			for i := range on {
				require.InEpsilon(t, in[i].Loss, on[i].Loss, 1e-4, "epoch %d", i+1)
			}
			require.Equal(t, fin["bytes_per_epoch"], fon["bytes_per_epoch"])
			raw, err := os.ReadFile(filepath.Join(dir, "on.jsonl"))
			require.NoError(t, err)
			require.Contains(t, string(raw), `"wait_s":`)
		})
	}
}

// Under mpirun, gradients summed in bf16 buckets during backward (a
// goroutine on a communicator of its own; MPI_THREAD_MULTIPLE or
// FUNNELED) give exactly the in-process
// backend's losses without buckets (the 16-bit sums are gnnmpi's own, in
// rank order, on every backend), half the gradient bytes of float32, and
// every epoch reports grad_exposed_s.
func TestTrainGradBF16MPI(t *testing.T) {
	skipUnlessMPI(t)
	const np = 2
	dir := t.TempDir()
	args := []string{"train", "--data", "data/cora", "--epochs", "3", "--seed", "5"}
	var mpi []epochLine
	var fm map[string]any
	m := ""
	for _, thread := range []string{"multiple", "funneled"} {
		m = filepath.Join(dir, thread+".jsonl")
		r := mpirun(t, 3*time.Minute, np, bin, append([]string{"--mpi-thread", thread}, append(args, "--grad-dtype", "bf16", "--grad-bucket-mb", "0.25", "--metrics", m)...)...)
		require.Equal(t, 0, r.code, "%s stderr:\n%s", thread, r.stderr)
		require.Contains(t, r.stdout, "exposed")
		e, f := readMetrics(t, m)
		require.Len(t, e, 3)
		if mpi != nil {
			require.Equal(t, lossesOf(mpi), lossesOf(e), "%s: the same sums", thread)
		}
		mpi, fm = e, f
	}

	inproc := func(name string, extra ...string) ([]epochLine, map[string]any) {
		m := filepath.Join(dir, name+".jsonl")
		l := local(t, append([]string{"--ranks", fmt.Sprint(np)}, append(append(args, extra...), "--metrics", m)...)...)
		require.Equal(t, 0, l.code, "stderr:\n%s", l.stderr)
		return readMetrics(t, m)
	}
	half, fh := inproc("bf16", "--grad-dtype", "bf16", "--grad-bucket-mb", "0")
	_, f32 := inproc("f32")
	require.Equal(t, lossesOf(half), lossesOf(mpi))
	grad := func(f map[string]any) float64 { return f["bytes_per_epoch"].(map[string]any)["grad"].(float64) }
	require.Equal(t, grad(fh), grad(fm))
	require.Equal(t, grad(f32), 2*grad(fm), "half of float32's bytes")
	raw, err := os.ReadFile(m)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"grad_exposed_s":`)
}

// Under mpirun on one host the float32 gradients are summed through an
// MPI-3 shared window (collective.SharedSum) in rank order, as the
// in-process Allreduce adds them: every epoch reports grad_wait_s, the
// bytes are the in-process run's, and the losses are its losses (with 3
// ranks up to the order of MPI's float64 sum of the ranks' loss sums),
// under MPI_THREAD_MULTIPLE and FUNNELED.
func TestTrainSharedGradMPI(t *testing.T) {
	skipUnlessMPI(t)
	for _, run := range []struct {
		np     int
		thread string
	}{{2, "multiple"}, {2, "funneled"}, {3, "multiple"}} {
		t.Run(fmt.Sprintf("np=%d/%s", run.np, run.thread), func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"train", "--data", "data/cora", "--epochs", "4", "--seed", "6"}
			m1, m2 := filepath.Join(dir, "mpi.jsonl"), filepath.Join(dir, "inproc.jsonl")
			r := mpirun(t, 3*time.Minute, run.np, bin, append([]string{"--mpi-thread", run.thread}, append(args, "--metrics", m1)...)...)
			require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
			l := local(t, append([]string{"--ranks", fmt.Sprint(run.np)}, append(args, "--metrics", m2)...)...)
			require.Equal(t, 0, l.code, "stderr:\n%s", l.stderr)
			a, fa := readMetrics(t, m1)
			b, fb := readMetrics(t, m2)
			require.Len(t, a, 4)
			if run.np == 2 {
				require.Equal(t, lossesOf(b), lossesOf(a))
			}
			for i := range a {
				require.InEpsilon(t, b[i].Loss, a[i].Loss, 1e-12, "epoch %d", i+1)
			}
			require.Equal(t, fb["bytes_per_epoch"], fa["bytes_per_epoch"])
			raw, err := os.ReadFile(m1)
			require.NoError(t, err)
			require.Equal(t, 4, strings.Count(string(raw), `"grad_wait_s":`), "every epoch's gradients went through shared memory")
		})
	}
}

// A job killed (SIGKILL to mpirun and its ranks) after a checkpoint, then
// resumed with --resume, ends with exactly the losses of an uninterrupted
// run.
func TestTrainKilledAndResumed(t *testing.T) {
	skipUnlessMPI(t)
	const np, epochs = 2, 60
	dir := t.TempDir()
	args := []string{"train", "--data", "data/cora", "--epochs", fmt.Sprint(epochs), "--seed", "5", "--eval-every", "1"}
	full := filepath.Join(dir, "full.jsonl")
	r := mpirun(t, 5*time.Minute, np, bin, append(args, "--metrics", full)...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)

	ckdir := filepath.Join(dir, "ck")
	ckargs := append(args, "--checkpoint", ckdir, "--checkpoint-every", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := startSession(t, ctx, np, append(ckargs, "--metrics", filepath.Join(dir, "killed.jsonl"))...)
	killedAt := 0
	for killedAt == 0 {
		time.Sleep(10 * time.Millisecond)
		if e := checkpointEpoch(filepath.Join(ckdir, "checkpoint.bin")); e >= 5 {
			killSession(t, cmd.Process.Pid)
			killedAt = e
		}
	}
	_ = cmd.Wait()
	require.Less(t, killedAt, epochs, "the run must be killed before it ends")
	waitSessionGone(t, cmd.Process.Pid)

	resumed := filepath.Join(dir, "resumed.jsonl")
	r = mpirun(t, 5*time.Minute, np, bin, append(ckargs, "--resume", "--metrics", resumed)...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	a, fa := readMetrics(t, full)
	b, fb := readMetrics(t, resumed)
	start := epochs - len(b) + 1
	require.Greater(t, start, 5, "resumed after the checkpoint")
	require.Equal(t, lossesOf(a[start-1:]), lossesOf(b), "bit-identical losses after the resume")
	require.Equal(t, fa["best_epoch"], fb["best_epoch"])
	require.Equal(t, fa["test_acc"], fb["test_acc"])
}

// checkpointEpoch reads the epoch from a checkpoint's JSON header, or 0.
func checkpointEpoch(path string) int {
	b, err := os.ReadFile(path)
	const magic = "GNNMPI-CKPT-1\n"
	if err != nil || len(b) < len(magic)+8 {
		return 0
	}
	n := binary.LittleEndian.Uint64(b[len(magic):])
	if n > math.MaxInt32 || len(b) < len(magic)+8+int(n) {
		return 0
	}
	var h struct {
		Epoch int `json:"epoch"`
	}
	if json.Unmarshal(b[len(magic)+8:len(magic)+8+int(n)], &h) != nil {
		return 0
	}
	return h.Epoch
}

// A bad training flag fails every rank with a clear message.
func TestTrainBadInput(t *testing.T) {
	skipUnlessMPI(t)
	r := mpirun(t, time.Minute, 2, bin, "train", "--data", "data/cora", "--model", "nope")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, `unknown --model "nope"`)
	r = mpirun(t, time.Minute, 2, bin, "train", "--data", "data/cora", "--split", "nosuch")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, `no split "nosuch"`)
}

// The feature store under mpirun (f16 words as MPI_UINT16_T, replica
// groups from MPI_Comm_split, the cache fill) counts exactly the rows and
// bytes of the in-process backend, for every policy and replication.
func TestFetchMPIMatchesInproc(t *testing.T) {
	skipUnlessMPI(t)
	for _, run := range []struct {
		np          int
		replication string
		dtype       string
	}{{2, "1", "f16"}, {4, "2", "f32"}, {4, "1", "f16"}} {
		t.Run(fmt.Sprintf("np=%d/c=%s/%s", run.np, run.replication, run.dtype), func(t *testing.T) {
			args := []string{"fetch", "--data", "data/cora", "--batch-size", "32", "--epochs", "2", "--cache", "none,degree,vip,sim",
				"--cache-frac", "0,0.2,1", "--replication", run.replication, "--feature-dtype", run.dtype, "--json"}
			r := mpirun(t, 3*time.Minute, run.np, bin, args...)
			require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
			l := local(t, append([]string{"--ranks", fmt.Sprint(run.np)}, args...)...)
			require.Equal(t, 0, l.code, "stderr:\n%s", l.stderr)
			points := func(out string) []map[string]any {
				var obj struct {
					Points []map[string]any `json:"points"`
				}
				require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
				for _, p := range obj.Points {
					for _, k := range []string{"fetch_s", "score_s", "fill_s"} {
						delete(p, k) // measured times
					}
				}
				return obj.Points
			}
			a, b := points(r.stdout), points(l.stdout)
			require.Len(t, a, 1+3*3)
			require.Equal(t, b, a)
		})
	}
}

// Evaluation of the validation and test vertices alone (--eval-fanouts
// -1,-1) under mpirun at np 2: the in-process backend's evaluation, and
// layer-wise inference's (the same accuracies), its fetches counted under
// phase eval. (On Cora they are 55% of the vertices, and their
// minibatches fetch more than layer-wise inference's halo: the mode pays
// where they are few.)
func TestTrainEvalFanoutsMPI(t *testing.T) {
	skipUnlessMPI(t)
	const np = 2
	dir := t.TempDir()
	args := []string{"train", "--data", "data/cora", "--epochs", "4", "--eval-every", "2", "--seed", "5"}
	runs := map[string][]string{
		"mpi":       {"--eval-fanouts=-1,-1", "--eval-batch-size", "100"},
		"inproc":    {"--eval-fanouts=-1,-1", "--eval-batch-size", "100"},
		"layerwise": nil,
	}
	fin := map[string]map[string]any{}
	for name, extra := range runs {
		m := filepath.Join(dir, name+".jsonl")
		a := append(append(slices.Clone(args), extra...), "--metrics", m)
		var code int
		var stderr string
		if name == "inproc" {
			l := local(t, append([]string{"--ranks", fmt.Sprint(np)}, a...)...)
			code, stderr = l.code, l.stderr
		} else {
			r := mpirun(t, 3*time.Minute, np, bin, a...)
			code, stderr = r.code, r.stderr
		}
		require.Equal(t, 0, code, "%s: stderr:\n%s", name, stderr)
		_, fin[name] = readMetrics(t, m)
	}
	for _, k := range []string{"best_val_acc", "test_acc", "best_epoch"} {
		require.Equal(t, fin["inproc"][k], fin["mpi"][k], k)
		require.Equal(t, fin["layerwise"][k], fin["mpi"][k], k)
	}
	require.Positive(t, fin["mpi"]["bytes_per_epoch"].(map[string]any)["eval"])
}
