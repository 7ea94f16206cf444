package train

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/safetensors"
	"gnnmpi/sampling"
)

// ModelFromFile returns the model an exported file holds (SaveModel's
// inverse): its config from the metadata, its parameters from the tensors
// (ModelTensors' names and layouts), and what the metadata records of its
// training. It returns an error, naming the key or the tensor, if the
// format is not ExportFormat, a metadata value is missing or malformed,
// or a tensor is missing, not F32, of another shape than the config
// implies, or not one of the model's.
func ModelFromFile(f *safetensors.File) (SavedModel, error) {
	meta := f.Metadata
	if meta["format"] != ExportFormat {
		return SavedModel{}, fmt.Errorf("metadata format %q, want %q", meta["format"], ExportFormat)
	}
	num := func(key string, required bool) (int, error) {
		v, ok := meta[key]
		if !ok && !required {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("metadata %s %q: want a non-negative integer", key, v)
		}
		return n, nil
	}
	frac := func(key string) (float32, error) {
		v, ok := meta[key]
		if !ok {
			return 0, nil
		}
		x, err := strconv.ParseFloat(v, 32)
		if err != nil {
			return 0, fmt.Errorf("metadata %s %q: want a number", key, v)
		}
		return float32(x), nil
	}
	mc := model.Config{Kind: model.Kind(meta["model"])}
	var err error
	for _, p := range []struct {
		key      string
		dst      *int
		required bool
	}{{"layers", &mc.Layers, true}, {"in", &mc.In, true}, {"hidden", &mc.Hidden, true}, {"out", &mc.Out, true}, {"heads", &mc.Heads, false}, {"out_heads", &mc.OutHeads, false}} {
		if *p.dst, err = num(p.key, p.required); err != nil {
			return SavedModel{}, err
		}
	}
	if mc.Dropout, err = frac("dropout"); err != nil {
		return SavedModel{}, err
	}
	if mc.AttnDropout, err = frac("attn_dropout"); err != nil {
		return SavedModel{}, err
	}
	if v, ok := meta["normalize"]; ok {
		if mc.Normalize, err = strconv.ParseBool(v); err != nil {
			return SavedModel{}, fmt.Errorf("metadata normalize %q: want true or false", v)
		}
	}
	info := ModelInfo{FeatureNorm: FeatureNorm(meta["feature_norm"]), Dataset: meta["dataset"], Split: meta["split"]}
	if !slices.Contains([]FeatureNorm{FeatureNormRow, FeatureNormNone}, info.FeatureNorm) {
		return SavedModel{}, fmt.Errorf("metadata feature_norm %q: want %q or %q", info.FeatureNorm, FeatureNormRow, FeatureNormNone)
	}
	if info.BestEpoch, err = num("best_epoch", false); err != nil {
		return SavedModel{}, err
	}
	m, err := model.New(mc, rand.New(rand.NewPCG(0, 0)), nil)
	if err != nil {
		return SavedModel{}, fmt.Errorf("metadata: %w", err)
	}
	used := 0
	for l, layer := range m.Layers {
		specs, err := layerTensors(mc.Kind, l, layer.Params())
		if err != nil {
			return SavedModel{}, err
		}
		for _, s := range specs {
			t, ok := f.Tensor(s.name)
			if !ok {
				return SavedModel{}, fmt.Errorf("no tensor %q, which the %s model of the metadata has", s.name, mc.Kind)
			}
			if !slices.Equal(t.Shape, s.shape()) {
				return SavedModel{}, fmt.Errorf("tensor %q has shape %v, the model of the metadata %v", s.name, t.Shape, s.shape())
			}
			v, err := t.Float32()
			if err != nil {
				return SavedModel{}, err
			}
			s.unpack(v)
			used++
		}
	}
	if used != len(f.Tensors) {
		return SavedModel{}, fmt.Errorf("%d tensors, the %s model of the metadata has %d", len(f.Tensors), mc.Kind, used)
	}
	return SavedModel{Config: mc, Weights: m.FlattenWeights(nil), Info: info}, nil
}

// Inference is what Infer computes on one rank: the rows of the vertices
// the rank owns in layer-wise inference.
type Inference struct {
	// Owned are the vertices' ids: global ids of the loaded dataset (new
	// ids of a partitioned one), in the order of the rows.
	Owned []int64
	// Orig are the same vertices' original ids: Owned for a whole
	// dataset, their ids before relabelling (Data.OrigIDs) for a
	// partitioned one.
	Orig []int64
	// Logits holds the model's output, one row per vertex.
	Logits *dense.Matrix
	// Embeddings holds the output of the layer Infer was asked for, one
	// row per vertex; nil if none was.
	Embeddings *dense.Matrix
}

