package train

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/alltoall"
	"gnnmpi/model"
)

// Config is a training run's configuration. It must be the same on every
// rank; Validate checks it before the first collective.
type Config struct {
	Model model.Config

	// FeatureNorm is "row" (scale every feature row to sum 1, as PyG's
	// NormalizeFeatures and the Planetoid/Shchur et al. setups do) or
	// "none".
	FeatureNorm string

	// Sampler is SamplerSAGE (node-wise: Fanouts[h] neighbours per
	// vertex) or SamplerLADIES (layer-wise: Fanouts[h] vertices per
	// minibatch and layer; GCN only, whose blocks then carry LADIES's
	// weights).
	Sampler   string
	Fanouts   []int // per hop from the seeds (output layer first); < 0: all neighbours (sage)
	BatchSize int   // seeds per rank per minibatch (upper bound)
	// Bulk is the number of minibatches sampled together (one sparse
	// product per layer for all of them); they are then trained one after
	// another. The minibatches do not depend on it.
	Bulk int
	// Topology is where the sampler's graph lives: TopologyReplicated
	// (every rank holds it; sampling does no communication) or
	// Topology15D (rows over p/C grid rows, C copies; P = Q·A by 1.5D
	// SpGEMM, collective). The minibatches do not depend on it.
	Topology string
	C        int // replication factor of Topology15D; divides the number of ranks

	// Replication is the feature replication factor c: the features are
	// partitioned over p/c parts (Data.Book has p/c parts) and held by the
	// c ranks of a grid row; a rank fetches only within its grid column
	// (one rank per part). It divides the number of ranks.
	Replication int
	// Cache is the static feature cache's policy: alltoall.CacheNone,
	// CacheDegree, CacheVIP, CacheVIPRecurrence or CacheSim. Each rank
	// caches the ⌊CacheFrac·n/K⌋ remote vertices of highest score (K =
	// Data.Book.Parts), filled once at start-up.
	Cache          string
	CacheFrac      float64
	CacheSimEpochs int     // simulated epochs of the sampler that score CacheSim
	FeatureDType   string  // alltoall.F32 or alltoall.F16 (features stored and sent in half precision)
	GPUFrac        float64 // fraction of the resident feature rows, hottest first, in the device tier
	Epochs         int     // last epoch (1-based) to train
	Shuffle        string  // ShuffleLocal or ShuffleGlobal

	Optimizer   string // "adam" or "sgd"
	LR          float32
	WeightDecay float32
	Momentum    float32 // SGD only

	Seed      uint64
	EvalEvery int // evaluate every K epochs (and after the last); 0: never
	// Select is the model-selection rule over the evaluated epochs:
	// SelectAcc (the highest validation accuracy, ties to the lower
	// validation loss) or SelectLoss (the lowest validation loss, as the
	// early stopping of Shchur et al. and Kipf & Welling).
	Select string
	// EvalMemory bounds the input rows one chunk of layer-wise inference
	// gathers, in float32 values (the destinations' rows plus all their
	// neighbours' rows times the layer's input width).
	EvalMemory int64

	CheckpointDir   string // "" disables checkpoints
	CheckpointEvery int    // epochs between checkpoints (and after the last)
	Resume          bool   // continue from CheckpointDir's checkpoint

	// BLAS does the dense products; nil selects gonum's pure Go.
	BLAS blas.Float32Level3 `json:"-"`
}

