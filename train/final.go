package train

import (
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// RunInfo is what the final record of a run reports besides its result
// and its configuration as run: where the data came from and how it was
// loaded, the settings as asked for where the run resolved them, and the
// name of the BLAS.
type RunInfo struct {
	Path string      // the dataset as Load was given it
	Load LoadOptions // as Load was given them
	// FeatureNorm is Common.FeatureNorm as asked for (FeatureNormAuto
	// before FeatureNorm.Resolve).
	FeatureNorm FeatureNorm
	// GlobalBatchSize is Config.GlobalBatchSize as asked for, before
	// Config.Resolve; 0 when the batch size was per rank.
	GlobalBatchSize int
	BLAS            string // the BLAS's name
}

// Final returns the final metrics record of minibatch training (Run):
// r, cfg as resolved and run (its FeatureNorm as applied), d and info.
// The Run of the record is the caller's to set (metrics.Final).
func (r *Result) Final(cfg Config, d *Data, info RunInfo) *metrics.MinibatchFinal {
	out := &metrics.MinibatchFinal{
		Training: r.training(),
		Config: metrics.MinibatchConfig{
			Common: cfg.Common.record(d, info),
			Model:  minibatchModelRecord(cfg.Model), Sampler: string(cfg.Sampler), Bulk: cfg.Bulk,
			Topology: string(cfg.Topology), C: cfg.C, Fanouts: cfg.Fanouts, Replication: cfg.Replication,
			Cache: string(cfg.Cache), CacheFrac: cfg.CacheFrac, FeatureDType: string(cfg.FeatureDType), GPUFrac: cfg.GPUFrac,
			BatchSize: cfg.BatchSize, GlobalBatchSize: info.GlobalBatchSize, Shuffle: string(cfg.Shuffle),
			Overlap: r.Overlap, Device: string(cfg.Device), GradComm: string(cfg.GradComm),
		},
		RemoteRowsPerEpoch: r.RemoteRowsPerEpoch, StateBytes: r.Memory, TrainVertices: d.TrainTotal,
		MedianCriticalPhaseS: medianCriticalPhaseSeconds(r.Epochs),
	}
	for _, st := range r.Stores {
		out.FeatureStores = append(out.FeatureStores, metrics.FeatureStore(st))
	}
	if n := len(r.Epochs); n > 0 {
		batches := r.Epochs[n-1].Batches
		var rows float64
		for _, e := range r.Epochs {
			rows += float64(e.FetchRows) / float64(n)
		}
		out.BatchesPerRank, out.FetchRowsPerEpoch = &batches, &rows
	}
	if r.GPUReads != nil {
		g := metrics.GPUReads(*r.GPUReads)
		out.GPUReads = &g
	}
	out.DataPath, out.InferDevice = r.DataPath, r.InferDevice
	if cfg.EvalFanouts != nil {
		out.Config.EvalFanouts, out.Config.EvalBatchSize = cfg.EvalFanouts, cfg.EvalBatchSize
	}
	return out
}

// Final returns the final metrics record of full-graph training (RunFull):
// r, cfg as run (its FeatureNorm as applied), d and info. The Run of the
// record is the caller's to set (metrics.Final).
func (r *FullResult) Final(cfg FullConfig, d *Data, info RunInfo) *metrics.FullFinal {
	return &metrics.FullFinal{
		Training: r.training(),
		Config: metrics.FullConfig{
			Common: cfg.Common.record(d, info),
			Model:  fullModelRecord(cfg.Model), Mode: string(cfg.Mode), Stages: r.Layout.Stages, Pipelines: r.Layout.Pipelines,
			Chunks: cfg.Chunks, ChunkPartition: string(cfg.ChunkMethod),
			ShuffleChunks: cfg.ShuffleChunks, ClearGrads: cfg.ClearGrads, SnapshotEvery: cfg.SnapshotEvery,
		},
		AnalyticalBytesPerEpoch: r.Analytical, HaloRows: r.HaloRows, StateBytes: r.StateBytes,
		Vertices: d.NumNodes(),
	}
}

// training returns what the final record of either kind of training
// reports of r.
func (r *Result) training() metrics.Training {
	return metrics.Training{
		Final: true, BestEpoch: r.BestEpoch, BestValAcc: r.BestValAcc, TestAcc: r.TestAcc,
		MedianEpochS: r.MedianEpochS, BytesPerEpoch: r.BytesPerEpoch, Params: r.NumParams,
		EpochsRun: len(r.Epochs), PeakRSSBytes: r.PeakRSS, PeakAnonBytes: r.PeakAnon, PeakLiveHeapBytes: r.PeakLiveHeap,
		MedianPhaseS: medianPhaseSeconds(r.Epochs),
	}
}

// record returns the configuration both kinds of training report: c as
// run (its FeatureNorm as applied), the data d and info.
func (c *Common) record(d *Data, info RunInfo) metrics.Common {
	return metrics.Common{
		Data: info.Path, Split: d.SplitName, Partition: info.Load.PartitionSpec(),
		FeatureNorm: string(c.FeatureNorm), FeatureNormFlag: string(info.FeatureNorm),
		Symmetrize: info.Load.Symmetrize, Reciprocity: d.Reciprocity, FeatureFormat: string(d.FeatureFormat()),
		Epochs: c.Epochs, Optimizer: string(c.Optimizer), LR: c.LR, WeightDecay: c.WeightDecay, Momentum: c.Momentum,
		Seed: c.Seed, EvalEvery: c.EvalEvery, Select: string(c.Select), BLAS: info.BLAS,
	}
}

// minibatchModelRecord returns m as the metrics record reports it.
func minibatchModelRecord(m model.Config) metrics.MinibatchModel {
	return metrics.MinibatchModel{Kind: string(m.Kind), In: m.In, Hidden: m.Hidden, Out: m.Out, Layers: m.Layers,
		Heads: m.Heads, OutHeads: m.OutHeads, Dropout: m.Dropout, Normalize: m.Normalize, AttnDropout: m.AttnDropout}
}

// fullModelRecord returns m as the metrics record reports it.
func fullModelRecord(m model.DeepConfig) metrics.FullModel {
	return metrics.FullModel{Kind: string(m.Kind), In: m.In, Hidden: m.Hidden, Out: m.Out, Layers: m.Layers,
		Dropout: m.Dropout, Alpha: m.Alpha, Lambda: m.Lambda}
}

// FeatureFormat returns how d holds its features: graph.FeatureDense or
// graph.FeatureCSR.
func (d *Data) FeatureFormat() graph.FeatureFormat {
	if d.FeatCSR != nil {
		return graph.FeatureCSR
	}
	return graph.FeatureDense
}
