package train

import (
	"gnnmpi/alltoall"
	"gnnmpi/model"
)

// Settings are the settings of one kind of training: Minibatch, Run's
// configuration, in ModeMinibatch, and Full, RunFull's, in the full-graph
// modes; the other is the zero value.
type Settings struct {
	Mode      Mode
	Minibatch Config
	Full      FullConfig
}

// Common returns the settings both kinds of training share, those of
// s.Mode.
func (s *Settings) Common() *Common {
	if s.Mode == ModeMinibatch {
		return &s.Minibatch.Common
	}
	return &s.Full.Common
}

// Defaults returns every default of training a model of kind in mode, the
// one table of them that the library and the command line read: with the
// minibatch defaults `gnnmpi train --data data/cora --model KIND` reaches
// the published accuracy (README, results); full-graph training defaults
// to 32 layers of width 100 (model.DefaultDeep), Adam, and all of
// GNNPipe's staleness remedies on (snapshot every 23 epochs, as in the
// original). The shared settings (Common) are the same in every mode.
//
// kind need not be valid for mode (model.MinibatchKinds, model.DeepKinds);
// Validate reports it. An unknown mode gives the minibatch defaults with
// Mode set to it.
func Defaults(kind model.Kind, mode Mode) Settings {
	common := Common{
		FeatureNorm: FeatureNormAuto, Epochs: 100,
		Optimizer: OptimizerAdam, LR: 0.01, WeightDecay: 5e-4,
		Seed: 1, EvalEvery: 1, Select: SelectAcc, CheckpointEvery: 10,
	}
	switch mode {
	case ModeGraph, ModePipe, ModeHybrid:
		fc := FullConfig{
			Common: common,
			Mode:   mode, Pipelines: 1, Chunks: 4, ChunkMethod: ChunkMetis,
			Model: model.DefaultDeep(kind), ShuffleChunks: true, ClearGrads: true, SnapshotEvery: 23,
		}
		switch mode {
		case ModeGraph:
			fc.Chunks = 1 // every part whole
		case ModeHybrid:
			fc.Pipelines = 2
		}
		return Settings{Mode: mode, Full: fc}
	}
	c := Config{
		Model:       model.Config{Kind: kind, Layers: 2, Hidden: 128, Heads: 1, OutHeads: 1, Dropout: 0.5},
		Common:      common,
		Sampler:     SamplerSAGE,
		Fanouts:     DefaultFanouts(2),
		BatchSize:   32,
		Bulk:        1,
		Topology:    TopologyReplicated,
		C:           1,
		Replication: 1,
		Cache:       alltoall.CacheNone, CacheSimEpochs: 2, FeatureDType: alltoall.F32,
		Shuffle: ShuffleLocal,
		Overlap: true, OverlapCores: 2, // a loader beside the compute loop needs a core of its own (docs/training.md, Overlap)
		Device:     DeviceCPU,
		GradComm:   GradCommMPI,
		EvalMemory: 256 << 20,
		// Evaluation by sampling (EvalFanouts, off by default): seeds per
		// rank per minibatch.
		EvalBatchSize: 4096,
	}
	c.GradDType, c.GradBucketMB = GradF32, 0 // one sum after backward: buckets cost time where no core is free for them (docs/training.md)
	switch kind {
	case model.KindGCN:
		c.Model.Hidden = 64
	case model.KindGAT:
		c.Model.Hidden, c.Model.Heads, c.Model.OutHeads = 8, 8, 1
		c.Model.Dropout, c.Model.AttnDropout = 0.6, 0.6
		c.LR = 0.005
		c.Epochs = 200
	}
	return Settings{Mode: mode, Minibatch: c}
}

// DefaultFanouts returns the default fanouts of a minibatch model of
// layers layers, output layer first: 25 and 10, then 10 for every further
// hop (nil for layers < 1).
func DefaultFanouts(layers int) []int {
	fo := make([]int, 0, max(layers, 0))
	for h := range max(layers, 0) {
		fo = append(fo, [2]int{25, 10}[min(h, 1)])
	}
	return fo
}
