package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/alltoall"
	"gnnmpi/internal/memlimit"
	"gnnmpi/model"
	"gnnmpi/pipe"
)

// Every part of estimateFootprint against a count by hand on small
// configurations (the derivation beside each number).
func TestEstimateFootprint(t *testing.T) {
	sage := model.Config{Kind: model.KindSAGE, In: 100, Hidden: 8, Out: 3, Layers: 2}
	// SAGE: lin_l, lin_r and a bias per layer: 2·100·8+8 + 2·8·3+3.
	const sageParams = 1608 + 51
	base := Config{Model: sage, Fanouts: []int{2, 3}, BatchSize: 4}
	base.Optimizer, base.EvalEvery, base.EvalMemory = model.OptimizerAdam, 1, 1000

	withCfg := func(f func(*Config)) Config {
		c := base
		c.Fanouts = append([]int(nil), base.Fanouts...)
		f(&c)
		return c
	}
	sparse := featShape{rows: 10, cols: 100, nnz: 50} // 60 bytes a row
	dense := featShape{rows: 10, cols: 100, nnz: -1}  // 400 bytes a row
	cases := []struct {
		name string
		cfg  Config
		feat featShape
		norm FeatureNorm
		want footprint
	}{{
		// Hops (sampledRows, n = 20): 4 seeds, 4 + ⌈1.1·16·(1 − 0.95^8)⌉ =
		// 4 + ⌈5.92⌉ = 10, 10 + ⌈1.1·10·(1 − 0.95^30)⌉ = 10 + ⌈8.64⌉ = 19
		// vertices; every draw new (Slack): min(4·3, 20) = 12, min(12·4,
		// 20) = 20. Layer 0 (dst 10, projected input 8 wide, out 8; its
		// inputs get no gradient): 10·(2·8·4+4·8·8) = 3200 bytes of
		// activations (12·320 = 3840 in Slack), 10·20·3 = 600 of edges
		// (720); layer 1 (dst 4, in 8, out 3): 4·(16+12)·8 = 896 and
		// 4·20·2 = 160. Inputs 19 rows · 60 (20 in Slack). Held through
		// inference: the inputs and edges.
		// Inference: 10 rows·(8+3)·4 = 440 (the outputs of layers 0 and
		// 1), chunk min(4000, 60·20) twice.
		name: "sparse adam row-normalised",
		cfg:  base, feat: sparse, norm: FeatureNormRow,
		want: footprint{
			Model: sageParams * 4 * 6,
			Norm:  60*10 + 8*11,
			Store: 8*50 + 8*10,
			Cache: 60 * 2,
			Batch: 3200 + 896 + 19*60 + 600 + 160,
			Held:  19*60 + 600 + 160,
			Infer: 440 + 2*1200,
			Slack: 3840 + 896 + 20*60 + 720 + 160,
		},
	}, {
		// The input layer's width is the features' (100): layer 0 acts
		// 10·(2·100·4+4·8·8) = 10560 (Slack: 12·1056 = 12672); every
		// slot holds its inputs and edges, one slot's inputs stay. Inference chunk: min(4000, max(1000/8,
		// 4 Mi)=1000 values·4, 400·20) = 4000, twice. The copy is the
		// normalised matrix, 10·100·4.
		name: "dense sgd momentum, copied normalisation, overlap",
		cfg: withCfg(func(c *Config) {
			c.Optimizer, c.Momentum, c.Overlap = model.OptimizerSGD, 0.9, true
		}),
		feat: dense, norm: FeatureNormRow,
		want: footprint{
			Model: sageParams * 4 * 5,
			Norm:  10 * 100 * 4,
			Store: 10 * 400,
			Cache: 2 * 400,
			Batch: 10560 + 896 + (prefetch+1)*(19*400+600+160),
			Held:  19*400 + (prefetch+1)*(600+160),
			Infer: 440 + 2*4000,
			Slack: 12672 + 896 + (prefetch+1)*(20*400+720+160),
		},
	}, {
		name: "dense owned rows normalised in place, no evaluation",
		cfg:  withCfg(func(c *Config) { c.EvalEvery = 0 }),
		feat: featShape{rows: 10, cols: 100, nnz: -1, owned: true}, norm: FeatureNormRow,
		want: footprint{
			Model: sageParams * 4 * 6,
			Store: 10 * 400,
			Cache: 2 * 400,
			Batch: 10560 + 896 + 19*400 + 600 + 160,
			Held:  19*400 + 600 + 160,
			Slack: 12672 + 896 + 20*400 + 720 + 160,
		},
	}, {
		// f16 rows: 2 bytes a column; no normalisation asked for.
		name: "dense f16 unnormalised",
		cfg:  withCfg(func(c *Config) { c.FeatureDType = alltoall.F16 }),
		feat: dense, norm: FeatureNormNone,
		want: footprint{
			Model: sageParams * 4 * 6,
			Store: 10 * 200,
			Cache: 2 * 200,
			Batch: 10560 + 896 + 19*200 + 600 + 160,
			Held:  19*200 + 600 + 160,
			Infer: 440 + 2*min(4000, 200*20),
			Slack: 12672 + 896 + 20*200 + 720 + 160,
		},
	}, {
		// GAT: the hidden layer is heads·hidden = 2·8 wide. Params: per
		// layer W (in·heads·out), a_src and a_dst (heads·out each) and a
		// bias (heads·out when concatenated, out when averaged): 100·16 +
		// 3·16 and 16·3 + 3·3 (one output head, averaged: bias 3).
		// Layer 0 acts 10·(2·16·4+4·16·8) (12· in Slack), layer 1
		// 4·(2·16+4·3)·8; inference
		// rows 16 + 3 wide.
		name: "sparse gat heads",
		cfg: withCfg(func(c *Config) {
			c.Model = model.Config{Kind: model.KindGAT, In: 100, Hidden: 8, Out: 3, Layers: 2, Heads: 2, OutHeads: 1}
		}),
		feat: sparse, norm: FeatureNormNone,
		want: footprint{
			Model: (100*16 + 3*16 + 16*3 + 3*3) * 4 * 6,
			Store: 8*50 + 8*10,
			Cache: 60 * 2,
			Batch: 10*(2*16*4+4*16*8) + 4*(2*16+4*3)*8 + 19*60 + 600 + 160,
			Held:  19*60 + 600 + 160,
			Infer: 10*(16+3)*4 + 2*1200,
			Slack: 12*(2*16*4+4*16*8) + 4*(2*16+4*3)*8 + 20*60 + 720 + 160,
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := estimateFootprint(tc.cfg, tc.feat, 20, 0, 10, 0, 2, tc.norm)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			// Inference runs after releaseTraining: beside Held, not Batch.
			require.Equal(t, tc.want.Model+tc.want.Norm+tc.want.Store+tc.want.Cache+max(tc.want.Batch, tc.want.Held+tc.want.Infer), got.Total())
			// pieces is what SAGE holds when its halo of 3 rows is
			// fetched in pieces of at most limit values, as it is when
			// another rank's halo is over the bound: a piece and a sum of
			// the layer's input width for each of the 10 vertices (dense
			// inputs: a hidden layer's, or dense features); GAT fetches
			// each chunk's inputs.
			pieces := func(limit int64) (b int64) {
				if tc.cfg.EvalEvery == 0 || tc.cfg.Model.Kind == model.KindGAT {
					return 0
				}
				fin := tc.feat.cols
				for l, w := range layerWidths(tc.cfg.Model) {
					if l > 0 || tc.feat.nnz < 0 {
						b = max(b, (10*fin+min(limit, 3*fin))*4)
					}
					fin = w
				}
				return b
			}
			// Halo rows add one row each at the widest layer input: the
			// features' row (plus its offset) or a hidden output (every
			// case's halo fits in its chunk bound), or the pieces if more.
			halo, err := estimateFootprint(tc.cfg, tc.feat, 20, 0, 10, 3, 2, tc.norm)
			require.NoError(t, err)
			widest := int64(tc.feat.rowBytes(tc.cfg.FeatureDType)) + 8
			for _, w := range layerWidths(tc.cfg.Model)[:tc.cfg.Model.Layers-1] {
				widest = max(widest, 4*w)
			}
			require.LessOrEqual(t, 3*tc.feat.cols, tc.cfg.EvalMemory)
			if tc.cfg.EvalEvery == 0 {
				widest = 0 // no inference, no halo
			}
			require.Equal(t, max(3*widest, pieces(tc.cfg.EvalMemory)), halo.Halo)
			halo.Halo = 0
			require.Equal(t, got, halo)
			// A halo over the chunk bound (2 values) is not held whole:
			// SAGE fetches it in pieces, GAT's chunks their own inputs.
			small := tc.cfg
			small.EvalMemory = 2
			over, err := estimateFootprint(small, tc.feat, 20, 0, 10, 3, 2, tc.norm)
			require.NoError(t, err)
			require.Equal(t, pieces(2), over.Halo)
		})
	}
}

