package cli

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/metrics"
	"gnnmpi/perfmodel"
)

// predict end to end on in-process runs: calibrate, fit on p = 1, 2, 4,
// predict measured and extrapolated p, validate, and name the file of
// every bad input.
func TestPredictCommand(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "data", "cora")
	trainRun := func(p int, name string, args ...string) string {
		out, err := runCmd(t, p, "train", append([]string{"--data", data, "--epochs", "2", "--eval-every", "0"}, args...)...)
		require.NoError(t, err)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return path
	}
	r1, r2, r4 := trainRun(1, "r1.json"), trainRun(2, "r2.json"), trainRun(4, "r4.json")
	other := trainRun(2, "other.json", "--fanouts", "5,5")

	netPath := filepath.Join(dir, "net.json")
	_, err := runCmd(t, 2, "predict", "--calibrate", "--out", netPath, "--max-bytes", "4096", "--min-time", "1ms", "--min-reps", "2")
	require.NoError(t, err)
	net, err := loadNetwork("net", netPath)
	require.NoError(t, err)
	require.Equal(t, "calibration", net.Source)
	require.NotEmpty(t, net.Samples)
	for _, k := range perfmodel.Kinds {
		require.Positive(t, net.Links[k].Samples, k)
	}

	csvPath := filepath.Join(dir, "p.csv")
	fit := strings.Join([]string{r1, r2, r4}, ",")
	_, err = runCmd(t, 1, "predict", "--net", netPath, "--fit", fit, "--np", "2,8", "--validate", r4, "--csv", csvPath)
	require.NoError(t, err)
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	require.NoError(t, err)
	// The columns of docs/training.md.
	require.Equal(t, []string{"p", "predicted_epoch_s", "measured_epoch_s", "rel_error", "loop_s", "loader_s",
		"sample_comm_s", "sample_compute_s", "fetch_comm_s", "fetch_compute_s", "compute_comm_s", "compute_compute_s",
		"grad_comm_s", "grad_compute_s", "source"}, recs[0])
	require.Len(t, recs, 4)
	require.Equal(t, "4", recs[1][0])
	require.NotEmpty(t, recs[1][2], "validation row has a measurement")
	require.Contains(t, recs[2][len(recs[2])-1], "measured")
	require.Equal(t, "8", recs[3][0])
	require.Contains(t, recs[3][len(recs[3])-1], "extrapolated")

	// The measured workload is the per-epoch count on the busiest rank:
	// the grad allreduce moves the gradient volume once per minibatch.
	run, err := readRun(r2)
	require.NoError(t, err)
	g := run.Comm[metrics.PhaseGrad][perfmodel.Allreduce]
	require.Equal(t, run.Batches, g.Calls)
	require.Equal(t, float64(4*run.Params)*g.Calls, g.Bytes) // p = 2: each rank sends n−b+b elements

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{not json"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--net", "infiniband", "--fit", fit, "--np", "8"}, "infiniband"},
		{[]string{"--net", bad, "--fit", fit, "--np", "8"}, bad},
		{[]string{"--net", "25gbe", "--fit", r1 + "," + bad, "--np", "8"}, bad},
		{[]string{"--net", "25gbe", "--fit", r1 + "," + other, "--np", "8"}, other},
		{[]string{"--net", "25gbe", "--fit", r1, "--np", "8"}, "fewer observations"},
		{[]string{"--net", "25gbe", "--fit", r1 + "," + r1, "--np", "8"}, "hold the same run"},
		{[]string{"--net", "25gbe", "--fit", fit, "--np", "8", "--validate", other}, other},
		{[]string{"--net", "25gbe", "--fit", netPath, "--np", "8"}, netPath},
		{[]string{"--net", "25gbe", "--fit-net", bad, "--fit", fit, "--np", "8"}, bad},
	} {
		_, err := runCmd(t, 1, "predict", tc.args...)
		require.ErrorContains(t, err, tc.want, tc.args)
	}
}

// predict on full-graph runs: a pipe run's units and traffic are read, the
// fit predicts its own runs, extrapolates to more stages, and refuses to
// mix modes.
func TestPredictFullGraph(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "data", "cora")
	run := func(p int, name, mode string) string {
		out, err := runCmd(t, p, "train", "--data", data, "--mode", mode, "--model", "gcnii", "--layers", "8",
			"--hidden", "16", "--epochs", "2", "--eval-every", "0")
		require.NoError(t, err)
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(out), 0o644))
		return path
	}
	p1, p2, p4 := run(1, "p1.json", "pipe"), run(2, "p2.json", "pipe"), run(4, "p4.json", "pipe")
	g2 := run(2, "g2.json", "graph")

	r, err := readRun(p4)
	require.NoError(t, err)
	require.NotNil(t, r.Full)
	require.Equal(t, perfmodel.FullUnits(8, 2708, 1, 4, r.Chunks), r.Full.Units)
	require.Positive(t, r.Full.Comm["act"][perfmodel.Sendrecv].Bytes)
	g, err := readRun(g2)
	require.NoError(t, err)
	require.Equal(t, perfmodel.FullUnits(8, 2708, 2, 1, 1), g.Full.Units) // graph mode: L·n/p

	csvPath := filepath.Join(dir, "full.csv")
	_, err = runCmd(t, 1, "predict", "--net", "25gbe", "--fit", p1+","+p2, "--validate", p4, "--np", "8", "--csv", csvPath)
	require.NoError(t, err)
	f, err := os.Open(csvPath)
	require.NoError(t, err)
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, "act_comm_s", recs[0][6])
	require.Equal(t, []string{"4", "8"}, []string{recs[1][0], recs[2][0]})
	require.NotEmpty(t, recs[1][2])
	require.Contains(t, recs[2][len(recs[2])-1], "extrapolated from p=[1 2]")
	// GNNPipe puts at least one layer on a stage.
	_, err = runCmd(t, 1, "predict", "--net", "25gbe", "--fit", p1+","+p2, "--np", "16")
	require.ErrorContains(t, err, "16 stages for 8 layers")

	_, err = runCmd(t, 1, "predict", "--net", "25gbe", "--fit", p1+","+g2, "--np", "8")
	require.ErrorContains(t, err, g2)
}

// readRun decodes the final metrics of the train run in path.
func readRun(path string) (*perfmodel.Measured, error) {
	runs, err := readRuns([]string{path}, "--fit")
	if err != nil {
		return nil, err
	}
	return runs[0], nil
}
