package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
)

// TestProductsLayout runs a small graph written in OGB's csv layout as
// ogbn-products ships it (raw/*.csv.gz, one split named sales_ranking,
// not time) through partition (METIS, balancing that split), train on
// the parts and infer: the split is the one trained on with its training
// size, the test split's predictions hold its vertices, and the
// predictions are the same bytes at 1 and 2 ranks, from the parts and
// from the directory itself.
func TestProductsLayout(t *testing.T) {
	g := testSBM(t)
	name, _, _ := g.DefaultSplit()
	s := g.Splits[name]
	g.Splits = map[string]graph.Split{"sales_ranking": s}
	dir := t.TempDir()
	data := filepath.Join(dir, "ogbn_products")
	require.NoError(t, graph.WriteOGB(data, g))
	for _, f := range []string{"raw/edge.csv.gz", "raw/node-feat.csv.gz", "raw/node-label.csv.gz", "raw/num-node-list.csv.gz",
		"raw/num-edge-list.csv.gz", "split/sales_ranking/train.csv.gz", "split/sales_ranking/valid.csv.gz", "split/sales_ranking/test.csv.gz"} {
		require.FileExists(t, filepath.Join(data, f))
	}
	parts := filepath.Join(dir, "products.parts")
	_, err := runCmd(t, 1, "partition", "--data", data, "--parts", "2", "--method", "metis", "--out", parts)
	require.NoError(t, err)
	model := filepath.Join(dir, "m.safetensors")
	so, err := runCmd(t, 2, "train", "--data", parts, "--model", "sage", "--epochs", "2", "--hidden", "8", "--fanouts", "3,3",
		"--save-model", model)
	require.NoError(t, err)
	var rec struct {
		Config        map[string]any `json:"config"`
		TrainVertices int            `json:"train_vertices"`
	}
	require.NoError(t, json.Unmarshal([]byte(so), &rec), so)
	assert.Equal(t, "sales_ranking", rec.Config["split"])
	assert.Equal(t, len(s.Train), rec.TrainVertices)

	var preds [][]byte
	for _, r := range []struct {
		data string
		p    int
	}{{parts, 1}, {parts, 2}, {data, 1}, {data, 2}} {
		out := filepath.Join(dir, "pred.npy")
		_, err := runCmd(t, r.p, "infer", "--model", model, "--data", r.data, "--out", out)
		require.NoError(t, err, "%s on %d ranks", r.data, r.p)
		b, err := os.ReadFile(out)
		require.NoError(t, err)
		preds = append(preds, b)
	}
	for i := 1; i < len(preds); i++ {
		assert.Equal(t, preds[0], preds[i], "run %d predicts as the parts at 1 rank", i)
	}
	whole, shape := readNpy[int64](t, filepath.Join(dir, "pred.npy"))
	assert.Equal(t, []int64{g.NumNodes}, shape)
	test := filepath.Join(dir, "test.npy")
	_, err = runCmd(t, 2, "infer", "--model", model, "--data", parts, "--out", test, "--split", "test")
	require.NoError(t, err)
	got, _ := readNpy[int64](t, test)
	ids, _ := readNpy[int64](t, filepath.Join(dir, "test.ids.npy"))
	assert.Equal(t, s.Test, ids)
	require.Len(t, got, len(s.Test))
	for i, v := range ids {
		assert.Equal(t, whole[v], got[i], "test vertex %d", v)
	}
}
