package train

import (
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/tier"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/pipe"
	"gnnmpi/sparse"
)

// Final's records carry the result, the configuration as run and the
// settings as asked for, and derive the per-epoch means from the epochs.
func TestFinalMinibatch(t *testing.T) {
	cfg := Defaults(model.KindSAGE, ModeMinibatch).Minibatch
	cfg.FeatureNorm = FeatureNormRow // as applied
	d := &Data{SplitName: "s", Reciprocity: 0.5, TrainTotal: 3}
	d.Split.Train = []int64{1} // this rank's share of a partitioned dataset's 3
	info := RunInfo{Path: "data/x", Load: LoadOptions{Book: "b.book", Symmetrize: true},
		FeatureNorm: FeatureNormAuto, GlobalBatchSize: 64, BLAS: "gonum"}
	for _, tc := range []struct {
		name          string
		res           Result
		batches       *int
		fetchRows     *float64
		gpuReads      *metrics.GPUReads
		criticalPhase map[string]float64
	}{
		{name: "no epochs"},
		{
			name: "two epochs",
			res: Result{Epochs: []EpochStats{
				{Epoch: 1, Seconds: 2, Batches: 4, FetchRows: 10, CriticalPhaseSeconds: map[string]float64{metrics.PhaseCompute: 2}},
				{Epoch: 2, Seconds: 1, Batches: 5, FetchRows: 30, CriticalPhaseSeconds: map[string]float64{metrics.PhaseCompute: 1}},
			}, GPUReads: &tier.Reads{DeviceRows: 7}},
			batches:       new(5),    // the last epoch's
			fetchRows:     new(20.0), // the mean
			gpuReads:      &metrics.GPUReads{DeviceRows: 7},
			criticalPhase: map[string]float64{metrics.PhaseCompute: 1}, // the lower median epoch by time
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.res.Stores = []StoreStats{{Bytes: 1, OwnRows: 2}}
			got := tc.res.Final(cfg, d, info)
			require.Equal(t, tc.batches, got.BatchesPerRank)
			require.Equal(t, tc.fetchRows, got.FetchRowsPerEpoch)
			require.Equal(t, tc.gpuReads, got.GPUReads)
			require.Equal(t, tc.criticalPhase, got.MedianCriticalPhaseS)
			require.Equal(t, len(tc.res.Epochs), got.EpochsRun)
			require.True(t, got.Final)
			require.Equal(t, []metrics.FeatureStore{{Bytes: 1, OwnRows: 2}}, got.FeatureStores)
			require.Equal(t, 3, got.TrainVertices)

			c := got.Config
			require.Equal(t, metrics.Common{Data: "data/x", Split: "s", Partition: "b.book", FeatureNorm: "row", FeatureNormFlag: "auto",
				Symmetrize: true, Reciprocity: 0.5, FeatureFormat: "dense", Epochs: cfg.Epochs, Optimizer: string(cfg.Optimizer),
				LR: cfg.LR, WeightDecay: cfg.WeightDecay, Momentum: cfg.Momentum, Seed: cfg.Seed, EvalEvery: cfg.EvalEvery,
				Select: string(cfg.Select), BLAS: "gonum"}, c.Common)
			require.Equal(t, 64, c.GlobalBatchSize)
			require.Equal(t, cfg.BatchSize, c.BatchSize)
			require.Equal(t, string(cfg.Model.Kind), c.Model.Kind)
			require.Equal(t, cfg.Model.Hidden, c.Model.Hidden)
		})
	}
}

func TestFinalFull(t *testing.T) {
	cfg := Defaults(model.KindGCNII, ModeHybrid).Full
	d := &Data{Adj: &sparse.CSR{NRows: 4, NCols: 4}, FeatCSR: &sparse.Matrix[float32]{NRows: 4}}
	res := FullResult{Layout: pipe.Layout{Stages: 2, Pipelines: 3}, Analytical: map[string]int64{metrics.PhaseHalo: 9}, HaloRows: 5, StateBytes: []int64{1}}
	got := res.Final(cfg, d, RunInfo{})
	require.Equal(t, 2, got.Config.Stages)
	require.Equal(t, 3, got.Config.Pipelines)
	require.Equal(t, string(ModeHybrid), got.Config.Mode)
	require.Equal(t, cfg.Model.Alpha, got.Config.Model.Alpha)
	require.Equal(t, string(graph.FeatureCSR), got.Config.FeatureFormat)
	require.Equal(t, string(PartitionMetis), got.Config.Partition, "the unset partition is metis")
	require.Equal(t, map[string]int64{metrics.PhaseHalo: 9}, got.AnalyticalBytesPerEpoch)
	require.Equal(t, int64(5), got.HaloRows)
	require.Equal(t, int64(4), got.Vertices)
}
