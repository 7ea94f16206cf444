package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/npy"
)

// readNpy returns the values of the .npy file path and its shape.
func readNpy[T npy.Elem](t *testing.T, path string) ([]T, []int64) {
	t.Helper()
	a, err := npy.Open(path)
	require.NoError(t, err)
	defer a.Close()
	x := make([]T, a.Len())
	require.NoError(t, npy.Read(a, x, 0))
	return x, a.Shape
}

// TestInferMatchesTrain trains a model (--save-model, --save-logits) on
// one rank, then runs infer on 1 and 4 ranks of the .gnn file and on 4
// ranks of a partitioned directory of it: the scores equal train's
// logits, the prediction files are the same bytes, and a hidden layer's
// embeddings agree across the runs.
func TestInferMatchesTrain(t *testing.T) {
	for _, kind := range []string{"sage", "gcn", "gat"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "sbm.gnn")
			g := testSBM(t)
			require.NoError(t, graph.WriteBinary(data, g))
			saved, logits := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "l.npy")
			_, err := runCmd(t, 1, "train", "--data", data, "--model", kind, "--epochs", "2", "--hidden", "8", "--layers", "2",
				"--save-model", saved, "--save-logits", logits)
			require.NoError(t, err)
			parts := filepath.Join(dir, "sbm.parts")
			_, err = runCmd(t, 1, "partition", "--data", data, "--parts", "4", "--method", "metis", "--out", parts)
			require.NoError(t, err)
			want, wshape := readNpy[float32](t, logits)

			runs := []struct {
				name, data string
				p          int
			}{{"np1", data, 1}, {"np4", data, 4}, {"parts-np4", parts, 4}}
			var preds [][]byte
			var embs [][]float32
			for _, r := range runs {
				o := filepath.Join(dir, r.name)
				_, err := runCmd(t, r.p, "infer", "--model", saved, "--data", r.data, "--out", o+".pred.npy",
					"--scores", o+".scores.npy", "--embeddings", o+".emb.npy", "--layer", "1")
				require.NoError(t, err, r.name)
				scores, shape := readNpy[float32](t, o+".scores.npy")
				assert.Equal(t, wshape, shape, r.name)
				if r.p == 1 {
					assert.Equal(t, want, scores, "%s: infer's scores are train --save-logits' logits", r.name)
				} else {
					assert.InDeltaSlice(t, want, scores, 1e-4, r.name)
				}
				pred, pshape := readNpy[int64](t, o+".pred.npy")
				assert.Equal(t, []int64{g.NumNodes}, pshape)
				for v, p := range pred {
					best := 0
					for k := range int(shape[1]) {
						if scores[v*int(shape[1])+k] > scores[v*int(shape[1])+best] {
							best = k
						}
					}
					require.EqualValues(t, best, p, "%s: vertex %d", r.name, v)
				}
				b, err := os.ReadFile(o + ".pred.npy")
				require.NoError(t, err)
				preds = append(preds, b)
				emb, eshape := readNpy[float32](t, o+".emb.npy")
				assert.Equal(t, g.NumNodes, eshape[0])
				embs = append(embs, emb)
			}
			for i := 1; i < len(runs); i++ {
				assert.Equal(t, preds[0], preds[i], "%s and %s predict alike", runs[0].name, runs[i].name)
				assert.InDeltaSlice(t, embs[0], embs[i], 1e-4, "%s and %s embed alike", runs[0].name, runs[i].name)
			}
		})
	}
}
