package train

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/safetensors"
)

// ExportFormat is the value of the metadata key "format" of an exported
// model, which names the layout of its tensors and metadata
// (docs/data-formats.md, "Model export").
const ExportFormat = "gnnmpi-model-1"

// ModelInfo is what an exported model's metadata records besides the
// model's Config: enough for a loader to rebuild the model and prepare
// its input as training did.
type ModelInfo struct {
	// FeatureNorm is the feature normalisation the model was trained
	// with, resolved (FeatureNormRow or FeatureNormNone).
	FeatureNorm FeatureNorm
	Dataset     string // the dataset's name (Data.Name)
	Split       string // the split's name (Data.SplitName)
	BestEpoch   int    // the epoch whose parameters these are (0: the last epoch's, none evaluated)
}

// ModelTensors returns the tensors of a minibatch model of config mc whose
// parameters are weights (model.Model.FlattenWeights order), named and
// laid out as PyTorch Geometric's layers hold them (row-major float32,
// Linear weights out×in):
//
//	SAGE (SAGEConv, mean):  convs.{l}.lin_l.weight  W_neighᵀ
//	                        convs.{l}.lin_l.bias    b
//	                        convs.{l}.lin_r.weight  W_selfᵀ
//	GCN (GCNConv):          convs.{l}.lin.weight    Wᵀ
//	                        convs.{l}.bias          b
//	GAT (GATConv):          convs.{l}.lin.weight    Wᵀ (heads·out × in)
//	                        convs.{l}.att_src       a_r, 1×heads×out (the sources' term)
//	                        convs.{l}.att_dst       a_l, 1×heads×out (the destination's term)
//	                        convs.{l}.bias          b
//
// It returns an error if mc is invalid or len(weights) is not the model's
// parameter count.
func ModelTensors(mc model.Config, weights []float32) ([]safetensors.Tensor, error) {
	m, err := model.New(mc, rand.New(rand.NewPCG(0, 0)), nil)
	if err != nil {
		return nil, err
	}
	if len(weights) != m.NumParams() {
		return nil, fmt.Errorf("train: export: %d weights, the %s model has %d", len(weights), mc.Kind, m.NumParams())
	}
	m.SetWeights(weights)
	var out []safetensors.Tensor
	for l, layer := range m.Layers {
		specs, err := layerTensors(mc.Kind, l, layer.Params())
		if err != nil {
			return nil, err
		}
		for _, s := range specs {
			out = append(out, safetensors.FromFloat32(s.name, s.shape(), s.pack()))
		}
	}
	return out, nil
}

// tensorLayout is how an exported tensor holds a parameter's values.
type tensorLayout int

const (
	layoutLinear tensorLayout = iota // the parameter (in×out) transposed, out×in
	layoutVector                     // the values as a vector
	layoutAtt                        // the values (heads×out) as 1×heads×out
)

// tensorSpec is one exported tensor: its name and the parameter it holds,
// laid out as layout says.
type tensorSpec struct {
	name   string
	p      *model.Param
	layout tensorLayout
}

// layerTensors returns the exported tensors of layer l of a model of kind
// kind whose parameters are ps (the layer's Params), in ModelTensors'
// order and names, or an error for a kind without an export layout.
func layerTensors(kind model.Kind, l int, ps []*model.Param) ([]tensorSpec, error) {
	pre := "convs." + strconv.Itoa(l) + "."
	switch kind {
	case model.KindSAGE: // w_self, w_neigh, b
		return []tensorSpec{{pre + "lin_l.weight", ps[1], layoutLinear}, {pre + "lin_l.bias", ps[2], layoutVector}, {pre + "lin_r.weight", ps[0], layoutLinear}}, nil
	case model.KindGCN: // w, b
		return []tensorSpec{{pre + "lin.weight", ps[0], layoutLinear}, {pre + "bias", ps[1], layoutVector}}, nil
	case model.KindGAT: // w, att_l, att_r, b
		return []tensorSpec{{pre + "lin.weight", ps[0], layoutLinear}, {pre + "att_src", ps[2], layoutAtt}, {pre + "att_dst", ps[1], layoutAtt}, {pre + "bias", ps[3], layoutVector}}, nil
	}
	return nil, fmt.Errorf("train: export: model %q has no export layout", kind)
}