// Validate reports the first invalid setting.
func (c *Config) Validate() error {
	switch {
	case c.Model.Layers < 1:
		return fmt.Errorf("train: %d layers; want at least 1", c.Model.Layers)
	case len(c.Fanouts) != c.Model.Layers:
		return fmt.Errorf("train: %d fanouts for %d layers; give one per layer (e.g. --fanouts 25,10)", len(c.Fanouts), c.Model.Layers)
	case c.BatchSize < 1:
		return fmt.Errorf("train: batch size %d < 1", c.BatchSize)
	case c.Bulk < 1:
		return fmt.Errorf("train: bulk %d < 1 (minibatches sampled together)", c.Bulk)
	case c.Topology != TopologyReplicated && c.Topology != Topology15D:
		return fmt.Errorf("train: unknown topology %q (want %s or %s)", c.Topology, TopologyReplicated, Topology15D)
	case c.C < 1:
		return fmt.Errorf("train: replication factor %d < 1", c.C)
	case c.Replication < 1:
		return fmt.Errorf("train: feature replication %d < 1", c.Replication)
	case c.Cache != alltoall.CacheNone && c.Cache != alltoall.CacheDegree && c.Cache != alltoall.CacheVIP && c.Cache != CacheVIPRecurrence && c.Cache != alltoall.CacheSim:
		return fmt.Errorf("train: unknown cache policy %q (want none, degree, vip, vip-recurrence or sim)", c.Cache)
	case !(c.CacheFrac >= 0) || math.IsInf(c.CacheFrac, 0):
		return fmt.Errorf("train: cache fraction %v must be a finite number ≥ 0", c.CacheFrac)
	case c.Cache == alltoall.CacheNone && c.CacheFrac > 0:
		return fmt.Errorf("train: cache fraction %v with cache policy none; choose --cache degree, vip or sim", c.CacheFrac)
	case (c.Cache == alltoall.CacheVIP || c.Cache == CacheVIPRecurrence) && c.Sampler != SamplerSAGE:
		return fmt.Errorf("train: the %s cache models the node-wise sampler; with --sampler %s use --cache sim or degree", c.Cache, c.Sampler)
	case c.Cache == alltoall.CacheSim && c.CacheSimEpochs < 1:
		return fmt.Errorf("train: %d simulated epochs for the sim cache; want at least 1", c.CacheSimEpochs)
	case c.FeatureDType != alltoall.F32 && c.FeatureDType != alltoall.F16:
		return fmt.Errorf("train: unknown feature dtype %q (want f32 or f16)", c.FeatureDType)
	case !(c.GPUFrac >= 0 && c.GPUFrac <= 1):
		return fmt.Errorf("train: GPU fraction %v outside [0, 1]", c.GPUFrac)
	case c.Sampler != SamplerSAGE && c.Sampler != SamplerLADIES:
		return fmt.Errorf("train: unknown sampler %q (want %s or %s)", c.Sampler, SamplerSAGE, SamplerLADIES)
	case c.Sampler == SamplerLADIES && c.Model.Kind != "gcn":
		return fmt.Errorf("train: the ladies sampler weights GCN's propagation matrix; use --model gcn (not %s)", c.Model.Kind)
	case c.Epochs < 0:
		return fmt.Errorf("train: %d epochs < 0", c.Epochs)
	case c.Shuffle != ShuffleLocal && c.Shuffle != ShuffleGlobal:
		return fmt.Errorf("train: unknown shuffle %q (want %s or %s)", c.Shuffle, ShuffleLocal, ShuffleGlobal)
	case c.FeatureNorm != "row" && c.FeatureNorm != "none":
		return fmt.Errorf("train: unknown feature normalisation %q (want row or none)", c.FeatureNorm)
	case c.Optimizer != "adam" && c.Optimizer != "sgd":
		return fmt.Errorf("train: unknown optimizer %q (want adam or sgd)", c.Optimizer)
	case !(c.LR > 0):
		return fmt.Errorf("train: learning rate %g must be positive", c.LR)
	case c.WeightDecay < 0:
		return fmt.Errorf("train: weight decay %g < 0", c.WeightDecay)
	case c.Select != SelectAcc && c.Select != SelectLoss:
		return fmt.Errorf("train: unknown model selection %q (want %s or %s)", c.Select, SelectAcc, SelectLoss)
	case c.EvalEvery < 0:
		return fmt.Errorf("train: eval every %d < 0", c.EvalEvery)
	case c.EvalMemory < 1:
		return fmt.Errorf("train: eval memory %d < 1", c.EvalMemory)
	case c.CheckpointDir != "" && c.CheckpointEvery < 1:
		return fmt.Errorf("train: checkpoint every %d < 1", c.CheckpointEvery)
	case c.Resume && c.CheckpointDir == "":
		return fmt.Errorf("train: resume needs a checkpoint directory")
	}
	for _, f := range c.Fanouts {
		if f == 0 {
			return fmt.Errorf("train: fanout 0 samples nothing; use a positive fanout or -1 for all neighbours")
		}
		if f < 0 && c.Sampler == SamplerLADIES {
			return fmt.Errorf("train: ladies samples a fixed number of vertices per layer; fanout %d must be positive", f)
		}
	}
	return nil
}

// Samplers (Config.Sampler).
const (
	SamplerSAGE   = "sage"
	SamplerLADIES = "ladies"
)

// Topologies of the sampler's graph (Config.Topology).
const (
	TopologyReplicated = "replicated"
	Topology15D        = "1.5d"
)

// CacheVIPRecurrence is the cache policy that scores by SALIENT++'s VIP
// recurrence as written (sampling.VIPRecurrence) rather than by the exact
// propagation of alltoall.CacheVIP (sampling.VIP).
const CacheVIPRecurrence = "vip-recurrence"

// Model-selection rules (Config.Select).
const (
	SelectAcc  = "val-acc"
	SelectLoss = "val-loss"
)

// Defaults returns the defaults of a model kind: the settings with which
// `gnnmpi train --data data/cora --model KIND` reaches the published
// accuracy (README, results).
func Defaults(kind string) Config {
	c := Config{
		Model:       model.Config{Kind: kind, Layers: 2, Hidden: 128, Heads: 1, OutHeads: 1, Dropout: 0.5},
		FeatureNorm: "row",
		Sampler:     SamplerSAGE,
		Fanouts:     []int{25, 10},
		BatchSize:   32,
		Bulk:        1,
		Topology:    TopologyReplicated,
		C:           1,
		Replication: 1,
		Cache:       alltoall.CacheNone, CacheSimEpochs: 2, FeatureDType: alltoall.F32,
		Epochs:    100,
		Shuffle:   ShuffleLocal,
		Optimizer: "adam", LR: 0.01, WeightDecay: 5e-4,
		Seed: 1, EvalEvery: 1, Select: SelectAcc, EvalMemory: 256 << 20, CheckpointEvery: 10,
	}
	switch kind {
	case "gcn":
		c.Model.Hidden = 64
	case "gat":
		c.Model.Hidden, c.Model.Heads, c.Model.OutHeads = 8, 8, 1
		c.Model.Dropout, c.Model.AttnDropout = 0.6, 0.6
		c.LR = 0.005
		c.Epochs = 200
	}
	return c
}
