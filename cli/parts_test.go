package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/partition"
)

// partition --out writes a partitioned dataset (and --book the book),
// which info reads on any rank count that divides its parts, each rank
// loading only its parts.
func TestPartitionDirInfo(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	dir := filepath.Join(t.TempDir(), "cora.parts")
	book := filepath.Join(t.TempDir(), "cora.book")
	_, se, err := runCmdErr(t, 1, "partition", "--data", data, "--parts", "4", "--method", "metis", "--out", dir, "--book", book)
	require.NoError(t, err)
	assert.Contains(t, se, "wrote part 4 of 4: part-00003.gnn")
	m, err := graph.ReadPartManifest(dir)
	require.NoError(t, err)
	assert.Equal(t, 4, m.Parts)
	assert.Equal(t, "metis", m.Method)
	assert.Equal(t, graph.FeatureCSR, m.FeatureFormat, "Cora's features are sparse: auto stores them so")
	b, err := partition.Read(book)
	require.NoError(t, err)
	assert.Equal(t, b.Sizes()[2], m.Offsets[3]-m.Offsets[2])

	for _, p := range []int{1, 2, 4} {
		out, err := runCmd(t, p, "info", "--data", dir)
		require.NoError(t, err)
		var obj struct {
			Dataset metrics.DatasetInfo `json:"dataset"`
			Parts   graph.PartManifest  `json:"parts"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
		in := obj.Dataset
		// Planetoid Cora: 2708 vertices, 10556 stored edges, 1433
		// features with 49216 nonzeros, 7 classes, split 140/500/1000.
		assert.EqualValues(t, 2708, in.Nodes)
		assert.EqualValues(t, 10556, in.Edges)
		assert.Equal(t, 1433, in.Features)
		assert.EqualValues(t, 49216, in.FeatureNNZ)
		assert.Equal(t, 7, in.Classes)
		assert.Equal(t, []int{140, 500, 1000}, in.Splits["planetoid"])
		assert.InDelta(t, 1, in.Reciprocity, 0, "Cora is symmetric")
		require.Len(t, in.RowsPerRank, p)
		for r, rows := range in.RowsPerRank {
			first, last, err := m.RunParts(r, p, 1)
			require.NoError(t, err)
			assert.Equal(t, m.Offsets[last]-m.Offsets[first], rows)
		}
		assert.Equal(t, m.EdgeCut, obj.Parts.EdgeCut)
		assert.Equal(t, b.EdgeCut(mustLoad(t, data).Adj), m.EdgeCut)
	}

	// Three ranks cannot share four parts; every rank refuses.
	_, _, err = runCmdErr(t, 3, "info", "--data", dir)
	require.ErrorContains(t, err, "the 4 parts of "+filepath.Join(dir, "manifest.json")+" cannot be spread over 3 ranks")
	_, _, err = runCmdErr(t, 2, "info", "--data", dir, "--partition", book)
	require.ErrorContains(t, err, "--partition does not apply")

	// A missing part is an error naming it, on the rank that needs it.
	require.NoError(t, os.Remove(filepath.Join(dir, "part-00003.gnn")))
	_, _, err = runCmdErr(t, 4, "info", "--data", dir)
	require.Error(t, err)
	_, err = runCmd(t, 1, "info", "--data", dir)
	require.ErrorContains(t, err, filepath.Join(dir, "part-00003.gnn")+": missing file")

	_, err = runCmd(t, 1, "partition", "--data", data, "--parts", "2")
	require.ErrorContains(t, err, "--out DIR or --book FILE is required")
}

func mustLoad(t *testing.T, path string) *graph.Dataset {
	d, err := graph.Load(path, graph.ReadOptions{NoFeatures: true})
	require.NoError(t, err)
	return d
}

// A partitioned dataset's training vertices are counted over every part,
// whatever each rank holds: the loaded-data line and the record's
// train_vertices (which predict fits from) give Cora's 140, not a part's.
func TestPartsTrainVerticesTotal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cora.parts")
	_, err := runCmd(t, 1, "partition", "--data", filepath.Join("..", "data", "cora"), "--parts", "4", "--out", dir)
	require.NoError(t, err)
	for _, topo := range []string{"1.5d", "replicated"} {
		so, se, err := runCmdErr(t, 4, "train", "--data", dir, "--topology", topo, "--epochs", "1", "--hidden", "8")
		require.NoError(t, err, se)
		var rec struct {
			TrainVertices int `json:"train_vertices"`
		}
		require.NoError(t, json.Unmarshal([]byte(so), &rec), so)
		assert.Equal(t, 140, rec.TrainVertices, topo)
		assert.Contains(t, se, "split planetoid with 140 training vertices", topo)
	}
}
