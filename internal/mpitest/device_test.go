package mpitest

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gputest"
)

// `train --device cuda` under mpirun at np 2 (both ranks on the one fake
// device) follows the CPU run's loss curve; without the CUDA libraries
// every rank exits non-zero with an error naming libcuda.
func TestTrainDeviceMPI(t *testing.T) {
	skipUnlessMPI(t)
	fakes := t.TempDir()
	if err := gputest.Build(fakes); errors.Is(err, gputest.ErrNoCompiler) || errors.Is(err, gputest.ErrNoOpenBLAS) {
		t.Skip(err)
	} else {
		require.NoError(t, err)
	}
	const np = 2
	dir := t.TempDir()
	args := []string{"train", "--data", "data/cora", "--epochs", "3"}
	mc, mg := filepath.Join(dir, "cpu.jsonl"), filepath.Join(dir, "cuda.jsonl")
	r := mpirun(t, 3*time.Minute, np, bin, append(args, "--metrics", mc)...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	t.Setenv("GNNMPI_CUDA_LIBDIR", fakes) // the ranks inherit mpirun's environment
	r = mpirun(t, 5*time.Minute, np, bin, append(args, "--device", "cuda", "--metrics", mg)...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	a, _ := readMetrics(t, mc)
	b, fb := readMetrics(t, mg)
	require.Len(t, a, 3)
	require.Len(t, b, 3)
	for i := range a {
		require.InEpsilon(t, a[i].Loss, b[i].Loss, 1e-4, "epoch %d", i+1)
	}
	require.Equal(t, "cuda", fb["config"].(map[string]any)["device"])

	t.Setenv("GNNMPI_CUDA_LIBDIR", t.TempDir())
	if _, err := cuda.DeviceCount(); err == nil {
		t.Skip("a real libcuda is installed: cannot check the error without it")
	}
	r = mpirun(t, time.Minute, np, bin, append(args, "--device", "cuda")...)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "libcuda")
	require.Contains(t, r.stderr, "--device cuda")
}
