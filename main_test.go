package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/openblas"
	"gnnmpi/internal/testutil"
)

func gnnmpi(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var so, se testutil.LockedBuffer
	code = run(args, &so, &se)
	return so.String(), se.String(), code
}

func infoJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	so, se, code := gnnmpi(t, append(args, "--json")...)
	require.Equal(t, 0, code, se)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(so), &out), so)
	return out
}

func TestHelp(t *testing.T) {
	so, _, code := gnnmpi(t, "help")
	require.Equal(t, 0, code)
	for _, c := range []string{"info", "gen", "convert", "partition", "selftest"} {
		require.Contains(t, so, c)
	}
	_, se, code := gnnmpi(t, "info", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, se, "-data")
	_, se, code = gnnmpi(t, "nosuch")
	require.Equal(t, 2, code)
	require.Contains(t, se, `unknown command "nosuch"`)
}

// Cora loaded on 1 and 3 in-process ranks gives the same statistics.
func TestInfoCora(t *testing.T) {
	one := infoJSON(t, "info", "--data", "data/cora")["dataset"].(map[string]any)
	three := infoJSON(t, "--ranks", "3", "info", "--data", "data/cora")["dataset"].(map[string]any)
	for _, k := range []string{"nodes", "edges", "features", "classes", "max_degree", "min_degree", "isolated", "splits"} {
		require.Equal(t, one[k], three[k], k)
	}
	require.EqualValues(t, 2708, three["nodes"])
	require.EqualValues(t, 10556, three["edges"])
	require.Equal(t, []any{903.0, 903.0, 902.0}, three["rows_per_rank"])
}

// gen → convert → info: the generated graph reads the same from csv.gz and
// from the binary format, on any number of ranks.
func TestGenConvertInfo(t *testing.T) {
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "rmat"), filepath.Join(dir, "rmat.gnn")
	_, se, code := gnnmpi(t, "--ranks", "2", "gen", "rmat", "--scale", "10", "--edgefactor", "8", "--out", src)
	require.Equal(t, 0, code, se)
	_, se, code = gnnmpi(t, "convert", "--data", src, "--out", bin)
	require.Equal(t, 0, code, se)
	a := infoJSON(t, "info", "--data", src)["dataset"].(map[string]any)
	b := infoJSON(t, "--ranks", "3", "info", "--data", bin)["dataset"].(map[string]any)
	require.EqualValues(t, 1024, a["nodes"])
	require.NotZero(t, a["edges"])
	for _, k := range []string{"nodes", "edges", "max_degree", "isolated", "self_loops"} {
		require.Equal(t, a[k], b[k], k)
	}
	require.EqualValues(t, 0, a["self_loops"])

	// The SBM carries features, labels and a split through the binary format.
	sbm := filepath.Join(dir, "sbm.gnn")
	_, se, code = gnnmpi(t, "gen", "sbm", "--nodes", "2000", "--classes", "4", "--features", "8", "--out", sbm)
	require.Equal(t, 0, code, se)
	s := infoJSON(t, "--ranks", "2", "info", "--data", sbm)["dataset"].(map[string]any)
	require.EqualValues(t, 2000, s["nodes"])
	require.EqualValues(t, 8, s["features"])
	require.EqualValues(t, 4, s["classes"])
	require.NotEmpty(t, s["splits"])
}

// A METIS partition book drives the distributed load.
func TestPartitionThenInfo(t *testing.T) {
	book := filepath.Join(t.TempDir(), "cora.book")
	so, se, code := gnnmpi(t, "partition", "--data", "data/cora", "--parts", "4", "--method", "metis", "--book", book)
	require.Equal(t, 0, code, se)
	require.Contains(t, so, "edge cut")
	d := infoJSON(t, "--ranks", "4", "info", "--data", "data/cora", "--partition", book)["dataset"].(map[string]any)
	require.EqualValues(t, 10556, d["edges"])
	sum := 0.0
	for _, r := range d["rows_per_rank"].([]any) {
		sum += r.(float64)
	}
	require.EqualValues(t, 2708, sum)
	// A book for another number of ranks is refused.
	_, se, code = gnnmpi(t, "--ranks", "2", "info", "--data", "data/cora", "--partition", book)
	require.Equal(t, 1, code)
	require.Contains(t, se, "4 parts for 2 ranks")
}

