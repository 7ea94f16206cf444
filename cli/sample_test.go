package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/testutil"
	"gnnmpi/metrics"
)

func sampleJSON(t *testing.T, p int, args ...string) metrics.Sample {
	t.Helper()
	out, err := runCmd(t, p, "sample", args...)
	require.NoError(t, err)
	var obj struct {
		Sample metrics.Sample `json:"sample"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
	return obj.Sample
}

// The minibatches (dumped as text) are the same whatever the rank count,
// the bulk size, the topology and its replication factor, for both
// samplers; the report counts them all.
func TestSampleCommand(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	for _, sampler := range []struct{ name, fanouts string }{{"sage", "10,5"}, {"ladies", "64,64"}} {
		var want map[string]string
		for _, run := range []struct {
			p, bulk int
			top     string
			c       int
		}{{1, 1, "replicated", 1}, {3, 1, "replicated", 1}, {2, 4, "replicated", 1}, {4, 16, "replicated", 1},
			{1, 1, "1.5d", 1}, {2, 2, "1.5d", 2}, {4, 3, "1.5d", 1}, {4, 1, "1.5d", 2}, {4, 4, "1.5d", 4}} {
			dir := t.TempDir()
			res := sampleJSON(t, run.p, "--data", data, "--sampler", sampler.name, "--fanouts", sampler.fanouts,
				"--batch-size", "16", "--bulk", strconv.Itoa(run.bulk), "--epochs", "2", "--dump", dir,
				"--topology", run.top, "--c", strconv.Itoa(run.c))
			require.Equal(t, run.top, string(res.Topology))
			// Cora's split trains on 140 vertices: 9 minibatches per epoch.
			require.Equal(t, int64(18), res.Minibatches)
			require.Positive(t, res.Edges)
			require.Positive(t, res.EdgesPerS)
			require.Positive(t, res.MinibatchesPerS)
			if run.top == "replicated" {
				require.Zero(t, res.Bytes["sample"]+res.Bytes["spgemm"], "replicated topology samples without communication")
			} else if run.p > 1 {
				require.Positive(t, res.Bytes["spgemm"], "1.5d multiplies across ranks")
			}
			got := testutil.ReadDir(t, dir)
			require.Len(t, got, 18)
			if want == nil {
				want = got
				continue
			}
			require.Equal(t, want, got, "%s %+v", sampler.name, run)
		}
	}
}

func TestSampleErrors(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--data", data, "--bulk", "0"}, "--bulk 0"},
		{[]string{"--data", data, "--sampler", "fastgcn"}, "unknown sampler"},
		// The fanouts are checked as train checks them.
		{[]string{"--data", data, "--sampler", "ladies", "--fanouts", "0"}, "sample: fanout 0 samples nothing"},
		{[]string{"--data", data, "--sampler", "ladies", "--fanouts", "10,-1"}, "sample: ladies samples a fixed number of vertices per layer; fanout -1 must be positive"},
		{[]string{"--data", data, "--fanouts", "10,-2"}, "sample: fanout -2: give a positive fanout, or -1 (only -1) for all neighbours"},
		{[]string{"--data", data, "--sampler", "plain", "--fanouts", "-3,5"}, "sample: fanout -3"},
		{[]string{"--data", data, "--fanouts", "x"}, "--fanouts"},
		{[]string{"--data", data, "--topology", "2d"}, "--topology"},
		{[]string{"--data", data, "--topology", "1.5d", "--c", "3"}, "--c 3"},
		{[]string{"--data", filepath.Join(t.TempDir(), "none")}, "none"},
	} {
		_, err := runCmd(t, 2, "sample", tc.args...)
		require.ErrorContains(t, err, tc.msg)
	}
}

// On a partitioned dataset the 1.5D and 2D topologies read only their grid
// row's parts, and sample exactly the minibatches of the dataset held
// whole (replicated); the dumps name the original ids, so Cora's seeds are
// its planetoid training vertices 0…139.
func TestSamplePartitioned(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	parts := filepath.Join(t.TempDir(), "cora.parts")
	_, err := runCmd(t, 1, "partition", "--data", data, "--parts", "4", "--method", "metis", "--out", parts)
	require.NoError(t, err)
	for _, sampler := range []struct{ name, fanouts string }{{"sage", "10,5"}, {"ladies", "64,64"}} {
		var want map[string]string
		for _, run := range []struct {
			p   int
			top string
			c   int
		}{{1, "replicated", 1}, {4, "1.5d", 1}, {4, "1.5d", 2}, {2, "1.5d", 1}, {4, "2d", 1}, {1, "2d", 1}} {
			dir := t.TempDir()
			res := sampleJSON(t, run.p, "--data", parts, "--sampler", sampler.name, "--fanouts", sampler.fanouts,
				"--batch-size", "16", "--bulk", "2", "--dump", dir, "--topology", run.top, "--c", strconv.Itoa(run.c))
			require.Equal(t, int64(9), res.Minibatches)
			require.Len(t, res.PeakRSS, run.p)
			got := testutil.ReadDir(t, dir)
			if want == nil {
				want = got
				for _, text := range got {
					var seeds []int
					for _, f := range strings.Fields(strings.Split(text, "\n")[1])[2:] {
						v, err := strconv.Atoi(f)
						require.NoError(t, err)
						seeds = append(seeds, v)
					}
					require.NotEmpty(t, seeds)
					for _, v := range seeds {
						require.Less(t, v, 140, "a seed named by its original id")
					}
				}
				continue
			}
			require.Equal(t, want, got, "%s %+v", sampler.name, run)
		}
	}
	_, err = runCmd(t, 3, "sample", "--data", parts, "--topology", "1.5d")
	require.ErrorContains(t, err, "cannot be spread over 3 ranks")
	_, err = runCmd(t, 2, "sample", "--data", parts, "--topology", "2d")
	require.ErrorContains(t, err, "square number of ranks")
}
