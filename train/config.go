package train

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/alltoall"
	"gnnmpi/model"
	"gnnmpi/sampling"
)

// Common holds the settings that both kinds of training share: minibatch
// (Config, Run) and full-graph (FullConfig, RunFull). The epoch loop reads
// them; Validate checks them. Like the configs that embed it, it must be
// the same on every rank.
type Common struct {
	// FeatureNorm is FeatureNormAuto (row for non-negative features,
	// none for real-valued ones: Data.NonNegative decides),
	// FeatureNormRow (scale every feature row to sum 1) or
	// FeatureNormNone.
	FeatureNorm FeatureNorm
	Epochs      int // last epoch (1-based) to train

	Optimizer   Optimizer // OptimizerAdam or OptimizerSGD
	LR          float32
	WeightDecay float32
	Momentum    float32 // SGD only

	// Seed keys every random stream of the run (weights, shuffles,
	// sampling, dropout, METIS).
	Seed      uint64
	EvalEvery int // evaluate every K epochs (and after the last); 0: never
	// Select is the model-selection rule over the evaluated epochs:
	// SelectAcc or SelectLoss.
	Select Selection

	CheckpointDir   string // "" disables checkpoints
	CheckpointEvery int    // epochs between checkpoints (and after the last)
	// CheckpointSteps, if > 0, checkpoints inside every epoch of minibatch
	// training after steps CheckpointSteps, 2·CheckpointSteps, … of it,
	// and at the end of every epoch (CheckpointEvery is then not used).
	CheckpointSteps int `json:",omitempty"`
	// CheckpointInterval, if > 0, checkpoints at the first step boundary
	// (minibatch training) or epoch end after this much time has passed
	// on rank 0 since the run started or the last checkpoint, and after
	// the last epoch (CheckpointEvery is then not used).
	CheckpointInterval time.Duration `json:",omitempty"`
	Resume             bool          // continue from CheckpointDir's checkpoint
	// Overwrite lets the run replace a checkpoint that CheckpointDir
	// already holds; without it (or Resume) such a directory is refused.
	Overwrite bool `json:",omitempty"`

	// BLAS does the dense products; nil selects gonum's pure Go.
	BLAS blas.Float32Level3 `json:"-"`
}

// Validate reports the first invalid common setting.
func (c *Common) Validate() error {
	if err := firstErr(
		errorOf(ParseFeatureNorm(string(c.FeatureNorm))),
		errorOf(model.ParseOptimizerKind(string(c.Optimizer))),
		errorOf(ParseSelection(string(c.Select))),
	); err != nil {
		return err
	}
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("train: %d epochs: train at least 1", c.Epochs)
	case !(c.LR > 0):
		return fmt.Errorf("train: learning rate %g must be positive", c.LR)
	case c.WeightDecay < 0:
		return fmt.Errorf("train: weight decay %g < 0", c.WeightDecay)
	case c.EvalEvery < 0:
		return fmt.Errorf("train: eval every %d < 0", c.EvalEvery)
	case c.CheckpointDir != "" && c.CheckpointEvery < 1:
		return fmt.Errorf("train: checkpoint every %d < 1", c.CheckpointEvery)
	case c.CheckpointSteps < 0 || c.CheckpointInterval < 0:
		return fmt.Errorf("train: checkpoint every %d steps or %v: negative", c.CheckpointSteps, c.CheckpointInterval)
	case c.CheckpointSteps > 0 && c.CheckpointInterval > 0:
		return errors.New("train: checkpoints every so many steps or every so long, not both")
	case c.Resume && c.CheckpointDir == "":
		return errors.New("train: resume needs a checkpoint directory")
	case c.Overwrite && c.CheckpointDir == "":
		return errors.New("train: overwrite needs a checkpoint directory")
	case c.Resume && c.Overwrite:
		return errors.New("train: resume continues the checkpoint and overwrite replaces it: give one of them")
	}
	return nil
}

// newOptimizer builds the optimizer the settings name (model.NewOptimizer,
// which package pipe calls too).
func (c *Common) newOptimizer() (model.Optimizer, error) {
	return model.NewOptimizer(c.Optimizer, c.LR, c.Momentum, c.WeightDecay)
}

// evalDue reports whether the loop evaluates after epoch: every EvalEvery
// epochs and after the last.
func (c *Common) evalDue(epoch int) bool {
	return c.EvalEvery > 0 && (epoch%c.EvalEvery == 0 || epoch == c.Epochs)
}