// shape returns the exported tensor's shape.
func (s tensorSpec) shape() []int64 {
	switch s.layout {
	case layoutLinear:
		return []int64{int64(s.p.Cols), int64(s.p.Rows)}
	case layoutAtt:
		return []int64{1, int64(s.p.Rows), int64(s.p.Cols)}
	}
	return []int64{int64(len(s.p.W))}
}

// pack returns the parameter's values in the exported tensor's layout.
func (s tensorSpec) pack() []float32 {
	if s.layout != layoutLinear {
		return s.p.W
	}
	p := s.p
	t := make([]float32, len(p.W))
	for i := range p.Rows {
		for j := range p.Cols {
			t[j*p.Rows+i] = p.W[i*p.Cols+j]
		}
	}
	return t
}

// unpack sets the parameter's values from v, the exported tensor's values
// (pack's inverse).
func (s tensorSpec) unpack(v []float32) {
	if s.layout != layoutLinear {
		copy(s.p.W, v)
		return
	}
	p := s.p
	for i := range p.Rows {
		for j := range p.Cols {
			p.W[i*p.Cols+j] = v[j*p.Rows+i]
		}
	}
}

// ModelMetadata returns the metadata of an exported model of config mc
// (defaults filled in) trained as info says: every value a string, JSON
// numbers and booleans where the value is one.
func ModelMetadata(mc model.Config, info ModelInfo) map[string]string {
	heads, outHeads := max(mc.Heads, 1), max(mc.OutHeads, 1)
	act := "relu"
	if mc.Kind == model.KindGAT {
		act = "elu"
	}
	dims := make([]int, 0, mc.Layers+1)
	dims = append(dims, mc.In)
	for l := range mc.Layers {
		switch {
		case l == mc.Layers-1:
			dims = append(dims, mc.Out)
		case mc.Kind == model.KindGAT:
			dims = append(dims, heads*mc.Hidden)
		default:
			dims = append(dims, mc.Hidden)
		}
	}
	dj, _ := json.Marshal(dims)
	b := strconv.FormatBool
	meta := map[string]string{
		"format": ExportFormat, "framework": "gnnmpi", "model": string(mc.Kind),
		"layers": strconv.Itoa(mc.Layers), "in": strconv.Itoa(mc.In), "hidden": strconv.Itoa(mc.Hidden),
		"out": strconv.Itoa(mc.Out), "dims": string(dj),
		"activation": act, "dropout": strconv.FormatFloat(float64(mc.Dropout), 'g', -1, 32),
		"feature_norm": string(info.FeatureNorm), "dataset": info.Dataset, "split": info.Split,
		"best_epoch": strconv.Itoa(info.BestEpoch),
	}
	switch mc.Kind {
	case model.KindSAGE:
		meta["aggregation"] = "mean"
		meta["normalize"] = b(mc.Normalize) // hidden layers only
		meta["root_weight"] = "true"
	case model.KindGCN:
		meta["aggregation"] = "sum"
		meta["gcn_norm"] = "sym" // D̃^{-1/2}(A+I)D̃^{-1/2}
		meta["self_loops"] = "add_missing"
	case model.KindGAT:
		meta["aggregation"] = "sum"
		meta["negative_slope"] = strconv.FormatFloat(model.LeakySlope, 'g', -1, 64)
		meta["concat"] = "hidden" // hidden layers concatenate their heads, the output layer averages them
		meta["self_loops"] = "add_missing"
		meta["heads"], meta["out_heads"] = strconv.Itoa(heads), strconv.Itoa(outHeads)
		meta["attn_dropout"] = strconv.FormatFloat(float64(mc.AttnDropout), 'g', -1, 32)
	}
	meta["gnnmpi_version"], meta["gnnmpi_commit"] = buildVersion()
	return meta
}

// buildVersion returns the main module's version and VCS revision as the
// build recorded them ("unknown" where it did not, as in tests).
func buildVersion() (version, commit string) {
	version, commit = "unknown", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			commit = s.Value
		}
		if s.Key == "vcs.modified" && s.Value == "true" {
			defer func() { commit += "-dirty" }()
		}
	}
	return
}

