package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/gpu/cuda"
	"gnnmpi/graph"
	"gnnmpi/internal/testutil"
	"gnnmpi/metrics"
	"gnnmpi/nccl"
	"gnnmpi/sparse"
	"gnnmpi/train"
)

// testGPU are the GPU backends the commands' tests hand down, as main
// does; the GPU tests point them at the fake libraries (gputest).
var testGPU = train.Backends{CUDADeviceCount: cuda.DeviceCount, OpenCUDA: cuda.Open, NewNCCL: nccl.New}

// runCmdErr is runCmd that also returns rank 0's standard error (progress
// and warnings).
func runCmdErr(t *testing.T, p int, name string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, se testutil.LockedBuffer
	errs := make([]error, p)
	err = inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) (err error) {
		defer func() { errs[c.Rank()] = err }()
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fn := Lookup(name).Flags(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		env := NewEnv(collective.WithStats(c, nil), "inproc", name, &out, &se, nil, true)
		env.GPU = testGPU
		return fn(env)
	})
	if errs[0] != nil {
		err = errs[0]
	}
	return out.String(), se.String(), err
}

// testSBM is a small SBM with signed features.
func testSBM(t *testing.T) *graph.Dataset {
	t.Helper()
	p := graph.DefaultSBM(400)
	p.Features = 8
	d, err := graph.SBM(p)
	require.NoError(t, err)
	return d
}

// oneWay returns a copy of g with each undirected edge stored once (i < j,
// sparse.StrictUpper), as many edge lists store them.
func oneWay(g *graph.Dataset) *graph.Dataset {
	d := *g
	d.Adj = sparse.StrictUpper(g.Adj)
	return &d
}

const directedWarning = "only 0% of edges have a reverse edge; if the graph is undirected, pass --symmetrize"

// TestSymmetrizeFlag runs every command that loads a dataset on an SBM
// written with each edge once (as an OGB directory and as .gnn): without
// --symmetrize each warns that the graph looks directed; with it none
// does, and the graph has both directions again.
func TestSymmetrizeFlag(t *testing.T) {
	g := testSBM(t)
	dir := t.TempDir()
	gnn, ogb := filepath.Join(dir, "once.gnn"), filepath.Join(dir, "once")
	require.NoError(t, graph.WriteBinary(gnn, oneWay(g)))
	require.NoError(t, graph.WriteOGB(ogb, oneWay(g)))
	require.NoError(t, graph.WriteBinary(filepath.Join(dir, "both.gnn"), g))
	book := filepath.Join(dir, "book")
	out := filepath.Join(dir, "out.gnn")
	commands := []struct {
		name string
		p    int
		args []string
	}{
		{"train", 2, []string{"--epochs", "1", "--hidden", "8", "--fanouts", "3,3", "--batch-size", "64", "--eval-every", "0", "--partition", "random"}},
		{"train", 2, []string{"--mode", "graph", "--model", "gcn", "--layers", "2", "--hidden", "8", "--epochs", "1", "--eval-every", "0", "--partition", "block"}},
		{"fetch", 2, []string{"--cache", "none", "--cache-frac", "0", "--fanouts", "3,3", "--partition", "random"}},
		{"sample", 2, []string{"--fanouts", "3,3", "--batch-size", "64", "--max-batches", "2"}},
		{"info", 1, nil},
		{"info", 3, nil},
		{"partition", 2, []string{"--method", "random", "--parts", "2", "--split", "none", "--book", book}},
		{"convert", 1, []string{"--out", out}},
	}
	for _, data := range []string{gnn, ogb} {
		for _, cmd := range commands {
			t.Run(cmd.name+"/"+filepath.Base(data), func(t *testing.T) {
				args := append([]string{"--data", data}, cmd.args...)
				_, se, err := runCmdErr(t, cmd.p, cmd.name, args...)
				require.NoError(t, err)
				assert.Contains(t, se, directedWarning)
				_, se, err = runCmdErr(t, cmd.p, cmd.name, append(args, "--symmetrize")...)
				require.NoError(t, err)
				assert.NotContains(t, se, "warning")
				assert.Contains(t, se, "symmetrized")
			})
		}
	}

	// info reports the reciprocity and, symmetrized, the whole graph's
	// edges, on one rank and spread over three.
	for _, p := range []int{1, 3} {
		in := infoOf(t, p, "--data", gnn)
		assert.Equal(t, 0.0, in.Reciprocity)
		assert.Equal(t, g.Adj.NNZ()/2, in.Edges)
		in = infoOf(t, p, "--data", gnn, "--symmetrize")
		assert.Equal(t, 1.0, in.Reciprocity)
		assert.True(t, in.Symmetrized)
		assert.Equal(t, g.Adj.NNZ(), in.Edges)
		assert.Equal(t, infoOf(t, 1, "--data", filepath.Join(dir, "both.gnn")).MaxDegree, in.MaxDegree)
	}

	// convert --symmetrize writes a file recorded as symmetric: it loads
	// without a warning and without --symmetrize.
	_, _, err := runCmdErr(t, 1, "convert", "--data", ogb, "--out", out, "--symmetrize")
	require.NoError(t, err)
	d, m, err := graph.OpenBinary(out, graph.ReadOptions{})
	require.NoError(t, err)
	assert.True(t, d.Symmetric)
	assert.Equal(t, g.Adj, d.Adj)
	require.NoError(t, m.Close())
	res := trainResult(t, "--data", out, "--epochs", "1", "--hidden", "8", "--fanouts", "3,3", "--eval-every", "0")
	assert.Empty(t, res.Warnings)
	assert.Equal(t, 1.0, res.Config["reciprocity"])
	assert.Equal(t, false, res.Config["symmetrize"])
}

