package mpitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The memory check under a real per-rank cgroup cap (bench/memcap.sh,
// which needs a writable memory cgroup: root here): a model that cannot
// fit 1 GiB ends with gnnmpi's own "out of memory" on both ranks, never a
// Go runtime crash nor a kernel kill; Cora's default run fits and exits 0.
// bench/memprobe.sh runs the other probes.
func TestMemoryCapProbe(t *testing.T) {
	memcap := memcapOrSkip(t)
	limit := strconv.Itoa(1 << 30)
	r := mpirun(t, 2*time.Minute, 2, memcap, limit, bin, "train", "--data", "data/cora", "--model", "sage", "--hidden", "100000", "--epochs", "1")
	require.NotEqual(t, 0, r.code, "stderr:\n%s", r.stderr)
	require.NotEqual(t, 137, r.code, "killed by the kernel:\n%s", r.stderr)
	require.NotContains(t, r.stderr, "fatal error")
	for rank := range 2 {
		require.Contains(t, r.stderr, "gnnmpi: rank "+strconv.Itoa(rank)+": train: rank "+strconv.Itoa(rank)+": out of memory: training needs", "stderr:\n%s", r.stderr)
	}
	require.Contains(t, r.stderr, "cgroup", "the cap is the limit named")

	r = mpirun(t, 2*time.Minute, 2, memcap, limit, bin, "train", "--data", "data/cora", "--model", "sage", "--epochs", "1")
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	require.Contains(t, r.stderr, "memory check: rank 0 holds")
}

// TestMetisMemoryCap checks that METIS on rank 0 that would not fit the
// rank's cap is refused with gnnmpi's own message before it runs (a
// 150,000-vertex SBM: METIS peaks at about 316 MB on rank 0, training
// with a random partition at about 227 MB), not killed by the kernel, and
// that the same job with --partition random runs under that cap.
func TestMetisMemoryCap(t *testing.T) {
	memcap := memcapOrSkip(t)
	data := filepath.Join(t.TempDir(), "sbm.gnn")
	out, err := exec.Command(bin, "gen", "sbm", "--nodes", "150000", "--degree", "20", "--features", "8", "--out", data).CombinedOutput()
	require.NoError(t, err, "%s", out)
	limit := strconv.Itoa(280 << 20)
	args := []string{limit, bin, "train", "--data", data, "--epochs", "1", "--eval-every", "0"}
	r := mpirun(t, 2*time.Minute, 2, memcap, args...)
	require.NotEqual(t, 0, r.code, "stderr:\n%s", r.stderr)
	require.NotEqual(t, 137, r.code, "killed by the kernel:\n%s", r.stderr)
	require.NotContains(t, r.stderr, "fatal error")
	require.Contains(t, r.stderr, "gnnmpi: rank 0: train: rank 0: out of memory: METIS partitioning of the whole graph needs", "stderr:\n%s", r.stderr)
	require.Contains(t, r.stderr, "cgroup", "the cap is the limit named")

	r = mpirun(t, 2*time.Minute, 2, memcap, append(args, "--partition", "random")...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
}

// memcapOrSkip returns bench/memcap.sh's path, or skips t without MPI,
// under another MPI than Open MPI (the script reads OMPI_COMM_WORLD_RANK)
// or without a writable memory cgroup (root here).
func memcapOrSkip(t *testing.T) string {
	t.Helper()
	skipUnlessMPI(t)
	needOpenMPI(t, "the probe reads OMPI_COMM_WORLD_RANK in bench/memcap.sh")
	memcap := filepath.Join(root, "bench", "memcap.sh")
	if out, err := exec.Command(memcap, strconv.Itoa(1<<30), "true").CombinedOutput(); err != nil || os.Geteuid() != 0 {
		t.Skipf("no writable memory cgroup (bench/memcap.sh: %v %s)", err, out)
	}
	return memcap
}
