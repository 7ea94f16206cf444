package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
)

// TestPartitionHalfFeatures generates a papers-like graph with float16
// node_feat, partitions it with the distributed ingest (--symmetrize
// --method block) on 2 and 4 in-process ranks, and requires part files
// whose features are float16 (half the feature bytes of float32 parts
// of the same values) and training on them, with --feature-dtype f16 and
// f32, whose trained model (--save-model) and final record's accuracies
// equal bit for bit those of the same runs on parts written from the same
// values in float32 (half values are exact in float32, so the stores hold
// the same words).
func TestPartitionHalfFeatures(t *testing.T) {
	dir := t.TempDir()
	half := filepath.Join(dir, "half", "papers")
	_, err := runCmd(t, 1, "gen", "--nodes", "3000", "--features", "16", "--train-frac", "0.3", "--feature-dtype", "f16", "--out", half, "papers")
	require.NoError(t, err)
	// The same values in float32: the layout widened on load, written back.
	d, err := graph.Load(half, graph.ReadOptions{FeatureFormat: graph.FeatureDense})
	require.NoError(t, err)
	require.NotNil(t, d.Feat)
	full := filepath.Join(dir, "full", "papers")
	require.NoError(t, graph.WriteOGBBinary(full, d, false))

	for _, p := range []int{2, 4} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			parts := map[string]string{}
			bytes := map[string]int64{}
			for name, src := range map[string]string{"half": half, "full": full} {
				out := filepath.Join(t.TempDir(), name)
				_, err := runCmd(t, p, "partition", "--data", src, "--method", "block", "--symmetrize", "--parts", fmt.Sprint(p), "--out", out)
				require.NoError(t, err)
				m, err := graph.ReadPartManifest(out)
				require.NoError(t, err)
				for _, f := range m.Files {
					bytes[name] += f.Bytes
				}
				parts[name] = out
			}
			m, err := graph.ReadPartManifest(parts["half"])
			require.NoError(t, err)
			assert.Equal(t, "float16", m.FeatureDType)
			feat := int64(d.NumNodes) * int64(d.Feat.Cols)
			assert.InDelta(t, 2*feat, bytes["full"]-bytes["half"], float64(p*4096), "float16 features take 2 bytes less each, within a page of alignment a part")

			kept, err := graph.LoadParts(parts["half"], m, 0, 1, graph.PartReadOptions{KeepHalf: true})
			require.NoError(t, err)
			require.NotNil(t, kept.Feat16, "the features stay half")
			require.Nil(t, kept.Feat)
			widened, err := graph.LoadParts(parts["half"], m, 0, 1, graph.PartReadOptions{})
			require.NoError(t, err)
			require.NotNil(t, widened.Feat, "without KeepHalf they are widened")
			mf, err := graph.ReadPartManifest(parts["full"])
			require.NoError(t, err)
			ref, err := graph.LoadParts(parts["full"], mf, 0, 1, graph.PartReadOptions{})
			require.NoError(t, err)
			assert.Equal(t, ref.Feat.Data, widened.Feat.Data)
			for _, q := range []*graph.Part{kept, widened, ref} {
				require.NoError(t, q.Close())
			}

			for _, dtype := range []string{"f16", "f32"} {
				run := func(data string) (model []byte, acc [2]float64) {
					saved := filepath.Join(t.TempDir(), "model.safetensors")
					so, err := runCmd(t, p, "train", "--data", data, "--model", "sage", "--epochs", "3", "--hidden", "8", "--fanouts", "3,3",
						"--feature-dtype", dtype, "--seed", "3", "--save-model", saved)
					require.NoError(t, err)
					var rec struct {
						Val  float64 `json:"best_val_acc"`
						Test float64 `json:"test_acc"`
					}
					require.NoError(t, json.Unmarshal([]byte(so), &rec), so)
					model, err = os.ReadFile(saved)
					require.NoError(t, err)
					return model, [2]float64{rec.Val, rec.Test}
				}
				m32, a32 := run(parts["full"])
				m16, a16 := run(parts["half"])
				assert.Equal(t, m32, m16, "--feature-dtype %s: the trained weights", dtype)
				assert.Equal(t, a32, a16, "--feature-dtype %s: the accuracies", dtype)
			}
		})
	}
}

// convert keeps float16 node_feat float16 in a .gnn (half the feature
// bytes): read back widened, the features are the npz's, bit for bit, and
// kept half they are the same words, whose nonzeros count as the widened
// values'; partition of that .gnn keeps them float16 in the parts.
func TestConvertKeepsHalf(t *testing.T) {
	dir := t.TempDir()
	half := filepath.Join(dir, "papers")
	_, err := runCmd(t, 1, "gen", "--nodes", "2000", "--features", "8", "--feature-dtype", "f16", "--out", half, "papers")
	require.NoError(t, err)
	out := filepath.Join(dir, "p.gnn")
	_, err = runCmd(t, 1, "convert", "--data", half, "--out", out)
	require.NoError(t, err)
	want, err := graph.Load(half, graph.ReadOptions{FeatureFormat: graph.FeatureDense})
	require.NoError(t, err)
	got, err := graph.Load(out, graph.ReadOptions{FeatureFormat: graph.FeatureDense})
	require.NoError(t, err)
	require.Equal(t, want.Feat, got.Feat, "widened on load: the npz's values")
	kept, err := graph.Load(out, graph.ReadOptions{FeatureFormat: graph.FeatureDense, KeepHalf: true})
	require.NoError(t, err)
	require.NotNil(t, kept.Feat16, "the .gnn holds float16 features")
	fromNPZ, err := graph.Load(half, graph.ReadOptions{FeatureFormat: graph.FeatureDense, KeepHalf: true})
	require.NoError(t, err)
	require.Equal(t, fromNPZ.Feat16, kept.Feat16, "the same half words")
	require.Equal(t, want.FeatureNNZ(), kept.FeatureNNZ(), "half rows count their nonzeros as the widened ones")
	require.Equal(t, want.Density(), kept.Density())
	// A .gnn of the widened values stores float32: twice the feature bytes.
	wide := filepath.Join(dir, "wide.gnn")
	require.NoError(t, graph.WriteBinary(wide, want))
	a, err := os.Stat(out)
	require.NoError(t, err)
	b, err := os.Stat(wide)
	require.NoError(t, err)
	assert.InDelta(t, float64(b.Size()-a.Size()), float64(2*2000*8), 4096*2, "half the feature bytes (sections align to 4096)")

	// partition of the half .gnn writes float16 parts, which train as the
	// parts of the widened .gnn do, bit for bit.
	models := map[string][]byte{}
	for name, src := range map[string]string{"half": out, "wide": wide} {
		parts := filepath.Join(dir, name+".parts")
		_, err := runCmd(t, 1, "partition", "--data", src, "--parts", "2", "--method", "block", "--out", parts)
		require.NoError(t, err)
		m, err := graph.ReadPartManifest(parts)
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"half": "float16", "wide": ""}[name], m.FeatureDType, name) // "": float32
		saved := filepath.Join(dir, name+".safetensors")
		_, err = runCmd(t, 2, "train", "--data", parts, "--epochs", "2", "--hidden", "8", "--fanouts", "3,3", "--seed", "3", "--save-model", saved)
		require.NoError(t, err)
		models[name], err = os.ReadFile(saved)
		require.NoError(t, err)
	}
	assert.Equal(t, models["wide"], models["half"], "the trained weights")
}