func writeGz(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// Each kind of malformed input fails every rank with an error naming the
// file and line.
func TestBadInputNamesFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"id out of range", map[string]string{"raw/edge.csv.gz": "0,1\n1,0\n2,7\n"}, "raw/edge.csv.gz:3"},
		{"malformed edge", map[string]string{"raw/edge.csv.gz": "0,1\n1;0\n"}, "raw/edge.csv.gz:2"},
		{"ragged features", map[string]string{"raw/node-feat.csv.gz": "1,0\n0,1\n1\n"}, "raw/node-feat.csv.gz:3"},
		{"label count", map[string]string{"raw/node-label.csv.gz": "0\n1\n"}, "raw/node-label.csv.gz"},
		{"label near 2^31", map[string]string{"raw/node-label.csv.gz": "0\n2147483646\n0\n"}, "raw/node-label.csv.gz:2: label 2147483646 is implausibly large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"raw/num-node-list.csv.gz": "3\n",
				"raw/edge.csv.gz":          "0,1\n1,0\n",
				"raw/node-feat.csv.gz":     "1,0\n0,1\n1,1\n",
				"raw/node-label.csv.gz":    "0\n1\n0\n",
			}
			for k, v := range tc.files {
				files[k] = v
			}
			for k, v := range files {
				writeGz(t, filepath.Join(dir, k), v)
			}
			_, se, code := gnnmpi(t, "--ranks", "2", "info", "--data", dir)
			require.Equal(t, 1, code)
			require.Contains(t, se, tc.want)
		})
	}
	_, se, code := gnnmpi(t, "info", "--data", "no/such/dir")
	require.Equal(t, 1, code)
	require.Contains(t, se, "no/such/dir")
}

func TestInterleave(t *testing.T) {
	_, se, code := gnnmpi(t, "gen", "rmat", "--scale")
	require.Equal(t, 2, code, se)
	_, se, code = gnnmpi(t, "gen", "--out")
	require.Equal(t, 2, code, se)
	_, se, code = gnnmpi(t, "gen", "tree", "--out", filepath.Join(t.TempDir(), "x"))
	require.Equal(t, 1, code)
	require.Contains(t, se, "want one generator")
}

// --global-batch-size fixes the seeds per step over all ranks, so 1 and 2
// ranks take the same number of steps; it excludes --batch-size.
func TestTrainGlobalBatch(t *testing.T) {
	steps := func(ranks string) (batches, perRank float64) {
		m := filepath.Join(t.TempDir(), "m.jsonl")
		_, se, code := gnnmpi(t, "--ranks", ranks, "--metrics", m, "train", "--data", "data/cora",
			"--global-batch-size", "70", "--shuffle", "global", "--epochs", "1", "--eval-every", "0", "--hidden", "8")
		require.Equal(t, 0, code, se)
		raw, err := os.ReadFile(m)
		require.NoError(t, err)
		lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
		require.Len(t, lines, 2)
		var ep, fin map[string]any
		require.NoError(t, json.Unmarshal(lines[0], &ep))
		require.NoError(t, json.Unmarshal(lines[1], &fin))
		return ep["batches"].(float64), fin["config"].(map[string]any)["batch_size"].(float64)
	}
	b1, s1 := steps("1")
	b2, s2 := steps("2")
	require.Equal(t, 2.0, b1) // 140 training vertices, 70 per step
	require.Equal(t, b1, b2)
	require.Equal(t, []float64{70, 35}, []float64{s1, s2})
	_, se, code := gnnmpi(t, "train", "--global-batch-size", "8", "--batch-size", "8")
	require.NotEqual(t, 0, code)
	require.Contains(t, se, "not both")
}

// gen writes a Matrix Market adjacency for a .mtx path, and spgemm reads it.
func TestGenMatrixMarket(t *testing.T) {
	mtx := filepath.Join(t.TempDir(), "rmat.mtx")
	_, se, code := gnnmpi(t, "gen", "rmat", "--scale", "8", "--edgefactor", "4", "--out", mtx)
	require.Equal(t, 0, code, se)
	raw, err := os.ReadFile(mtx)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(raw, []byte("%%MatrixMarket matrix coordinate pattern general\n256 256 ")), string(raw[:80]))
	out := infoJSON(t, "spgemm", "--a", mtx, "--square", "--algo", "local", "--verify")["spgemm"].(map[string]any)
	require.EqualValues(t, 256, out["n"])
	require.Greater(t, out["nnz_c"].(float64), out["nnz_a"].(float64))
}