// checkpointDue reports whether the loop checkpoints after epoch: every
// CheckpointEvery epochs (every epoch with CheckpointSteps) and after the
// last. (With CheckpointInterval the clock decides: stepControl.)
func (c *Common) checkpointDue(epoch int) bool {
	if c.CheckpointDir == "" {
		return false
	}
	if epoch == c.Epochs || c.CheckpointSteps > 0 {
		return true
	}
	return c.CheckpointInterval == 0 && epoch%c.CheckpointEvery == 0
}

// Config is a minibatch training run's configuration (Run). It must be the
// same on every rank; Resolve checks it before the first collective.
type Config struct {
	Model model.Config
	Common

	// Sampler is SamplerSAGE (node-wise: Fanouts[h] neighbours per
	// vertex) or SamplerLADIES (layer-wise: Fanouts[h] vertices per
	// minibatch and layer; GCN only, whose blocks then carry LADIES's
	// weights).
	Sampler   Sampler
	Fanouts   []int // per hop from the seeds (output layer first); -1: all neighbours (sage)
	BatchSize int   // seeds per rank per minibatch (upper bound)
	// GlobalBatchSize, if > 0, is the number of seeds per step over all
	// ranks (upper bound) in place of BatchSize, which must then be 0:
	// Resolve sets BatchSize to ⌈GlobalBatchSize/p⌉ on p ranks, so the
	// number of optimizer steps does not depend on the rank count.
	GlobalBatchSize int `json:",omitempty"`
	// globalBatch is the GlobalBatchSize that Resolve turned into
	// BatchSize (0 if none): what the elastic schedule cuts by
	// (schedule.elastic).
	globalBatch int
	// Bulk is the number of minibatches sampled together (one sparse
	// product per layer for all of them); they are then trained one after
	// another. The minibatches do not depend on it.
	Bulk int
	// Topology is where the sampler's graph lives: TopologyReplicated
	// (every rank holds it; sampling does no communication),
	// Topology15D (rows over p/C grid rows, C copies; P = Q·A by 1.5D
	// SpGEMM, collective) or Topology2D (√p×√p blocks, SUMMA). On a
	// partitioned dataset the grid rows are the data's parts. The
	// minibatches do not depend on it.
	Topology Topology
	C        int // replication factor of Topology15D; divides the number of ranks

	// Replication is the feature replication factor c: the features are
	// partitioned over p/c parts (Data.Book has p/c parts) and held by the
	// c ranks of a grid row; a rank fetches only within its grid column
	// (one rank per part). It divides the number of ranks.
	Replication int
	// Cache is the static feature cache's policy (CachePolicies):
	// alltoall.CacheNone, CacheDegree, CacheVIP, CacheVIPRecurrence or
	// CacheSim. Each rank caches the ⌊CacheFrac·n/K⌋ remote vertices of
	// highest score (K = Data.Book.Parts), filled once at start-up.
	Cache          alltoall.CachePolicy
	CacheFrac      float64
	CacheSimEpochs int            // simulated epochs of the sampler that score CacheSim
	FeatureDType   alltoall.DType // alltoall.F32 or alltoall.F16 (features stored and sent in half precision)
	GPUFrac        float64        // fraction of the resident feature rows, hottest first, in the device tier
	Shuffle        Shuffle        // ShuffleLocal or ShuffleGlobal

	// Overlap prepares minibatches i+1 and i+2 (sampling and feature fetch,
	// on a goroutine and a duplicate communicator of their own) while
	// minibatch i computes and its gradients are summed, as SALIENT++ does.
	// The losses are the same with and without it.
	Overlap bool `json:",omitempty"`
	// OverlapCores is the fewest cores a rank needs for Overlap to run:
	// with fewer, the loader would only take the compute loop's core, and
	// Run prepares the minibatches inline instead (the same losses). A
	// rank's cores are the least of its GOMAXPROCS, its affinity mask and
	// its share of the host's CPUs among the ranks on the host; the ranks
	// take the fewest of them. 0 overlaps whatever the cores.
	OverlapCores int `json:",omitempty"`

	// Device is where the minibatch step (forward, backward, optimizer)
	// runs: DeviceCPU ("" too) or DeviceCUDA, the rank's GPU (see
	// device.go). Sampling, the feature fetch, the gradient Allreduce
	// (unless GradComm is nccl), evaluation and checkpoints stay on the
	// host. The losses agree with the CPU's to float32 rounding.
	Device Device `json:",omitempty"`

	// GradComm is how the step's gradients are summed over the ranks:
	// GradCommMPI ("" too), one Allreduce of the host copy on the world
	// communicator (with Device cuda: downloaded, summed, uploaded), or
	// GradCommNCCL, an NCCL Allreduce of the device gradients in place
	// (Device cuda only; see device.go). Both count the same bytes.
	GradComm GradComm `json:",omitempty"`

	// GradDType is the type the gradients are summed in (grad.go):
	// GradF32 ("" too), or GradBF16 or GradF16, which send half the bytes:
	// each rank rounds its gradients to 16 bits, the sums are accumulated
	// in float32 in rank order and rounded once, and the optimizer reads
	// them as float32 (the weights and its state stay float32). Not
	// GradComm nccl. It is not part of the model's state: a checkpoint
	// resumes with any GradDType.
	GradDType GradDType `json:",omitempty"`
	// GradBucketMB is the largest gradient bucket in MiB of float32
	// gradients (PyTorch DDP's bucket_cap_mb; Defaults' 4 rather than
	// DDP's 25, which would leave these models, 17 MB on
	// coauthor-physics, in one bucket): buckets are summed, from the last
	// layer's, on a goroutine while backward goes on, and stepped as they
	// arrive (grad.go); a model that fits in one bucket, or 0, sums all
	// the gradients in one Allreduce after backward. The sums are the same
	// either way. Host step only (Device cpu).
	GradBucketMB float64 `json:",omitempty"`

	// Backends open the GPU libraries that Device and GradComm need
	// (device.go); main picks them. They are not part of the run's
	// identity.
	Backends Backends `json:"-"`

	// EvalMemory bounds the input rows one chunk of layer-wise inference
	// gathers, in float32 values (the destinations' rows plus all their
	// neighbours' rows times the layer's input width). A layer computed in
	// several chunks also holds the rank's halo rows, fetched once
	// (infer.go), beside one chunk's inputs.
	EvalMemory int64

	// EvalFanouts, if set, makes evaluation sample the neighbourhoods of
	// the validation and test vertices only, in minibatches of
	// EvalBatchSize seeds per rank, with these fanouts (per hop from the
	// vertices, as Fanouts; node-wise), instead of layer-wise inference
	// over every vertex (evalsampled.go). −1 for every hop takes all
	// neighbours: exact inference restricted to the vertices' receptive
	// fields, which costs far less than every vertex's when they are a
	// small share of the graph. Positive fanouts evaluate on a sample,
	// as SALIENT does. Evaluation does not change training: neither is
	// part of a checkpoint's identity.
	EvalFanouts   []int `json:",omitempty"`
	EvalBatchSize int   `json:",omitempty"`
}

