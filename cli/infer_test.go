package cli

import (
	"fmt"
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
// logits (bit for bit on one rank, as train ran), the prediction files
// are the same bytes, and a hidden layer's embeddings agree across the
// runs. Across rank counts the rows agree within 1e-4, not exactly: a
// vertex's chunk and its sources' order in the chunk's block depend on the
// partition, so its sums are rounded in another order.
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

// TestInferErrors checks infer's errors: missing flags, a bad --split, and
// a model whose widths do not match the data, named with the file.
func TestInferErrors(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sbm.gnn")
	require.NoError(t, graph.WriteBinary(data, testSBM(t)))
	saved := filepath.Join(dir, "m.safetensors")
	_, err := runCmd(t, 1, "train", "--data", data, "--model", "sage", "--epochs", "1", "--hidden", "8", "--save-model", saved)
	require.NoError(t, err)
	_, err = runCmd(t, 1, "infer", "--data", data, "--out", "x.npy")
	assert.ErrorContains(t, err, "--model and --data are required")
	_, err = runCmd(t, 1, "infer", "--model", saved, "--data", data)
	assert.ErrorContains(t, err, "nothing to write")
	_, err = runCmd(t, 1, "infer", "--model", saved, "--data", data, "--out", filepath.Join(dir, "p.npy"), "--split", "validation")
	assert.ErrorContains(t, err, `--split "validation"`)
	_, err = runCmd(t, 1, "infer", "--model", saved, "--data", data, "--embeddings", filepath.Join(dir, "e.npy"), "--layer", "3")
	assert.ErrorContains(t, err, "--layer 3")
	other := filepath.Join(dir, "other.gnn")
	p := graph.DefaultSBM(400)
	p.Features = 5
	g, err := graph.SBM(p)
	require.NoError(t, err)
	require.NoError(t, graph.WriteBinary(other, g))
	_, err = runCmd(t, 1, "infer", "--model", saved, "--data", other, "--out", filepath.Join(dir, "p.npy"))
	assert.ErrorContains(t, err, saved)
	assert.ErrorContains(t, err, "the model takes 8 features")
}

// TestInferSplit writes the test split's predictions: one row per test
// vertex, in ascending id, listed in the companion ids file, each equal to
// the whole graph's prediction of that vertex, also when only the test
// vertices' receptive fields are computed (--eval-fanouts).
func TestInferSplit(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sbm.gnn")
	g := testSBM(t)
	require.NoError(t, graph.WriteBinary(data, g))
	saved := filepath.Join(dir, "m.safetensors")
	_, err := runCmd(t, 1, "train", "--data", data, "--model", "gcn", "--epochs", "1", "--hidden", "8", "--save-model", saved)
	require.NoError(t, err)
	all, part := filepath.Join(dir, "all.npy"), filepath.Join(dir, "test.npy")
	_, err = runCmd(t, 1, "infer", "--model", saved, "--data", data, "--out", all)
	require.NoError(t, err)
	_, err = runCmd(t, 2, "infer", "--model", saved, "--data", data, "--out", part, "--split", "test")
	require.NoError(t, err)
	whole, _ := readNpy[int64](t, all)
	got, _ := readNpy[int64](t, part)
	ids, _ := readNpy[int64](t, filepath.Join(dir, "test.ids.npy"))
	_, sp, err := g.SplitNamed("")
	require.NoError(t, err)
	assert.Equal(t, sp.Test, ids)
	require.Len(t, got, len(ids))
	for k, v := range ids {
		assert.Equal(t, whole[v], got[k], "vertex %d", v)
	}

	// Only the test vertices' receptive fields (--eval-fanouts -1,-1), on
	// one and two ranks: the same predictions and ids, scores within
	// rounding of layer-wise inference's; the last layer's embeddings are
	// the scores; a hidden layer's are refused.
	allScores, rf := filepath.Join(dir, "all.scores.npy"), filepath.Join(dir, "rf")
	_, err = runCmd(t, 1, "infer", "--model", saved, "--data", data, "--scores", allScores)
	require.NoError(t, err)
	wantScores, shape := readNpy[float32](t, allScores)
	for _, p := range []int{1, 2} {
		o := fmt.Sprint(rf, p)
		_, err = runCmd(t, p, "infer", "--model", saved, "--data", data, "--out", o+".npy", "--scores", o+".scores.npy",
			"--embeddings", o+".emb.npy", "--split", "test", "--eval-fanouts=-1,-1", "--eval-batch-size", "7")
		require.NoError(t, err)
		got, _ := readNpy[int64](t, o+".npy")
		gotIDs, _ := readNpy[int64](t, o+".ids.npy")
		assert.Equal(t, ids, gotIDs)
		scores, sshape := readNpy[float32](t, o+".scores.npy")
		emb, _ := readNpy[float32](t, o+".emb.npy")
		assert.Equal(t, []int64{int64(len(ids)), shape[1]}, sshape)
		assert.Equal(t, scores, emb, "the last layer's embeddings are the scores")
		for k, v := range ids {
			assert.Equal(t, whole[v], got[k], "np %d: vertex %d", p, v)
			c := int(shape[1])
			assert.InDeltaSlice(t, wantScores[int(v)*c:(int(v)+1)*c], scores[k*c:(k+1)*c], 1e-5, "np %d: vertex %d", p, v)
		}
	}
	_, err = runCmd(t, 1, "infer", "--model", saved, "--data", data, "--embeddings", filepath.Join(dir, "h.npy"), "--layer", "1",
		"--split", "test", "--eval-fanouts=-1,-1")
	assert.ErrorContains(t, err, "computes the last layer only")
}

// TestSaveLogitsWithoutEvaluation trains with --eval-every 0, so that
// inference is planned only when --save-logits needs it after the last
// epoch, on 1 and 2 ranks: the logits equal infer's scores of the saved
// (last) model on one rank, bit for bit, and within 1e-4 on two.
func TestSaveLogitsWithoutEvaluation(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "sbm.gnn")
	require.NoError(t, graph.WriteBinary(data, testSBM(t)))
	for _, p := range []int{1, 2} {
		saved, logits, scores := filepath.Join(dir, fmt.Sprint("m", p)), filepath.Join(dir, fmt.Sprint("l", p, ".npy")), filepath.Join(dir, fmt.Sprint("s", p, ".npy"))
		_, err := runCmd(t, p, "train", "--data", data, "--epochs", "2", "--hidden", "8", "--eval-every", "0",
			"--save-model", saved, "--save-logits", logits)
		require.NoError(t, err)
		_, err = runCmd(t, 1, "infer", "--model", saved, "--data", data, "--scores", scores)
		require.NoError(t, err)
		got, _ := readNpy[float32](t, logits)
		want, _ := readNpy[float32](t, scores)
		if p == 1 {
			assert.Equal(t, want, got)
		} else {
			assert.InDeltaSlice(t, want, got, 1e-4)
		}
	}
}
