package mpitest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/dl"
	"gnnmpi/nccl"
	"gnnmpi/nccl/nccltest"
)

// fakeNCCL builds the fake NCCL over the MPI under test and returns its
// directory, for nccl.LibDirEnv.
func fakeNCCL(t *testing.T) string {
	t.Helper()
	pkg := "ompi-c"
	if impl.name == "mpich" {
		pkg = "mpich"
	}
	dir, err := nccltest.BuildFake(t.TempDir(), pkg)
	if err != nil {
		t.Skipf("no fake NCCL: %v", err)
	}
	return dir
}

// The nccl backend (over the fake NCCL) passes the conformance suite at
// np 2 and 4, and every rank's byte counts, per phase and kind of call,
// equal those of the MPI backend running the same suite.
func TestSelftestNCCLMatchesMPI(t *testing.T) {
	skipUnlessMPI(t)
	t.Setenv(nccl.LibDirEnv, fakeNCCL(t)) // the ranks inherit mpirun's environment
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			n := mpirun(t, 3*time.Minute, np, bin, "selftest", "--backend", "nccl", "--json")
			require.Equal(t, 0, n.code, "stderr:\n%s", n.stderr)
			fn := decode(t, n)
			require.Equal(t, "nccl", fn.Backend)
			require.Zero(t, fn.Failed)
			require.Contains(t, fn.Cases, "ConcurrentComms")
			require.Len(t, fn.Comm.PerRank, np)

			m := mpirun(t, 3*time.Minute, np, bin, "selftest", "--json")
			require.Equal(t, 0, m.code, "stderr:\n%s", m.stderr)
			fm := decode(t, m)
			require.Equal(t, "mpi", fm.Backend)
			// The SharedSum case sums host memory that the ranks map
			// (MPI-3 shared windows); the nccl backend's ranks share
			// none (collective.ErrNotShared), so the case has nothing to
			// count there and its MPI counts are left out of the match.
			mpiRanks := withoutTime(fm.Comm.PerRank)
			for r := range mpiRanks {
				require.Contains(t, mpiRanks[r], "SharedSum", "rank %d", r)
				require.NotContains(t, fn.Comm.PerRank[r], "SharedSum", "rank %d", r)
				delete(mpiRanks[r], "SharedSum")
			}
			require.Equal(t, mpiRanks, withoutTime(fn.Comm.PerRank))
		})
	}
}

// Without libnccl the nccl backend fails on every rank with an error
// naming the library.
func TestSelftestNCCLMissing(t *testing.T) {
	skipUnlessMPI(t)
	if l, err := dl.Open(nccl.LibNames...); err == nil {
		_ = l.Close()
		t.Skip("a real libnccl is installed")
	}
	t.Setenv(nccl.LibDirEnv, t.TempDir())
	r := mpirun(t, 60*time.Second, 2, bin, "selftest", "--backend", "nccl")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "libnccl.so.2 not found")
}
