package cli

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/gpucheck"
	"gnnmpi/gpu/gputest"
	"gnnmpi/gpu/kernels"
	"gnnmpi/internal/dl"
)

const gpucheckChild = "GNNMPI_GPUCHECK_CHILD"

// gpucheckInChild runs test run of this binary again with env added (the
// CUDA driver is loaded once per process, so each library directory gets
// its own process) and returns its output.
func gpucheckInChild(t *testing.T, run string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, gpucheckChild+"=1")...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

// On the fake CUDA, cuBLAS and cuSPARSE, gpucheck passes every kernel and
// library check and the GPU-vs-CPU training on Cora on 1 and 2 in-process
// ranks, skips NCCL (no MPI), and writes a report with every row; the
// benchmark's numbers are there (their values mean nothing on the fakes).
func TestGPUCheckFake(t *testing.T) {
	if os.Getenv(gpucheckChild) == "" {
		dir := t.TempDir()
		err := gputest.Build(dir)
		if errors.Is(err, gputest.ErrNoCompiler) || errors.Is(err, gputest.ErrNoOpenBLAS) {
			t.Skip(err)
		}
		require.NoError(t, err)
		t.Log(gpucheckInChild(t, "TestGPUCheckFake", "GNNMPI_CUDA_LIBDIR="+dir))
		return
	}
	for _, p := range []int{1, 2} {
		report := filepath.Join(t.TempDir(), "gpucheck.json")
		out, err := runCmd(t, p, "gpucheck", "--rows", "300", "--width", "45", "--iters", "1", "--report", report,
			"--data", filepath.Join("..", "data", "cora"))
		require.NoError(t, err, out)
		b, err := os.ReadFile(report)
		require.NoError(t, err)
		var res gpucheck.Report
		require.NoError(t, json.Unmarshal(b, &res))
		require.Equal(t, "gnnmpi fake device", res.Device)
		require.Equal(t, p, res.Ranks)
		byName := map[string]gpucheck.Row{}
		for _, c := range res.Checks {
			byName[c.Name] = c
		}
		for _, k := range kernels.Names {
			require.Equal(t, gpucheck.Pass, byName["kernel/"+k].Result, "kernel %s: %+v", k, byName["kernel/"+k])
		}
		for _, name := range []string{"cublas/sgemm", "cusparse/spmm", "bench/zero-copy-gather", "train/gpu-vs-cpu"} {
			require.Equal(t, gpucheck.Pass, byName[name].Result, "%s: %+v", name, byName[name])
		}
		require.Equal(t, gpucheck.Skip, byName["nccl"].Result)
		require.Equal(t, float64(3), byName["train/gpu-vs-cpu"].Numbers["epochs"])
		bench := byName["bench/zero-copy-gather"].Numbers
		for _, k := range []string{"rows", "width", "bytes", "zero_copy_ms", "cpu_gather_copy_ms", "zero_copy_gbps", "cpu_gather_copy_gbps", "link_gbps"} {
			require.Contains(t, bench, k)
		}
		require.Equal(t, float64(300*45*4), bench["bytes"])
		require.Equal(t, len(kernels.Names)+5, len(res.Checks))
		require.Equal(t, len(res.Checks)-1, res.Passed)
		require.Zero(t, res.Failed)
		require.Equal(t, 1, res.Skipped)
		require.Contains(t, out, `"gpucheck"`) // the --json metrics object carries the report
		require.Contains(t, byName["bench/zero-copy-gather"].Summary(), "link bandwidth unknown")
	}
}

// Without a CUDA driver gpucheck fails with one line naming the library.
func TestGPUCheckNoDriver(t *testing.T) {
	if os.Getenv(gpucheckChild) == "" {
		if l, err := dl.Open("libcuda.so.1"); err == nil {
			l.Close()
			t.Skip("this machine has libcuda.so.1")
		}
		gpucheckInChild(t, "TestGPUCheckNoDriver", "GNNMPI_CUDA_LIBDIR="+t.TempDir())
		return
	}
	_, err := runCmd(t, 2, "gpucheck")
	require.Error(t, err)
	require.Contains(t, err.Error(), "libcuda.so.1")
	require.NotContains(t, strings.TrimSpace(err.Error()), "\n")
}