// sampledRows against uniform draws: hop h's r destinations and r·k
// vertices drawn uniformly from n (a Monte Carlo mean over 200 batches,
// at r the bound's own previous hop). The bound holds the mean within the
// margin, exceeds it by at most the margin, never exceeds every draw
// being new (nor n), and is n for a fanout of −1 (all neighbours).
func TestSampledRows(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int64
		batch   int
		fanouts []int
	}{
		{"physics-sized", 34493, 1024, []int{15, 10}},
		{"amazon-sized", 13752, 1024, []int{15, 10}},
		{"large graph, draws far below n", 1_000_000, 1024, []int{10, 5}},
		{"batch above n", 50, 100, []int{3}},
		{"all neighbours", 1000, 10, []int{-1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{BatchSize: tc.batch, Fanouts: tc.fanouts}
			got := sampledRows(cfg, tc.n, true)
			every := sampledRows(cfg, tc.n, false)
			require.Len(t, got, len(tc.fanouts)+1)
			require.Equal(t, min(int64(tc.batch), tc.n), got[0])
			rng := rand.New(rand.NewPCG(1, 2))
			seen := make([]int32, tc.n)
			for h, k := range tc.fanouts {
				require.LessOrEqual(t, got[h+1], every[h+1])
				require.LessOrEqual(t, got[h+1], tc.n)
				if k < 0 {
					require.Equal(t, tc.n, got[h+1])
					continue
				}
				r := got[h]
				const trials = 200
				var hits int64
				for trial := range int32(trials) {
					for v := range r { // the destinations, 0..r−1
						seen[v] = trial + 1
					}
					for range r * int64(k) {
						if v := rng.Int64N(tc.n); seen[v] != trial+1 {
							seen[v] = trial + 1
							hits++
						}
					}
				}
				mean := float64(hits) / trials
				bound := float64(got[h+1] - r)
				if got[h+1] < every[h+1] && got[h+1] < tc.n { // not capped
					require.GreaterOrEqual(t, bound, mean*1.05, "hop %d: the margin over the mean", h)
					require.LessOrEqual(t, bound, mean*distinctMargin*1.01+1, "hop %d: no more than the margin", h)
				} else {
					require.GreaterOrEqual(t, bound, mean, "hop %d", h)
				}
			}
		})
	}
}

