package train

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/model"
	"gnnmpi/safetensors"
)

// ModelFromFile inverts SaveModel: the config, weights and info come back,
// and a tensor of another shape is refused with its name.
func TestModelFromFileRoundTrip(t *testing.T) {
	for _, kind := range model.MinibatchKinds {
		mc := model.Config{Kind: kind, In: 5, Hidden: 4, Out: 3, Layers: 2, Heads: 2, OutHeads: 1, Dropout: 0.5}
		m, err := model.New(mc, rand.New(rand.NewPCG(1, 2)), nil)
		require.NoError(t, err)
		w := m.FlattenWeights(nil)
		info := ModelInfo{FeatureNorm: FeatureNormRow, Dataset: "d", Split: "s", BestEpoch: 3}
		path := filepath.Join(t.TempDir(), "m.safetensors")
		require.NoError(t, SaveModel(path, mc, w, info))
		f, err := safetensors.ReadFile(path)
		require.NoError(t, err)
		sm, err := ModelFromFile(f)
		require.NoError(t, err, kind)
		assert.Equal(t, w, sm.Weights, kind)
		assert.Equal(t, info, sm.Info, kind)
		assert.Equal(t, mc.Layers, sm.Config.Layers)
		assert.Equal(t, mc.In, sm.Config.In)
		k := 0
		for len(f.Tensors[k].Shape) < 2 {
			k++
		}
		f.Tensors[k].Shape = []int64{int64(len(f.Tensors[k].Data) / 4)}
		_, err = ModelFromFile(f)
		assert.ErrorContains(t, err, f.Tensors[k].Name, kind)
	}
}
