package train

import (
	"fmt"
	"strings"

	"gnnmpi/alltoall"
)

// The settings that take one of a few names are named string types: their
// values are the names that flags, configs and metrics spell, a Parse
// function turns a name into a value with an error that lists the
// choices, and Validate checks values set directly.

// Optimizer names an optimizer (Common.Optimizer).
type Optimizer string

// Optimizers.
const (
	OptimizerAdam Optimizer = "adam"
	OptimizerSGD  Optimizer = "sgd" // with Common.Momentum
)

// ParseOptimizer returns the optimizer named s.
func ParseOptimizer(s string) (Optimizer, error) {
	return parseChoice("optimizer", s, OptimizerAdam, OptimizerSGD)
}

// Device names where minibatch training computes (Config.Device).
type Device string

// Devices.
const (
	DeviceCPU  Device = "cpu"  // the host (the default; "" means it too)
	DeviceCUDA Device = "cuda" // an NVIDIA GPU (gpu/gnn): GraphSAGE on dense features, Adam
)

// ParseDevice returns the device named s.
func ParseDevice(s string) (Device, error) {
	return parseChoice("device", s, DeviceCPU, DeviceCUDA)
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
	return parseChoice("grad-comm", s, GradCommMPI, GradCommNCCL)
}

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
	return parseChoice("mode", s, ModeMinibatch, ModeGraph, ModePipe, ModeHybrid)
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
	return parseChoice("chunk partition", s, ChunkMetis, ChunkRandom)
}

// Sampler names a minibatch sampler (Config.Sampler).
type Sampler string

// Samplers.
const (
	SamplerSAGE   Sampler = "sage"   // node-wise: Fanouts[h] neighbours per vertex
	SamplerLADIES Sampler = "ladies" // layer-wise: Fanouts[h] vertices per minibatch and layer
)

// ParseSampler returns the sampler named s.
func ParseSampler(s string) (Sampler, error) {
	return parseChoice("sampler", s, SamplerSAGE, SamplerLADIES)
}

// Topology names where the sampler's graph lives (Config.Topology).
type Topology string

// Topologies of the sampler's graph.
const (
	TopologyReplicated Topology = "replicated" // every rank holds it
	Topology15D        Topology = "1.5d"       // rows over p/C grid rows, C copies
	Topology2D         Topology = "2d"         // √p×√p blocks
)

// ParseTopology returns the topology named s.
func ParseTopology(s string) (Topology, error) {
	return parseChoice("topology", s, TopologyReplicated, Topology15D, Topology2D)
}

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
	return parseChoice("shuffle", s, ShuffleLocal, ShuffleGlobal)
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
	return parseChoice("model selection", s, SelectAcc, SelectLoss)
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
	return parseChoice("feature normalisation", s, FeatureNormAuto, FeatureNormRow, FeatureNormNone)
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
	return parseChoice("cache policy", s, CachePolicies...)
}

// ParseFeatureDType returns the feature storage type named s.
func ParseFeatureDType(s string) (alltoall.DType, error) {
	return parseChoice("feature dtype", s, alltoall.F32, alltoall.F16)
}

// parseChoice returns the choice whose name is s, or an error naming what
// and listing the choices.
func parseChoice[T ~string](what, s string, choices ...T) (T, error) {
	for _, c := range choices {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("train: unknown %s %q (want %s)", what, s, orList(choices))
}

// orList spells choices as "a, b or c".
func orList[T ~string](choices []T) string {
	s := make([]string, len(choices))
	for i, c := range choices {
		s[i] = string(c)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