// A model too large to count saturates instead of wrapping, so the check
// refuses it; an invalid model is an error.
func TestEstimateFootprintSaturatesAndRejects(t *testing.T) {
	cfg := Config{Model: model.Config{Kind: model.KindSAGE, In: 8415, Hidden: 100_000_000, Out: 5, Layers: 2}, Fanouts: []int{15, 10}, BatchSize: 1024}
	cfg.Optimizer, cfg.EvalEvery, cfg.EvalMemory = model.OptimizerAdam, 1, 1<<30
	f, err := estimateFootprint(cfg, featShape{rows: 34493, cols: 8415, nnz: 11_000_000}, 34493, 0, 34493, 0, 0, FeatureNormRow)
	require.NoError(t, err)
	require.Greater(t, f.Model, int64(1)<<43, "2·8415·1e8 weights, 24 bytes each")

	// 2·2e9·2e9 weights fit an int64, their 24 bytes each do not.
	cfg.Model.In, cfg.Model.Hidden = 2_000_000_000, 2_000_000_000
	f, err = estimateFootprint(cfg, featShape{rows: 10, cols: 2_000_000_000, nnz: 100}, 10, 0, 10, 0, 0, FeatureNormNone)
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), f.Model)
	require.Equal(t, int64(math.MaxInt64), f.Total())

	cfg.Model.Heads = 1_000_000
	cfg.Model.Kind, cfg.Model.Hidden = model.KindGAT, 8
	f, err = estimateFootprint(cfg, featShape{rows: 10, cols: 8415, nnz: 100}, 10, 0, 10, 0, 0, FeatureNormNone)
	require.NoError(t, err)
	require.Greater(t, f.Model, int64(8415*8_000_000*24-1), "W alone: 8415·1e6·8 weights")

	cfg.Model.Layers = 0
	_, err = estimateFootprint(cfg, featShape{rows: 10, cols: 8415, nnz: 100}, 10, 0, 10, 0, 0, FeatureNormNone)
	require.Error(t, err)
}

// The full-graph check decides on the rank alone: the weights (W, G and
// Adam's two moments) and a hidden-wide row per vertex and layer.
func TestCheckFullFootprint(t *testing.T) {
	defer func(f func() memlimit.Budget) { available = f }(available)
	pc := pipe.Config{Model: model.DeepConfig{Kind: model.ConvGCNII, In: 10, Hidden: 4, Out: 2, Layers: 3, Alpha: 0.1, Lambda: 0.5}, Optimizer: model.OptimizerAdam}
	// (10·4+4) + (4·2+2) + 3·4·4 = 102 weights · 16 bytes; 50·4·4·3 of activations.
	need := int64(102*16 + 50*4*4*3)
	available = func() memlimit.Budget { return memlimit.Budget{Bytes: need, Source: "test limit"} }
	require.NoError(t, checkFullFootprint(1, pc, 50))
	available = func() memlimit.Budget { return memlimit.Budget{Bytes: need - 1, Source: "test limit"} }
	err := checkFullFootprint(1, pc, 50)
	require.ErrorContains(t, err, "rank 1: out of memory: full-graph training needs")
	require.ErrorContains(t, err, "test limit")
}

