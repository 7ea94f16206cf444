package cli

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/safetensors"
)

// readNpyF32 parses a 2-D little-endian float32 .npy of version 1.0 as
// npyF32 writes it (and as numpy.load reads it): the magic, the header
// dict, the data starting at a multiple of 64 bytes.
func readNpyF32(t *testing.T, b []byte) (rows, cols int, x []float32) {
	t.Helper()
	require.Equal(t, "\x93NUMPY\x01\x00", string(b[:8]))
	n := int(binary.LittleEndian.Uint16(b[8:]))
	require.Zero(t, (10+n)%64, "data aligned to 64 bytes")
	hdr := string(b[10 : 10+n])
	require.Equal(t, byte('\n'), hdr[n-1])
	m := regexp.MustCompile(`^\{'descr': '<f4', 'fortran_order': False, 'shape': \((\d+), (\d+)\), \} *\n$`).FindStringSubmatch(hdr)
	require.NotNil(t, m, hdr)
	rows, _ = strconv.Atoi(m[1])
	cols, _ = strconv.Atoi(m[2])
	data := b[10+n:]
	require.Len(t, data, 4*rows*cols)
	x = make([]float32, rows*cols)
	for i := range x {
		x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return rows, cols, x
}

// TestNpyF32 round-trips matrices whose header lengths fall on either
// side of the 64-byte alignment.
func TestNpyF32(t *testing.T) {
	for _, shape := range [][2]int{{0, 3}, {2, 3}, {12345, 7}, {1, 1234567}} {
		x := make([]float32, shape[0]*shape[1])
		for i := range x {
			x[i] = float32(i) - 0.5
		}
		r, c, got := readNpyF32(t, npyF32(x, shape[0], shape[1]))
		assert.Equal(t, shape, [2]int{r, c})
		assert.Equal(t, x, got)
	}
}

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

	lb, err := os.ReadFile(logits)
	require.NoError(t, err)
	rows, cols, _ := readNpyF32(t, lb)
	assert.Equal(t, int(g.NumNodes), rows)
	assert.Equal(t, g.NumClasses, cols)
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
