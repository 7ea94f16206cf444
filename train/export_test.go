package train

import (
	"math/rand/v2"
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
	"gnnmpi/dense"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/safetensors"
)

// exportCases are the model configs the export tests cover: every
// minibatch kind, GAT with several heads in and out.
var exportCases = []model.Config{
	{Kind: model.KindSAGE, In: 5, Hidden: 4, Out: 3, Layers: 3},
	{Kind: model.KindGCN, In: 5, Hidden: 4, Out: 3, Layers: 2},
	{Kind: model.KindGAT, In: 5, Hidden: 4, Out: 3, Layers: 2, Heads: 3, OutHeads: 2},
}

// TestModelTensorsLayout checks every exported tensor against the
// model's parameter it comes from: the PyG name, Linear weights
// transposed to out×in, GAT's attention vectors as 1×heads×out (att_src
// from the sources' a_r, att_dst from the destination's a_l), and every
// parameter exported once.
func TestModelTensorsLayout(t *testing.T) {
	for _, mc := range exportCases {
		t.Run(string(mc.Kind), func(t *testing.T) {
			m, err := model.New(mc, rand.New(rand.NewPCG(7, 8)), nil)
			require.NoError(t, err)
			for _, p := range m.Params() { // nonzero biases too
				for i := range p.W {
					p.W[i] = float32(i+1) * 0.25 * float32(len(p.Name))
				}
			}
			tensors, err := ModelTensors(mc, m.FlattenWeights(nil))
			require.NoError(t, err)
			byName := map[string]safetensors.Tensor{}
			for _, x := range tensors {
				byName[x.Name] = x
			}
			// pyg names each parameter of layer l (Param names "layer{l}.…").
			pyg := map[model.Kind]map[string]string{
				model.KindSAGE: {"w_self": "lin_r.weight", "w_neigh": "lin_l.weight", "b": "lin_l.bias"},
				model.KindGCN:  {"w": "lin.weight", "b": "bias"},
				model.KindGAT:  {"w": "lin.weight", "att_l": "att_dst", "att_r": "att_src", "b": "bias"},
			}[mc.Kind]
			n := 0
			for _, p := range m.Params() {
				layer, local, _ := strings.Cut(strings.TrimPrefix(p.Name, "layer"), ".")
				name := "convs." + layer + "." + pyg[local]
				x, ok := byName[name]
				require.True(t, ok, "%s → %s", p.Name, name)
				got, err := x.Float32()
				require.NoError(t, err)
				n += len(got)
				switch {
				case strings.HasSuffix(name, ".weight"):
					require.Equal(t, []int64{int64(p.Cols), int64(p.Rows)}, x.Shape, name)
					for i := range p.Rows {
						for j := range p.Cols {
							require.Equal(t, p.W[i*p.Cols+j], got[j*p.Rows+i], "%s[%d][%d]", name, j, i)
						}
					}
				case strings.HasPrefix(local, "att"):
					require.Equal(t, []int64{1, int64(p.Rows), int64(p.Cols)}, x.Shape, name)
					require.Equal(t, p.W, got, name)
				default:
					require.Equal(t, []int64{int64(len(p.W))}, x.Shape, name)
					require.Equal(t, p.W, got, name)
				}
			}
			assert.Equal(t, m.NumParams(), n, "every parameter once")
			assert.Len(t, tensors, len(m.Params()))
		})
	}
}

// TestModelTensorsErrors checks the errors of a wrong weight count and an
// invalid config.
func TestModelTensorsErrors(t *testing.T) {
	_, err := ModelTensors(exportCases[0], make([]float32, 3))
	assert.ErrorContains(t, err, "3 weights")
	_, err = ModelTensors(model.Config{Kind: model.KindSAGE, Layers: 2}, nil)
	assert.ErrorIs(t, err, model.ErrConfig)
}