// --overlap (default on) and --overlap=false train the same curve on 2
// in-process ranks; every epoch record has wait_s, and the final config
// says which ran. --overlap is a minibatch flag, and --mpi-thread takes
// multiple or funneled.
func TestTrainOverlapFlag(t *testing.T) {
	run := func(overlap string) (losses []float64, waits []float64, cfg map[string]any) {
		m := filepath.Join(t.TempDir(), "m.jsonl")
		_, se, code := gnnmpi(t, "--ranks", "2", "--metrics", m, "train", "--data", "data/cora",
			"--epochs", "2", "--eval-every", "0", "--hidden", "8", "--overlap="+overlap)
		require.Equal(t, 0, code, se)
		raw, err := os.ReadFile(m)
		require.NoError(t, err)
		lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
		require.Len(t, lines, 3)
		for _, l := range lines[:2] {
			var ep map[string]any
			require.NoError(t, json.Unmarshal(l, &ep))
			losses = append(losses, ep["loss"].(float64))
			waits = append(waits, ep["wait_s"].(float64))
			require.Equal(t, ep["wait_s"], ep["phase_s"].(map[string]any)["wait"])
		}
		var fin map[string]any
		require.NoError(t, json.Unmarshal(lines[2], &fin))
		return losses, waits, fin["config"].(map[string]any)
	}
	on, waitOn, cfgOn := run("true")
	off, waitOff, cfgOff := run("false")
	require.Equal(t, off, on)
	require.Equal(t, true, cfgOn["overlap"])
	require.Equal(t, false, cfgOff["overlap"])
	for i := range waitOff {
		require.Positive(t, waitOff[i], "without overlap the compute waits for every minibatch")
		require.GreaterOrEqual(t, waitOn[i], 0.0)
	}
	_, se, code := gnnmpi(t, "train", "--mode", "graph", "--overlap=false")
	require.NotEqual(t, 0, code)
	require.Contains(t, se, "--overlap applies to minibatch training")
	_, se, code = gnnmpi(t, "--mpi-thread", "serialized", "info")
	require.Equal(t, 2, code)
	require.Contains(t, se, `unknown threading "serialized"`)
}

// --blas-threads sets OpenBLAS's threads; without it the run takes
// $OPENBLAS_NUM_THREADS when set and 1 otherwise.
func TestSetBLASThreads(t *testing.T) {
	if !openblas.Available {
		t.Skip("built without OpenBLAS")
	}
	defer openblas.SetThreads(openblas.Threads())
	none := func(string) string { return "" }
	setBLASThreads(2, none)
	require.Equal(t, min(2, runtime.NumCPU()), openblas.Threads(), "OpenBLAS caps the count at the cores")
	setBLASThreads(0, none)
	require.Equal(t, 1, openblas.Threads())
	openblas.SetThreads(2)
	want := openblas.Threads()
	setBLASThreads(0, func(k string) string {
		if k == "OPENBLAS_NUM_THREADS" {
			return "2"
		}
		return ""
	})
	require.Equal(t, want, openblas.Threads(), "the environment's setting stands")
}

// setMemoryLimit leaves an explicit GOMEMLIMIT alone and otherwise sets
// the collector's soft limit below what the process may allocate.
func TestSetMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	debug.SetMemoryLimit(math.MaxInt64)
	setMemoryLimit(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("GOMEMLIMIT set: limit changed to %d", got)
	}
	setMemoryLimit(func(string) string { return "" })
	b := memlimit.Available()
	if got := debug.SetMemoryLimit(-1); got <= 0 || got > b.Bytes {
		t.Fatalf("limit %d, want within (0, %d] (%s)", got, b.Bytes, b)
	}
}

// --memprofile writes a heap profile pprof reads.
func TestMemProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	_, se, code := gnnmpi(t, "--memprofile", path, "info", "--data", "data/cora")
	require.Equal(t, 0, code, se)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r *gzip.Reader
	r, err = gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err, "a pprof profile is gzipped protobuf")
	require.NoError(t, r.Close())
}

