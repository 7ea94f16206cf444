package mpitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/gputest"
	"gnnmpi/nccl"
)

// gpucheck at np 2 on the fake CUDA, cuBLAS, cuSPARSE and NCCL passes
// every kernel and library check, every conformance case on NCCL and the
// GPU-vs-CPU training on Cora.
func TestGPUCheckFakeNCCL(t *testing.T) {
	skipUnlessMPI(t)
	gputest.Use(t) // the ranks inherit mpirun's environment
	t.Setenv(nccl.LibDirEnv, fakeNCCL(t))
	t.Setenv("GNNMPI_FAKE_CUDA_DEVICES", "2") // one per rank, as NCCL needs
	report := filepath.Join(t.TempDir(), "gpucheck.json")
	r := mpirun(t, 3*time.Minute, 2, bin, "gpucheck", "--rows", "200", "--width", "40", "--iters", "1", "--report", report,
		"--data", filepath.Join(root, "data", "cora"))
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	b, err := os.ReadFile(report)
	require.NoError(t, err)
	var res struct {
		Ranks  int
		Failed int
		Checks []struct{ Name, Result string }
	}
	require.NoError(t, json.Unmarshal(b, &res))
	require.Equal(t, 2, res.Ranks)
	require.Zero(t, res.Failed)
	ncclCases := 0
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, "nccl/") {
			ncclCases++
			require.Contains(t, []string{"PASS", "SKIP"}, c.Result, c.Name)
		} else {
			require.Equal(t, "PASS", c.Result, c.Name)
		}
	}
	require.Positive(t, ncclCases)
	require.Contains(t, r.stdout, "nccl/AllreduceSum")
}

// gpucheck at np 2 with both ranks on the fake CUDA's one device, which
// NCCL refuses, passes its other checks and skips NCCL with the reason.
func TestGPUCheckFakeNCCLSharedGPU(t *testing.T) {
	skipUnlessMPI(t)
	gputest.Use(t) // the ranks inherit mpirun's environment
	t.Setenv(nccl.LibDirEnv, fakeNCCL(t))
	t.Setenv("GNNMPI_FAKE_CUDA_DEVICES", "1")
	report := filepath.Join(t.TempDir(), "gpucheck.json")
	r := mpirun(t, 3*time.Minute, 2, bin, "gpucheck", "--rows", "200", "--width", "40", "--iters", "1", "--report", report,
		"--data", filepath.Join(root, "data", "cora"))
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	b, err := os.ReadFile(report)
	require.NoError(t, err)
	var res struct {
		Failed int
		Checks []struct{ Name, Result, Detail string }
	}
	require.NoError(t, json.Unmarshal(b, &res))
	require.Zero(t, res.Failed)
	var nccl []string
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, "nccl") {
			nccl = append(nccl, c.Name)
			require.Equal(t, "SKIP", c.Result, c.Name)
			require.Contains(t, c.Detail, "two ranks use the same GPU", c.Name)
		}
	}
	require.Equal(t, []string{"nccl"}, nccl)
}
