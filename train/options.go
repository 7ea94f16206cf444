package train

import (
	"gnnmpi/alltoall"
	"gnnmpi/internal/enum"
	"gnnmpi/model"
	"gnnmpi/sampling"
)

// The settings that take one of a few names are named string types: their
// values are the names that flags, configs and metrics spell, a Parse
// function turns a name into a value with an error that lists the
// choices, and Validate checks values set directly.

// Optimizer names an optimizer (Common.Optimizer): package model's
// optimizer kinds, which model.ParseOptimizerKind parses.
type Optimizer = model.OptimizerKind

// Optimizers.
const (
	OptimizerAdam = model.OptimizerAdam
	OptimizerSGD  = model.OptimizerSGD // with Common.Momentum
)

// Device names where minibatch training computes (Config.Device).
type Device string

// Devices.
const (
	DeviceCPU  Device = "cpu"  // the host (the default; "" means it too)
	DeviceCUDA Device = "cuda" // an NVIDIA GPU (gpu/gnn): GraphSAGE on dense features, Adam
)

// ParseDevice returns the device named s.
func ParseDevice(s string) (Device, error) {
	return enum.Parse("train", "device", s, DeviceCPU, DeviceCUDA)
}

// GradComm names how the ranks sum the minibatch gradients (Config.GradComm).
type GradComm string

// Gradient transports.
const (
	GradCommMPI  GradComm = "mpi"  // the world communicator on host buffers (the default; "" means it too)
	GradCommNCCL GradComm = "nccl" // NCCL on the device gradients, in place (Device cuda only)
)

// ParseGradComm returns the gradient transport named s.
func ParseGradComm(s string) (GradComm, error) {
	return enum.Parse("train", "gradient transport", s, GradCommMPI, GradCommNCCL)
}

// GradDType names the type the minibatch gradients travel in when the
// ranks sum them (Config.GradDType).
type GradDType string

// Gradient types.
const (
	GradF32  GradDType = "f32"  // float32 (the default; "" means it too)
	GradBF16 GradDType = "bf16" // bfloat16: float32's range, 8 significant bits; half the bytes
	GradF16  GradDType = "f16"  // IEEE binary16: 11 significant bits, range ±65504; half the bytes
)

// ParseGradDType returns the gradient type named s.
func ParseGradDType(s string) (GradDType, error) {
	return enum.Parse("train", "gradient dtype", s, GradF32, GradBF16, GradF16)
}

// half reports whether gradients of type d travel as 16-bit words.
func (d GradDType) half() bool { return d == GradBF16 || d == GradF16 }

// Mode names a kind of training: data-parallel minibatches (Run) or one of
// the full-graph layouts (RunFull, FullConfig.Mode).
type Mode string

// Training modes.
const (
	ModeMinibatch Mode = "minibatch" // data-parallel sampled minibatches (Run)
	ModeGraph     Mode = "graph"     // graph parallelism: one part per rank, halo exchange at every layer
	ModePipe      Mode = "pipe"      // GNNPipe: one stage per rank, chunks through the pipeline
	ModeHybrid    Mode = "hybrid"    // Pipelines pipelines over graph parts, halos between them
)

// ParseMode returns the training mode named s.
func ParseMode(s string) (Mode, error) {
	return enum.Parse("train", "mode", s, ModeMinibatch, ModeGraph, ModePipe, ModeHybrid)
}

// ChunkMethod names how full-graph training splits each graph part into
// chunks (FullConfig.ChunkMethod).
type ChunkMethod string

// Chunk methods.
const (
	ChunkMetis  ChunkMethod = "metis"  // METIS on the part's own subgraph
	ChunkRandom ChunkMethod = "random" // uniformly at random
)

// ParseChunkMethod returns the chunk method named s.
func ParseChunkMethod(s string) (ChunkMethod, error) {
	return enum.Parse("train", "chunk partition", s, ChunkMetis, ChunkRandom)
}

// Sampler names a minibatch sampler (Config.Sampler): one of package
// sampling's kinds that minibatch training takes (Samplers).
type Sampler = sampling.Kind

// Samplers.
const (
	SamplerSAGE   = sampling.KindSAGE   // node-wise: Fanouts[h] neighbours per vertex
	SamplerLADIES = sampling.KindLADIES // layer-wise: Fanouts[h] vertices per minibatch and layer
)

// Samplers lists the samplers minibatch training takes (not
// sampling.KindPlain, the baseline of `gnnmpi sample`).
var Samplers = []Sampler{SamplerSAGE, SamplerLADIES}

// ParseSampler returns the sampler named s (Samplers).
func ParseSampler(s string) (Sampler, error) {
	return enum.Parse("train", "sampler", s, Samplers...)
}

// Topology names where the sampler's graph lives (Config.Topology):
// package sampling's layouts, which sampling.ParseLayout parses.
type Topology = sampling.Layout

// Topologies of the sampler's graph.
const (
	TopologyReplicated = sampling.LayoutReplicated // every rank holds it
	Topology15D        = sampling.Layout15D        // rows over p/C grid rows, C copies
	Topology2D         = sampling.Layout2D         // √p×√p blocks
)

// Shuffle names how an epoch's training vertices are shuffled over the
// ranks (Config.Shuffle).
type Shuffle string

