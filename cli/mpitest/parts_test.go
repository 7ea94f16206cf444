package mpitest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// partsDir writes Cora partitioned into 12 parts (a multiple of 1 to 4
// ranks) and returns the directory.
func partsDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cora12")
	r := local(t, "partition", "--data", "data/cora", "--parts", "12", "--method", "metis", "--out", dir)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	return dir
}

// Under mpirun, training from a partitioned dataset, each rank holding
// only its part's rows, follows the loss curve of the same dataset with a
// replicated topology, for SAGE and LADIES over the 1.5D and 2D
// topologies, on 1 to 4 ranks; and the in-process backend's.
func TestPartitionedMPIMatchesReplicated(t *testing.T) {
	skipUnlessMPI(t)
	dir := partsDir(t)
	type run struct {
		np   int
		args []string
	}
	var runs []run
	for np := 1; np <= 4; np++ {
		runs = append(runs, run{np, []string{"--topology", "1.5d", "--c", "1"}})
		if np == 4 {
			runs = append(runs, run{np, []string{"--topology", "2d", "--replication", "2"}})
		}
	}
	for _, kind := range [][]string{{"--model", "sage"}, {"--model", "gcn", "--sampler", "ladies", "--fanouts", "256,256"}} {
		for _, rn := range runs {
			t.Run(fmt.Sprintf("%s/np=%d/%s", kind[len(kind)-1], rn.np, rn.args[1]), func(t *testing.T) {
				base := append([]string{"train", "--data", dir, "--epochs", "3", "--seed", "3"}, kind...)
				m := filepath.Join(t.TempDir(), "m.jsonl")
				r := mpirun(t, 3*time.Minute, rn.np, bin, append(append(base, rn.args...), "--metrics", m+".part")...)
				require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
				repl := []string{"--topology", "replicated"}
				if rn.args[1] == "2d" {
					repl = append(repl, "--replication", "2")
				}
				r = mpirun(t, 3*time.Minute, rn.np, bin, append(append(base, repl...), "--metrics", m+".repl")...)
				require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
				l := local(t, append([]string{"--ranks", fmt.Sprint(rn.np)}, append(append(base, rn.args...), "--metrics", m+".local")...)...)
				require.Equal(t, 0, l.code, "stderr:\n%s", l.stderr)
				a, fa := readMetrics(t, m+".part")
				b, _ := readMetrics(t, m+".repl")
				c, _ := readMetrics(t, m+".local")
				require.Len(t, a, 3)
				for i := range a {
					// Gradient sums inside MPI_Allreduce may differ in order
					// between runs of different communicators' layouts.
					require.InEpsilon(t, b[i].Loss, a[i].Loss, 1e-4, "epoch %d against replicated", i+1)
					require.InEpsilon(t, c[i].Loss, a[i].Loss, 1e-4, "epoch %d against in-process", i+1)
				}
				require.Contains(t, fa, "state_bytes")
			})
		}
	}
}

// A damaged part file or a rank count the parts cannot be spread over
// ends the job on every rank with an error naming the file.
func TestPartitionedMPIBadParts(t *testing.T) {
	skipUnlessMPI(t)
	dir := partsDir(t)
	r := mpirun(t, time.Minute, 5, bin, "train", "--data", dir, "--topology", "1.5d", "--epochs", "1")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "manifest.json")
	require.Contains(t, r.stderr, "cannot be spread over 5 ranks")

	part := filepath.Join(dir, "part-00007.gnn")
	st, err := os.Stat(part)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(part, st.Size()-100))
	r = mpirun(t, time.Minute, 4, bin, "train", "--data", dir, "--topology", "1.5d", "--epochs", "1")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "part-00007.gnn")
	require.Less(t, r.took, 30*time.Second, "the job ends at once, not at a timeout")
	require.NoError(t, os.Remove(part))
	r = mpirun(t, time.Minute, 2, bin, "info", "--data", dir)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "part-00007.gnn")
}