// heapLimit: 1.5 × state + heapSlack (the minibatches' bytes, but at most
// 300 MB less the other resident bytes and 32 MiB, and at least
// 96 MiB) less the mapped bytes, never above the current limit, and the
// mapped bytes ignored when they would leave less than the slack.
func TestHeapLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name                      string
		state                     []int64
		mapped, other, batch, cur int64
		want                      int64
	}{
		{"steps within the target", []int64{300 * mib, 400 * mib}, 0, 50 * mib, 160 * mib, math.MaxInt64, 1050*mib + 160*mib},
		{"steps beyond the target", []int64{30 * mib, 50 * mib}, 0, 30 * mib, 1000 * mib, math.MaxInt64, 120*mib + 300_000_000 - 62*mib},
		{"small steps", []int64{30 * mib, 50 * mib}, 0, 30 * mib, 110 * mib, math.MaxInt64, 120*mib + 110*mib},
		{"steps below the least slack", []int64{160 * mib}, 0, 30 * mib, 80 * mib, math.MaxInt64, 240*mib + 96*mib},
		{"nothing else resident", []int64{10 * mib}, 0, 0, 1000 * mib, math.MaxInt64, 15*mib + 300_000_000 - 32*mib},
		{"other beyond the target", []int64{10 * mib}, 0, 400 * mib, 200 * mib, math.MaxInt64, 15*mib + 96*mib},
		{"topology mapped", []int64{100 * mib, 100 * mib}, 100 * mib, 10 * mib, 1000 * mib, math.MaxInt64, 300*mib + 300_000_000 - 42*mib - 100*mib},
		{"lower already", []int64{100 * mib}, 0, 0, 0, 200 * mib, 200 * mib},
		{"mapped beyond the state", []int64{10 * mib}, 1000 * mib, 300 * mib, 200 * mib, math.MaxInt64, 15*mib + 96*mib},
		{"saturated", []int64{math.MaxInt64, 1}, 0, 0, 0, math.MaxInt64, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, heapLimit(tc.state, tc.mapped, tc.other, tc.batch, tc.cur))
		})
	}
}

// With evaluation by sampling, inference's estimate is one evaluation
// minibatch: no halo, independent of the vertices layer-wise inference
// would compute, growing with the batch, all neighbours counted as the
// mean degree's draws, and far below layer-wise inference's on a graph
// of papers100M's size.
func TestEstimateFootprintEvalFanouts(t *testing.T) {
	cfg := Config{Model: model.Config{Kind: model.KindSAGE, In: 128, Hidden: 128, Out: 172, Layers: 2}, Fanouts: []int{15, 10}, BatchSize: 1024}
	cfg.Optimizer, cfg.EvalEvery, cfg.EvalMemory = model.OptimizerAdam, 1, 64<<20
	feat := featShape{rows: 100_000_000, cols: 128, nnz: -1}
	const n, deg = 100_000_000, 15.0
	layerwise, err := estimateFootprint(cfg, feat, n, deg, n, 50_000, 0, FeatureNormNone)
	require.NoError(t, err)
	cfg.EvalFanouts, cfg.EvalBatchSize = []int{-1, -1}, 4096
	all, err := estimateFootprint(cfg, feat, n, deg, n, 50_000, 0, FeatureNormNone)
	require.NoError(t, err)
	require.Zero(t, all.Halo)
	require.Less(t, all.Infer, layerwise.Infer/2)
	fewer, err := estimateFootprint(cfg, feat, n, deg, n/2, 0, 0, FeatureNormNone)
	require.NoError(t, err)
	require.Equal(t, all.Infer, fewer.Infer, "the vertices layer-wise inference computes do not count")
	cfg.EvalFanouts = []int{15, 15}
	fifteen, err := estimateFootprint(cfg, feat, n, deg, n, 50_000, 0, FeatureNormNone)
	require.NoError(t, err)
	require.Equal(t, all.Infer, fifteen.Infer, "-1 counts as the mean degree's draws")
	cfg.EvalBatchSize = 8192
	bigger, err := estimateFootprint(cfg, feat, n, deg, n, 50_000, 0, FeatureNormNone)
	require.NoError(t, err)
	require.Greater(t, bigger.Infer, fifteen.Infer)
	require.Equal(t, all.Batch, bigger.Batch, "training's minibatches are the same")
}