// Shuffle modes.
const (
	ShuffleLocal  Shuffle = "local"  // each rank shuffles the training vertices it owns
	ShuffleGlobal Shuffle = "global" // one global shuffle, split evenly across ranks
)

// ParseShuffle returns the shuffle mode named s.
func ParseShuffle(s string) (Shuffle, error) {
	return enum.Parse("train", "shuffle", s, ShuffleLocal, ShuffleGlobal)
}

// Selection names the model-selection rule over the evaluated epochs
// (Common.Select).
type Selection string

// Model-selection rules.
const (
	// SelectAcc picks the highest validation accuracy, ties to the lower
	// validation loss.
	SelectAcc Selection = "val-acc"
	// SelectLoss picks the lowest validation loss, ties to the higher
	// accuracy (the early stopping of Shchur et al. and Kipf & Welling).
	SelectLoss Selection = "val-loss"
)

// ParseSelection returns the model-selection rule named s.
func ParseSelection(s string) (Selection, error) {
	return enum.Parse("train", "model selection", s, SelectAcc, SelectLoss)
}

// FeatureNorm names the preprocessing of the input features
// (Common.FeatureNorm).
type FeatureNorm string

// Feature normalisations.
const (
	// FeatureNormAuto, the default, is FeatureNormRow for non-negative
	// features (bag-of-words indicators and counts, as in Cora and the
	// Coauthor and Amazon graphs) and FeatureNormNone for real-valued
	// ones (any negative entry): scaling rows of signed features to sum
	// 1 divides by sums near zero and destroys the signal.
	FeatureNormAuto FeatureNorm = "auto"
	// FeatureNormRow scales every feature row to sum 1, as PyG's
	// NormalizeFeatures and the Planetoid/Shchur et al. setups do.
	FeatureNormRow FeatureNorm = "row"
	// FeatureNormNone leaves the features as they are.
	FeatureNormNone FeatureNorm = "none"
)

// ParseFeatureNorm returns the feature normalisation named s.
func ParseFeatureNorm(s string) (FeatureNorm, error) {
	return enum.Parse("train", "feature normalisation", s, FeatureNormAuto, FeatureNormRow, FeatureNormNone)
}

// Resolve returns the normalisation n applies to features that are
// non-negative or not: FeatureNormAuto becomes FeatureNormRow or
// FeatureNormNone; the others are returned as they are.
func (n FeatureNorm) Resolve(nonNegative bool) FeatureNorm {
	if n != FeatureNormAuto {
		return n
	}
	if nonNegative {
		return FeatureNormRow
	}
	return FeatureNormNone
}

// CacheVIPRecurrence is the cache policy that scores by SALIENT++'s VIP
// recurrence as written (sampling.VIPRecurrence) rather than by the exact
// propagation of alltoall.CacheVIP (sampling.VIP).
const CacheVIPRecurrence alltoall.CachePolicy = "vip-recurrence"

// CachePolicies lists the feature-cache policies train scores, in the
// order flags and errors list them.
var CachePolicies = []alltoall.CachePolicy{alltoall.CacheNone, alltoall.CacheDegree, alltoall.CacheVIP, CacheVIPRecurrence, alltoall.CacheSim}

// ParseCache returns the feature-cache policy named s (CachePolicies).
func ParseCache(s string) (alltoall.CachePolicy, error) {
	return enum.Parse("train", "cache policy", s, CachePolicies...)
}

// ParseFeatureDType returns the feature storage type named s.
func ParseFeatureDType(s string) (alltoall.DType, error) {
	return enum.Parse("train", "feature dtype", s, alltoall.F32, alltoall.F16)
}

// String returns the device's name.
func (d Device) String() string { return string(d) }

// Set sets d to the device named s, leaving it alone when s names none (flag.Value).
func (d *Device) Set(s string) error { return enum.Set(d, ParseDevice, s) }

// String returns the gradient transport's name.
func (g GradComm) String() string { return string(g) }

// Set sets g to the gradient transport named s, leaving it alone when s names none (flag.Value).
func (g *GradComm) Set(s string) error { return enum.Set(g, ParseGradComm, s) }

// String returns the mode's name.
func (m Mode) String() string { return string(m) }

// Set sets m to the mode named s, leaving it alone when s names none (flag.Value).
func (m *Mode) Set(s string) error { return enum.Set(m, ParseMode, s) }

// String returns the chunk method's name.
func (m ChunkMethod) String() string { return string(m) }

// Set sets m to the chunk method named s, leaving it alone when s names none (flag.Value).
func (m *ChunkMethod) Set(s string) error { return enum.Set(m, ParseChunkMethod, s) }

// String returns the shuffle mode's name.
func (s Shuffle) String() string { return string(s) }

// Set sets s to the shuffle mode named v, leaving it alone when v names none (flag.Value).
func (s *Shuffle) Set(v string) error { return enum.Set(s, ParseShuffle, v) }

// String returns the model-selection rule's name.
func (s Selection) String() string { return string(s) }

// Set sets s to the model-selection rule named v, leaving it alone when v names none (flag.Value).
func (s *Selection) Set(v string) error { return enum.Set(s, ParseSelection, v) }

// String returns the feature normalisation's name.
func (n FeatureNorm) String() string { return string(n) }

// Set sets n to the feature normalisation named s, leaving it alone when s names none (flag.Value).
func (n *FeatureNorm) Set(s string) error { return enum.Set(n, ParseFeatureNorm, s) }