// TestSaveModel writes a model, reads it back with the safetensors reader
// and checks the tensors and the metadata a loader rebuilds the model
// from; it writes over an existing file, atomically: no temporary file
// is left, and a failed save leaves the old file as it was.
func TestSaveModel(t *testing.T) {
	for _, mc := range exportCases {
		t.Run(string(mc.Kind), func(t *testing.T) {
			m, err := model.New(mc, rand.New(rand.NewPCG(1, 2)), nil)
			require.NoError(t, err)
			w := m.FlattenWeights(nil)
			dir := t.TempDir()
			path := filepath.Join(dir, "sub", "m.safetensors")
			info := ModelInfo{FeatureNorm: FeatureNormRow, Dataset: "cora", Split: "planetoid", BestEpoch: 7}
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
			require.NoError(t, SaveModel(path, mc, w, info))

			f, err := safetensors.ReadFile(path)
			require.NoError(t, err)
			want, err := ModelTensors(mc, w)
			require.NoError(t, err)
			require.Len(t, f.Tensors, len(want))
			for _, x := range want {
				got, ok := f.Tensor(x.Name)
				require.True(t, ok, x.Name)
				assert.Equal(t, x.Shape, got.Shape, x.Name)
				assert.Equal(t, x.Data, got.Data, x.Name)
			}
			md := f.Metadata
			assert.Equal(t, ExportFormat, md["format"])
			assert.Equal(t, string(mc.Kind), md["model"])
			for k, v := range map[string]int{"layers": mc.Layers, "in": mc.In, "hidden": mc.Hidden, "out": mc.Out, "best_epoch": 7} {
				assert.Equal(t, strconv.Itoa(v), md[k], k)
			}
			assert.Equal(t, "row", md["feature_norm"])
			assert.Equal(t, "cora", md["dataset"])
			if mc.Kind == model.KindGAT {
				assert.Equal(t, strconv.Itoa(mc.Heads), md["heads"])
				assert.Equal(t, strconv.Itoa(mc.OutHeads), md["out_heads"])
			} else {
				assert.NotContains(t, md, "heads")
			}
			// dims: the layers' widths, those of the models' layers.
			dims := []string{strconv.Itoa(mc.In)}
			for _, l := range m.Layers {
				dims = append(dims, strconv.Itoa(l.OutDim()))
			}
			assert.Equal(t, "["+strings.Join(dims, ",")+"]", md["dims"])
			entries, err := os.ReadDir(filepath.Dir(path))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file left")

			before, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Error(t, SaveModel(path, mc, w[:1], info))
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, before, after, "a failed save leaves the file")
		})
	}
}

// TestSavedModelAndLogits trains on 2 ranks with a checkpoint and the
// Logits hook, and checks that the run's selected model (Result.Saved),
// the checkpoint's (CheckpointModel) and the best epoch's parameters are
// the same; and that the hook's logits cover every vertex once and give
// the best epoch's test accuracy, computed from them here.
func TestSavedModelAndLogits(t *testing.T) {
	for _, kind := range model.MinibatchKinds {
		t.Run(string(kind), func(t *testing.T) {
			cfg := testConfig(kind)
			cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 1
			g := sbm()
			const p = 2
			book := partition.Random(g.NumNodes, p, 5)
			results := make([]*Result, p)
			datas := make([]*Data, p)
			logits := make([]map[int64][]float32, p)
			err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				r := c.Rank()
				d, err := Distribute(g, "random", book, r)
				if err != nil {
					return err
				}
				logits[r] = map[int64][]float32{}
				hooks := Hooks{Logits: func(owned []int64, h *dense.Matrix) error {
					for k, v := range owned {
						logits[r][v] = slices.Clone(h.Row(k))
					}
					return nil
				}}
				results[r], datas[r] = nil, d
				res, err := Run(collective.WithStats(c, nil), d, cfg, hooks)
				results[r] = res
				return err
			})
			require.NoError(t, err)
			res := results[0]
			require.NotZero(t, res.BestEpoch)
			require.NotEmpty(t, res.Best)

			sm := res.Saved(cfg, datas[0])
			assert.Equal(t, res.Best, sm.Weights)
			assert.Equal(t, g.NumFeatures(), sm.Config.In)
			assert.Equal(t, g.NumClasses, sm.Config.Out)
			assert.Equal(t, res.BestEpoch, sm.Info.BestEpoch)

			ck, err := CheckpointModel(cfg.CheckpointDir)
			require.NoError(t, err)
			assert.Equal(t, sm.Weights, ck.Weights)
			assert.Equal(t, sm.Info, ck.Info)
			assert.Equal(t, sm.Config.In, ck.Config.In)
			assert.Equal(t, sm.Config.Out, ck.Config.Out)
			_, err = ModelTensors(ck.Config, ck.Weights)
			require.NoError(t, err)

			all := map[int64][]float32{}
			for r := range p {
				for v, row := range logits[r] {
					_, twice := all[v]
					require.False(t, twice, "vertex %d on two ranks", v)
					all[v] = row
				}
			}
			require.Len(t, all, int(g.NumNodes))
			hits := 0
			test := datas[0].Split.Test
			for _, v := range test {
				row := dense.New(1, len(all[v]))
				copy(row.Data, all[v])
				if model.Argmax(row)[0] == g.Labels[v] {
					hits++
				}
			}
			assert.Equal(t, res.TestAcc, float64(hits)/float64(len(test)))
		})
	}
}

// TestCheckpointModelErrors checks that a directory without a checkpoint
// is reported.
func TestCheckpointModelErrors(t *testing.T) {
	_, err := CheckpointModel(t.TempDir())
	assert.ErrorContains(t, err, "no checkpoint")
}
