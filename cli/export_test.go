package cli

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/npy"
	"gnnmpi/safetensors"
)

// TestSaveModelAndExport trains on 2 ranks with --checkpoint,
// --save-model and --save-logits, then exports the checkpoint: the
// exported file equals the saved one, both hold the PyG names, and the
// logits file has a row per vertex.
func TestSaveModelAndExport(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sbm.gnn")
	g := testSBM(t)
	require.NoError(t, graph.WriteBinary(data, g))
	saved, logits, exported := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "l.npy"), filepath.Join(dir, "e.safetensors")
	ck := filepath.Join(dir, "ck")
	_, err := runCmd(t, 2, "train", "--data", data, "--model", "gcn", "--epochs", "3", "--hidden", "8", "--checkpoint", ck,
		"--save-model", saved, "--save-logits", logits)
	require.NoError(t, err)
	_, err = runCmd(t, 1, "export", "--checkpoint", ck, "--out", exported)
	require.NoError(t, err)

	a, err := os.ReadFile(saved)
	require.NoError(t, err)
	b, err := os.ReadFile(exported)
	require.NoError(t, err)
	assert.Equal(t, a, b, "train --save-model and export write the same file")
	f, err := safetensors.Decode(a, saved)
	require.NoError(t, err)
	for _, name := range []string{"convs.0.lin.weight", "convs.0.bias", "convs.1.lin.weight", "convs.1.bias"} {
		_, ok := f.Tensor(name)
		assert.True(t, ok, name)
	}
	assert.Equal(t, "gcn", f.Metadata["model"])

	la, err := npy.Open(logits)
	require.NoError(t, err)
	defer la.Close()
	assert.Equal(t, []int64{g.NumNodes, int64(g.NumClasses)}, la.Shape)
	x := make([]float32, la.Len())
	require.NoError(t, npy.Read(la, x, 0))
	for i, v := range x {
		require.False(t, math.IsNaN(float64(v)) || math.IsInf(float64(v), 0), "logit %d is %v", i, v)
	}
}

// TestExportErrors checks the export command's errors: missing flags, no
// checkpoint, and --save-model with a full-graph mode.
func TestExportErrors(t *testing.T) {
	_, err := runCmd(t, 1, "export", "--out", "x")
	assert.ErrorContains(t, err, "--checkpoint and --out are required")
	_, err = runCmd(t, 1, "export", "--checkpoint", t.TempDir(), "--out", filepath.Join(t.TempDir(), "x"))
	assert.ErrorContains(t, err, "no checkpoint")
	_, err = runCmd(t, 1, "train", "--mode", "graph", "--data", "x", "--save-model", "m")
	assert.ErrorContains(t, err, "--save-model applies to minibatch training")
}