// Infer runs the model sm on d by the exact layer-wise inference of
// training's evaluation (phase "eval"; the same chunks, halo fetches and
// arithmetic as Run's with cfg, so that the logits equal those
// Hooks.Logits receives for the same parameters, rank count and
// settings) and returns this rank's rows: the logits and, if embed is
// not 0, a copy of layer embed's output (1 ≤ embed ≤ sm.Config.Layers;
// the last is the logits). cfg supplies the settings inference reads
// (EvalMemory, Replication, FeatureNorm, FeatureDType, BLAS); its model
// is replaced by sm's. progress, if not nil, is called on every rank
// after each layer with the layer's number (from 1). Like Run, Infer
// takes d's feature rows: d serves one call.
//
// With cfg.EvalFanouts set, Infer computes instead only the vertices of
// only (ascending global ids; nil: every vertex) that the rank owns, by
// sampling their receptive fields as evaluation does (Config.EvalFanouts:
// −1 for every hop gives the logits of layer-wise inference to rounding),
// in minibatches of cfg.EvalBatchSize; the Inference's rows are those
// vertices, and embed may only name the last layer. progress is then
// called once, after the last minibatch, with the number of layers.
//
// Infer is collective over c: every rank calls it with the same model and
// cfg. It returns an error if the model's input width is not d's feature
// count or its output width not d's class count, or if embed is out of
// range.
func Infer(c collective.Comm, d *Data, sm SavedModel, cfg Config, embed int, only []int64, progress func(layer int)) (*Inference, error) {
	mc := sm.Config
	d.widenHalf()
	if d.Feat == nil && d.FeatCSR == nil {
		return nil, fmt.Errorf("%s has no feature rows (a run has taken them)", d.Name)
	}
	if mc.In != d.NumFeatures() || mc.Out != d.NumClasses {
		return nil, fmt.Errorf("the model takes %d features to %d classes, %s has %d features and %d classes", mc.In, mc.Out, d.Name, d.NumFeatures(), d.NumClasses)
	}
	if embed < 0 || embed > mc.Layers {
		return nil, fmt.Errorf("layer %d of a model of %d layers: want 1 to %d", embed, mc.Layers, mc.Layers)
	}
	if cfg.EvalFanouts != nil && embed != 0 && embed != mc.Layers {
		return nil, fmt.Errorf("layer %d of a model of %d layers: inference by sampling (EvalFanouts) computes the last layer only", embed, mc.Layers)
	}
	cfg.Model = mc
	if len(cfg.Fanouts) != mc.Layers {
		cfg.Fanouts = DefaultFanouts(mc.Layers)
	}
	if d.Partitioned() {
		// No rank holds the whole topology: the sampler, which inference
		// does not use, takes it distributed as the parts lie.
		cfg.Topology, cfg.C = sampling.Layout15D, cfg.Replication
	}
	cfg, err := cfg.Resolve(c.Size())
	if err != nil {
		return nil, err
	}
	cfg.Overlap = false
	t, err := newTrainer(c, d, cfg)
	if err != nil {
		return nil, err
	}
	if len(sm.Weights) != t.m.NumParams() {
		return nil, fmt.Errorf("%d weights, the %s model has %d", len(sm.Weights), mc.Kind, t.m.NumParams())
	}
	t.m.SetWeights(sm.Weights)
	inf := &Inference{}
	t.layerDone = func(l int, h *dense.Matrix) {
		if l == embed {
			inf.Embeddings = &dense.Matrix{Rows: h.Rows, Cols: h.Cols, Data: slices.Clone(h.Data)}
		}
		if progress != nil {
			progress(l)
		}
	}
	owned := t.ebook.Owned(c.Rank())
	if cfg.EvalFanouts != nil && only != nil {
		owned = slices.DeleteFunc(slices.Clone(owned), func(g int64) bool {
			_, ok := slices.BinarySearch(only, g)
			return !ok
		})
	}
	h, err := func() (*dense.Matrix, error) {
		defer collective.SetPhase(c, metrics.PhaseEval)()
		defer collective.SetPhase(t.lc, metrics.PhaseEval)()
		if cfg.EvalFanouts != nil {
			return t.sampledLogits(owned, embed, inf, progress)
		}
		t.releaseTraining()
		return t.infer(owned)
	}()
	if err != nil {
		return nil, err
	}
	if err := t.free(); err != nil {
		return nil, err
	}
	inf.Owned, inf.Orig, inf.Logits = owned, owned, h
	if d.OrigIDs != nil {
		inf.Orig = make([]int64, len(owned))
		for i, g := range owned {
			inf.Orig[i] = d.OrigIDs[g-d.RowLo]
		}
	}
	return inf, nil
}