// Validate reports the first invalid setting. It checks the settings that
// do not depend on the rank count; Resolve checks the rest.
func (c *Config) Validate() error {
	if err := c.Common.Validate(); err != nil {
		return err
	}
	if err := firstErr(
		errorOf(ParseSampler(string(c.Sampler))),
		errorOf(sampling.ParseLayout(string(c.Topology))),
		errorOf(ParseCache(string(c.Cache))),
		errorOf(ParseFeatureDType(string(c.FeatureDType))),
		errorOf(ParseShuffle(string(c.Shuffle))),
		c.validateGradComm(),
		c.validateGrad(),
	); err != nil {
		return err
	}
	if err := c.validateSampling(); err != nil {
		return err
	}
	if err := c.validateDevice(); err != nil {
		return err
	}
	return c.validateFeatures()
}

// validateSampling checks the model's depth against the sampler, the
// fanouts and the batch sizes.
func (c *Config) validateSampling() error {
	switch {
	case c.Model.Layers < 1:
		return fmt.Errorf("train: %d layers; want at least 1", c.Model.Layers)
	case len(c.Fanouts) != c.Model.Layers:
		return settingErrorf("train: %d fanouts for %d layers; give one per layer (e.g. %s 25,10)", len(c.Fanouts), c.Model.Layers, SettingFanouts)
	case c.GlobalBatchSize > 0 && c.BatchSize != 0:
		return settingErrorf("train: give a batch size per rank (%d, %s) or a global one (%d, %s), not both", c.BatchSize, SettingBatchSize, c.GlobalBatchSize, SettingGlobalBatchSize)
	case c.GlobalBatchSize < 0:
		return fmt.Errorf("train: global batch size %d < 1", c.GlobalBatchSize)
	case c.BatchSize < 1 && c.GlobalBatchSize == 0:
		return fmt.Errorf("train: batch size %d < 1 (and no global batch size)", c.BatchSize)
	case c.Bulk < 1:
		return fmt.Errorf("train: bulk %d < 1 (minibatches sampled together)", c.Bulk)
	case c.C < 1:
		return fmt.Errorf("train: replication factor %d < 1", c.C)
	case c.Sampler == SamplerLADIES && c.Model.Kind != model.KindGCN:
		return settingErrorf("train: the %s sampler weights GCN's propagation matrix; use %s %s (not %s)", SamplerLADIES, SettingModel, model.KindGCN, c.Model.Kind)
	case c.EvalMemory < 1:
		return fmt.Errorf("train: eval memory %d < 1", c.EvalMemory)
	case c.EvalFanouts != nil && len(c.EvalFanouts) != c.Model.Layers:
		return settingErrorf("train: %d evaluation fanouts for %d layers; give one per layer (e.g. %s -1,-1 for all neighbours)", len(c.EvalFanouts), c.Model.Layers, SettingEvalFanouts)
	case c.EvalFanouts != nil && c.EvalBatchSize < 1:
		return settingErrorf("train: evaluation batch size %d < 1 (%s)", c.EvalBatchSize, SettingEvalBatchSize)
	case c.EvalFanouts != nil && c.Sampler == SamplerLADIES && c.Topology != TopologyReplicated:
		return settingErrorf("train: %s samples node-wise; with the %s sampler it needs %s %s (the distributed topology holds LADIES's weighted rows)", SettingEvalFanouts, SamplerLADIES, SettingTopology, TopologyReplicated)
	}
	if c.EvalFanouts != nil {
		if err := checkFanouts("train: evaluation", c.EvalFanouts, sampling.KindSAGE); err != nil {
			return err
		}
	}
	return checkFanouts("train", c.Fanouts, c.Sampler)
}

