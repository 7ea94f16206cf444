package mpitest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/testutil"
)

// Bulk sampling under mpirun, with the graph replicated or distributed in
// 1.5D (c = 1, 2), dumps the same minibatches as one in-process rank.
func TestSampleMPIMatchesLocal(t *testing.T) {
	skipUnlessMPI(t)
	for _, sampler := range []struct{ name, fanouts string }{{"sage", "10,5"}, {"ladies", "64,32"}} {
		args := []string{"sample", "--data", "data/cora", "--sampler", sampler.name, "--fanouts", sampler.fanouts,
			"--batch-size", "32", "--epochs", "2", "--json"}
		ref := t.TempDir()
		r := local(t, append(args, "--dump", ref, "--bulk", "1")...)
		require.Zero(t, r.code, r.stderr)
		want := testutil.ReadDir(t, ref)
		require.Len(t, want, 10) // 140 training vertices: 5 minibatches per epoch
		for _, run := range []struct {
			np   int
			top  string
			c    int
			bulk int
		}{{1, "1.5d", 1, 4}, {2, "replicated", 1, 2}, {2, "1.5d", 2, 1}, {4, "1.5d", 1, 2}, {4, "1.5d", 2, 3}} {
			t.Run(fmt.Sprintf("%s/np=%d/%s/c=%d/bulk=%d", sampler.name, run.np, run.top, run.c, run.bulk), func(t *testing.T) {
				dir := t.TempDir()
				r := mpirun(t, 2*time.Minute, run.np, bin, append(args, "--dump", dir, "--topology", run.top,
					"--c", fmt.Sprint(run.c), "--bulk", fmt.Sprint(run.bulk))...)
				require.Zero(t, r.code, r.stderr)
				require.Equal(t, want, testutil.ReadDir(t, dir))
			})
		}
	}
}