// infoOf runs info on p ranks and returns its dataset summary.
func infoOf(t *testing.T, p int, args ...string) metrics.DatasetInfo {
	t.Helper()
	so, err := runCmd(t, p, "info", args...)
	require.NoError(t, err)
	var obj struct {
		Dataset metrics.DatasetInfo `json:"dataset"`
	}
	require.NoError(t, json.Unmarshal([]byte(so), &obj), so)
	return obj.Dataset
}

// trainOut is what the tests read of train's final metrics object.
type trainOut struct {
	Config   map[string]any `json:"config"`
	Warnings []string       `json:"warnings"`
}

// trainResult trains on one rank and returns the final metrics object.
func trainResult(t *testing.T, args ...string) trainOut {
	t.Helper()
	so, err := runCmd(t, 1, "train", args...)
	require.NoError(t, err)
	var obj trainOut
	require.NoError(t, json.Unmarshal([]byte(so), &obj), so)
	return obj
}

// TestFeatureNormAuto checks the default --feature-norm auto: row for
// Cora's 0/1 features, none for the SBM's signed ones; an explicit choice
// is kept.
func TestFeatureNormAuto(t *testing.T) {
	sbm := filepath.Join(t.TempDir(), "sbm.gnn")
	require.NoError(t, graph.WriteBinary(sbm, testSBM(t)))
	cora := filepath.Join("..", "data", "cora")
	quick := []string{"--epochs", "1", "--hidden", "8", "--fanouts", "3,3", "--eval-every", "0"}
	for _, tc := range []struct {
		data, flag, want string
	}{
		{cora, "", "row"}, {sbm, "", "none"}, {sbm, "auto", "none"}, {sbm, "row", "row"}, {cora, "none", "none"},
	} {
		args := append([]string{"--data", tc.data}, quick...)
		if tc.flag != "" {
			args = append(args, "--feature-norm", tc.flag)
		}
		res := trainResult(t, args...)
		assert.Equal(t, tc.want, res.Config["feature_norm"], "%s %q", tc.data, tc.flag)
		flagWant := tc.flag
		if flagWant == "" {
			flagWant = "auto"
		}
		assert.Equal(t, flagWant, res.Config["feature_norm_flag"])
	}
	// The full-graph modes resolve it the same way.
	so, err := runCmd(t, 1, "train", "--mode", "graph", "--model", "gcn", "--layers", "2", "--hidden", "8", "--epochs", "1", "--eval-every", "0", "--data", sbm)
	require.NoError(t, err)
	var obj trainOut
	require.NoError(t, json.Unmarshal([]byte(so), &obj), so)
	assert.Equal(t, "none", obj.Config["feature_norm"])
	_, err = runCmd(t, 1, "train", append([]string{"--data", cora, "--feature-norm", "col"}, quick...)...)
	require.ErrorContains(t, err, `unknown feature normalisation "col" (want auto, row or none)`)
}

// TestEmptyClassesWarning relabels one class of the SBM out of the way:
// training and info warn, naming the empty class.
func TestEmptyClassesWarning(t *testing.T) {
	g := *testSBM(t)
	g.Labels = slices.Clone(g.Labels)
	for i, l := range g.Labels {
		if l == 2 {
			g.Labels[i] = int32(g.NumClasses + 1) // classes 2 and NumClasses empty
		}
	}
	g.NumClasses += 2
	path := filepath.Join(t.TempDir(), "gaps.gnn")
	require.NoError(t, graph.WriteBinary(path, &g))
	res := trainResult(t, "--data", path, "--epochs", "1", "--hidden", "8", "--fanouts", "3,3", "--eval-every", "0")
	require.Len(t, res.Warnings, 1)
	assert.Contains(t, res.Warnings[0], "gaps.gnn: 2 of the 10 classes have no vertex (class 2, 8)")
	for _, p := range []int{1, 2} {
		assert.Equal(t, []int{2, 8}, infoOf(t, p, "--data", path).EmptyClasses)
	}
	assert.Empty(t, infoOf(t, 2, "--data", filepath.Join("..", "data", "cora")).EmptyClasses)
}

// TestHugeLabel: a label near 2³¹ is refused with the file and line, on
// every rank, instead of a 1 TiB allocation.
func TestHugeLabel(t *testing.T) {
	g := testSBM(t)
	dir := t.TempDir()
	require.NoError(t, graph.WriteOGB(dir, g))
	lines := make([]string, g.NumNodes)
	for i, l := range g.Labels {
		lines[i] = strconv.Itoa(int(l))
	}
	lines[6] = "2147483646"
	writeGzFile(t, filepath.Join(dir, "raw", "node-label.csv.gz"), strings.Join(lines, "\n")+"\n")
	for _, cmd := range []string{"train", "info"} {
		_, err := runCmd(t, 2, cmd, "--data", dir, "--epochs", "1")
		if cmd == "info" {
			_, err = runCmd(t, 2, cmd, "--data", dir)
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), "raw/node-label.csv.gz:7: label 2147483646 is implausibly large")
	}
}

// writeGzFile writes content gzip-compressed to path.
func writeGzFile(t *testing.T, path, content string) {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}