// checkFanouts checks the fanouts of sampler kind for the command cmd
// (train, sample), which prefixes the error: each positive, or −1 (all
// neighbours) but with ladies, which samples a fixed number of vertices
// per layer.
func checkFanouts(cmd string, fanouts []int, kind sampling.Kind) error {
	for _, f := range fanouts {
		if f == 0 {
			return fmt.Errorf("%s: fanout 0 samples nothing; use a positive fanout or -1 for all neighbours", cmd)
		}
		if f < -1 {
			return fmt.Errorf("%s: fanout %d: give a positive fanout, or -1 (only -1) for all neighbours", cmd, f)
		}
		if f < 0 && kind == sampling.KindLADIES {
			return fmt.Errorf("%s: ladies samples a fixed number of vertices per layer; fanout %d must be positive", cmd, f)
		}
	}
	return nil
}

// validateFeatures checks the feature store's settings.
func (c *Config) validateFeatures() error {
	switch {
	case c.Replication < 1:
		return fmt.Errorf("train: feature replication %d < 1", c.Replication)
	case !(c.CacheFrac >= 0) || math.IsInf(c.CacheFrac, 0):
		return fmt.Errorf("train: cache fraction %v must be a finite number ≥ 0", c.CacheFrac)
	case c.Cache == alltoall.CacheNone && c.CacheFrac > 0:
		return settingErrorf("train: cache fraction %v with cache policy %s; choose %s %s, %s or %s", c.CacheFrac, alltoall.CacheNone, SettingCache, alltoall.CacheDegree, alltoall.CacheVIP, alltoall.CacheSim)
	case (c.Cache == alltoall.CacheVIP || c.Cache == CacheVIPRecurrence) && c.Sampler != SamplerSAGE:
		return settingErrorf("train: the %s cache models the node-wise sampler; with %s %s use %s %s or %s", c.Cache, SettingSampler, c.Sampler, SettingCache, alltoall.CacheSim, alltoall.CacheDegree)
	case c.Cache == alltoall.CacheSim && c.CacheSimEpochs < 1:
		return fmt.Errorf("train: %d simulated epochs for the sim cache; want at least 1", c.CacheSimEpochs)
	case !(c.GPUFrac >= 0 && c.GPUFrac <= 1):
		return fmt.Errorf("train: GPU fraction %v outside [0, 1]", c.GPUFrac)
	}
	return nil
}

// Resolve validates c for p ranks and returns it resolved: a
// GlobalBatchSize G becomes BatchSize ⌈G/p⌉ (and GlobalBatchSize 0, so
// that resolving again changes nothing). Run and FetchSweep resolve their
// config themselves; a caller resolves it to see the batch size a run
// takes, or to check it before loading data.
func (c Config) Resolve(p int) (Config, error) {
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	if c.GlobalBatchSize > 0 {
		c.BatchSize, c.GlobalBatchSize, c.globalBatch = (c.GlobalBatchSize+p-1)/p, 0, c.GlobalBatchSize
	}
	return c, nil
}

// errorOf returns the error of a Parse function's result.
func errorOf[T any](_ T, err error) error { return err }

// firstErr returns the first non-nil error.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
