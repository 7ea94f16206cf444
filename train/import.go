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
	// ids of a partitioned one), in the order of Rows.
	Owned []int64
	// Orig are the same vertices' original ids: Owned for a whole
	// dataset, their ids before relabelling (Data.OrigIDs) for a
	// partitioned one.
	Orig []int64
	// Rows holds one row per vertex: the output of the layer asked for
	// (the logits for the last).
	Rows *dense.Matrix
}

// Infer runs the model sm on d by the exact layer-wise inference of
// training's evaluation (phase "eval"; the same chunks, halo fetches and
// arithmetic as Run's with cfg, so that the last layer's rows equal the
// logits Hooks.Logits receives for the same parameters, rank count and
// settings) and returns this rank's rows of layer layer's output, 1 ≤ layer ≤
// sm.Config.Layers (the last: the logits). cfg supplies the settings
// inference reads (EvalMemory, Replication, FeatureNorm, Cache, BLAS);
// its model is replaced by sm's. progress, if not nil, is called on every
// rank after each layer with the layer's number (from 1).
//
// Infer is collective over c: every rank calls it with the same model and
// cfg. It returns an error if the model's input width is not d's feature
// count or its output width not d's class count, or if layer is out of
// range.
func Infer(c collective.Comm, d *Data, sm SavedModel, cfg Config, layer int, progress func(layer int)) (*Inference, error) {
	mc := sm.Config
	if mc.In != d.NumFeatures() || mc.Out != d.NumClasses {
		return nil, fmt.Errorf("the model takes %d features to %d classes, %s has %d features and %d classes", mc.In, mc.Out, d.Name, d.NumFeatures(), d.NumClasses)
	}
	if layer < 1 || layer > mc.Layers {
		return nil, fmt.Errorf("layer %d of a model of %d layers: want 1 to %d", layer, mc.Layers, mc.Layers)
	}
	cfg.Model = mc
	if len(cfg.Fanouts) != mc.Layers {
		cfg.Fanouts = DefaultFanouts(mc.Layers)
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
	t.layerDone = progress
	owned := t.ebook.Owned(c.Rank())
	h, err := func() (*dense.Matrix, error) {
		defer collective.SetPhase(c, metrics.PhaseEval)()
		defer collective.SetPhase(t.lc, metrics.PhaseEval)()
		t.releaseTraining()
		return t.inferLayers(owned, layer)
	}()
	if err != nil {
		return nil, err
	}
	if err := t.free(); err != nil {
		return nil, err
	}
	orig := owned
	if d.OrigIDs != nil {
		orig = make([]int64, len(owned))
		for i, g := range owned {
			orig[i] = d.OrigIDs[g-d.RowLo]
		}
	}
	return &Inference{Owned: owned, Orig: orig, Rows: h}, nil
}