// srun without MPI: refused before any flag is read, with the fix named.
func TestRefusesSrunWithoutMPI(t *testing.T) {
	for _, k := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"} {
		t.Setenv(k, "")
	}
	t.Setenv("SLURM_STEP_NUM_TASKS", "4")
	t.Setenv("SLURM_PROCID", "3")
	so, se, code := gnnmpi(t, "--ranks", "2", "info", "--data", "data/cora")
	require.Equal(t, 2, code)
	require.Empty(t, so)
	require.Equal(t, 1, strings.Count(se, "\n"), se)
	require.Contains(t, se, "gnnmpi: srun started 4 tasks without MPI")
	require.Contains(t, se, "srun --mpi=pmix")

	t.Setenv("SLURM_STEP_NUM_TASKS", "1")
	t.Setenv("SLURM_PROCID", "0")
	_, se, code = gnnmpi(t, "info", "--data", "data/cora")
	require.Equal(t, 0, code, se)
}

func TestRankPath(t *testing.T) {
	for _, k := range []string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"} {
		t.Setenv(k, "")
	}
	require.Equal(t, "cpu.prof", rankPath("cpu.prof"))
	t.Setenv("PMI_RANK", "2")
	require.Equal(t, "cpu.prof.2", rankPath("cpu.prof"))
	t.Setenv("PMIX_RANK", "3") // srun --mpi=pmix
	require.Equal(t, "cpu.prof.3", rankPath("cpu.prof"))
	t.Setenv("OMPI_COMM_WORLD_RANK", "1")
	require.Equal(t, "cpu.prof.1", rankPath("cpu.prof"))
}

// In-process ranks end a job whose rank hangs within seconds of
// --comm-timeout, and print the cause of a failure, not the error of a rank
// that only learnt of it: as under MPI.
func TestInprocPrintsCause(t *testing.T) {
	ck := t.TempDir()
	_, se, code := gnnmpi(t, "--ranks", "4", "train", "--data", "data/cora", "--epochs", "1", "--checkpoint", ck)
	require.Equal(t, 0, code, se)
	f, err := os.OpenFile(filepath.Join(ck, "checkpoint.bin"), os.O_RDWR, 0)
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xff, 0xfe, 0xfd, 0xfc}, fi.Size()/2)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"hung rank", []string{"--ranks", "4", "--comm-timeout", "300ms", "selftest", "--fail-rank", "2", "--fail-mode", "hang"},
			[]string{"blocked for 300ms (past the timeout 300ms; phase ", "rank 2: running", "rank 2 still running"}},
		{"too many chunks", []string{"--ranks", "4", "train", "--data", "data/cora", "--mode", "pipe", "--chunks", "100000"},
			[]string{"fewer than 100000 chunks"}},
		{"corrupt checkpoint", []string{"--ranks", "4", "train", "--data", "data/cora", "--epochs", "2", "--checkpoint", ck, "--resume"},
			[]string{"checksum mismatch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				se   string
				code int
			}
			res := make(chan result, 1)
			go func() {
				_, se, code := gnnmpi(t, tc.args...)
				res <- result{se, code}
			}()
			select {
			case r := <-res:
				require.Equal(t, 1, r.code, r.se)
				for _, w := range tc.want {
					require.Contains(t, r.se, w)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the job still runs after 30 s")
			}
		})
	}
}

// Values that used to be accepted silently are refused with a clear error.
func TestRefusesBadCounts(t *testing.T) {
	book := filepath.Join(t.TempDir(), "b.book")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--ranks", "0", "info"}, 2, "--ranks 0: run at least 1 rank"},
		{[]string{"--ranks", "-1", "info"}, 2, "--ranks -1: run at least 1 rank"},
		{[]string{"--comm-timeout", "-1s", "info"}, 2, "--comm-timeout -1s: want a positive duration"},
		{[]string{"train", "--data", "data/cora", "--fanouts", "10,-2"}, 1, "fanout -2: give a positive fanout, or -1"},
		{[]string{"train", "--data", "data/cora", "--epochs", "0"}, 1, "0 epochs: train at least 1"},
		{[]string{"partition", "--data", "data/cora", "--parts", "0", "--book", book}, 1, "--parts 0: want at least 1 part"},
		{[]string{"partition", "--data", "data/cora", "--parts", "5000", "--book", book}, 1, "--parts 5000 is more than the 2708 vertices"},
	} {
		_, se, code := gnnmpi(t, tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, se)
		require.Contains(t, se, tc.want, tc.args)
	}
	require.NoFileExists(t, book)
}