// SaveModel writes the model of config mc with parameters weights, trained
// as info says, to path as safetensors (ModelTensors, ModelMetadata),
// atomically (internal/atomicfile: a crash leaves the old file or the new
// one), creating the directory.
func SaveModel(path string, mc model.Config, weights []float32, info ModelInfo) error {
	tensors, err := ModelTensors(mc, weights)
	if err != nil {
		return err
	}
	b, err := safetensors.Encode(tensors, ModelMetadata(mc, info))
	if err != nil {
		return fmt.Errorf("train: export: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("train: export: %w", err)
	}
	if err := atomicfile.WriteFile(path, b); err != nil {
		return fmt.Errorf("train: export: %w", err)
	}
	return nil
}

// SavedModel is a model as a checkpoint or a run leaves it: its config,
// its parameters (model.Model.FlattenWeights order) and what the export
// records of its training.
type SavedModel struct {
	Config  model.Config
	Weights []float32
	Info    ModelInfo
}

// Saved returns the model r selects, trained with cfg (as run) on d: the
// best epoch's parameters, or the last epoch's when no epoch was
// evaluated.
func (r *Result) Saved(cfg Config, d *Data) SavedModel {
	w := r.Best
	if len(w) == 0 {
		w = r.Last
	}
	return SavedModel{Config: r.Model, Weights: w,
		Info: ModelInfo{FeatureNorm: cfg.FeatureNorm.Resolve(d.NonNegative), Dataset: d.Name, Split: d.SplitName, BestEpoch: r.BestEpoch}}
}

// CheckpointModel returns the model of the minibatch checkpoint in
// directory dir (Common.CheckpointDir): the best evaluated epoch's
// parameters, or the last checkpointed epoch's when none was evaluated.
// A full-graph checkpoint (one file per rank) is an error: its models
// have no export layout.
func CheckpointModel(dir string) (SavedModel, error) {
	path := filepath.Join(dir, CheckpointFile)
	if _, err := os.Stat(path); err != nil {
		if _, ferr := os.Stat(filepath.Join(dir, FullManifestFile)); ferr == nil {
			return SavedModel{}, fmt.Errorf("train: export: %s is a full-graph checkpoint; only minibatch models (sage, gcn, gat) are exported", dir)
		}
	}
	ck, err := readCheckpoint(path)
	if err != nil {
		return SavedModel{}, err
	}
	var fp struct {
		Config  Config
		Dataset string
		Split   string
	}
	if err := json.Unmarshal([]byte(ck.Header.Fingerprint), &fp); err != nil {
		return SavedModel{}, fmt.Errorf("train: export: %s: fingerprint: %w", path, err)
	}
	if ck.Header.In == 0 || ck.Header.Out == 0 {
		return SavedModel{}, fmt.Errorf("train: export: %s predates the model widths in checkpoints; train again with --checkpoint", path)
	}
	mc := fp.Config.Model
	mc.In, mc.Out = ck.Header.In, ck.Header.Out
	w, best := ck.Best, ck.Header.BestEpoch
	if len(w) == 0 {
		w, best = ck.Weights, 0
	}
	return SavedModel{Config: mc, Weights: w,
		Info: ModelInfo{FeatureNorm: fp.Config.FeatureNorm, Dataset: fp.Dataset, Split: fp.Split, BestEpoch: best}}, nil
}

// selectedLogits runs the evaluation's layer-wise inference with the
// parameters best (the last epoch's when best is empty) and calls f with
// the rank's owned vertices and their logits (Hooks.Logits). The model
// keeps the parameters.
func (t *trainer) selectedLogits(best []float32, f func(owned []int64, logits *dense.Matrix) error) error {
	if len(best) > 0 {
		t.m.SetWeights(best)
	}
	owned := t.ebook.Owned(t.c.Rank())
	h, err := func() (*dense.Matrix, error) {
		defer collective.SetPhase(t.c, metrics.PhaseEval)()
		defer collective.SetPhase(t.lc, metrics.PhaseEval)()
		t.releaseTraining()
		return t.infer(owned)
	}()
	if err != nil {
		return err
	}
	return f(owned, h)
}
