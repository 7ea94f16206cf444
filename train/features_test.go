package train

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
)

// A feature cache changes where rows come from, never their values: every
// policy and fraction trains the same loss curve as no cache, with the same
// rows asked for, more cache hits and fewer remote rows as the fraction
// grows, and none at all once every reachable vertex fits (vip, degree).
func TestCacheSameLosses(t *testing.T) {
	const p = 3
	cfg := testConfig("sage")
	cfg.Epochs = 2
	ref := runP(t, p, cfg, nil)
	require.Zero(t, ref.Epochs[0].CacheHits)
	require.Positive(t, ref.Epochs[0].RemoteRows)
	for _, policy := range []alltoall.CachePolicy{alltoall.CacheDegree, alltoall.CacheVIP, CacheVIPRecurrence, alltoall.CacheSim} {
		prev := ref
		for _, frac := range []float64{0.05, 0.3, 2} {
			t.Run(fmt.Sprintf("%s/%g", policy, frac), func(t *testing.T) {
				c := cfg
				c.Cache, c.CacheFrac = policy, frac
				res := runP(t, p, c, nil)
				require.Equal(t, losses(ref), losses(res))
				for e := range res.Epochs {
					got, want := res.Epochs[e], ref.Epochs[e]
					require.Equal(t, want.TestAcc, got.TestAcc)
					require.Equal(t, want.FetchRows, got.FetchRows)
					require.Positive(t, got.CacheHits)
					require.LessOrEqual(t, got.RemoteRows, prev.Epochs[e].RemoteRows)
					require.Equal(t, want.RemoteRows, got.RemoteRows+got.CacheHits, "a hit is a row not fetched (no repeats within a minibatch)")
					if frac == 2 && policy != alltoall.CacheSim {
						require.Zero(t, got.RemoteRows, "everything reachable is cached")
					}
				}
				require.Positive(t, res.Stores[0].CachedRows)
				require.LessOrEqual(t, res.Stores[0].CachedRows, int64(cacheRows(frac, sbm().NumNodes, p)))
				prev = res
			})
		}
	}
}

// Over the 1.5D topology the vip and sim scores are computed collectively
// (rows fetched across ranks, sampler calls in step) and give the caches of
// the replicated topology: same rows, same losses.
func TestCacheScoresOver15D(t *testing.T) {
	const p = 4
	cfg := testConfig("sage")
	cfg.Epochs, cfg.EvalEvery = 2, 0
	for _, policy := range []alltoall.CachePolicy{alltoall.CacheVIP, alltoall.CacheSim} {
		c := cfg
		c.Cache, c.CacheFrac = policy, 0.3
		ref := runP(t, p, c, nil)
		c.Topology, c.C = Topology15D, 2
		got := runP(t, p, c, nil)
		require.Equal(t, losses(ref), losses(got), policy)
		for e := range ref.Epochs {
			require.Equal(t, ref.Epochs[e].CacheHits, got.Epochs[e].CacheHits, policy)
			require.Equal(t, ref.Epochs[e].RemoteRows, got.Epochs[e].RemoteRows, policy)
		}
	}
}

// Half-precision features halve the row bytes: the fetch phase then sends
// 2F bytes less per remote row, and the model still learns.
func TestFeatureF16(t *testing.T) {
	const p = 3
	cfg := testConfig("sage")
	cfg.Epochs, cfg.EvalEvery = 2, 0
	a := runP(t, p, cfg, nil)
	cfg.FeatureDType = alltoall.F16
	b := runP(t, p, cfg, nil)
	f := int64(sbm().Feat.Cols)
	for e := range a.Epochs {
		require.Equal(t, a.Epochs[e].RemoteRows, b.Epochs[e].RemoteRows)
		require.Equal(t, a.Epochs[e].Bytes[metrics.PhaseFetch]-2*f*a.Epochs[e].RemoteRows, b.Epochs[e].Bytes[metrics.PhaseFetch])
	}
	require.Equal(t, a.Stores[1].Bytes-2*f*a.Stores[1].OwnRows, b.Stores[1].Bytes)
	cfg.Epochs, cfg.EvalEvery, cfg.LR = 20, 1, 0.02
	res := runP(t, p, cfg, nil)
	require.Greater(t, res.BestValAcc, 0.75)
}

// With feature replication c the ranks hold p/c parts, c ranks each: every
// rank's store has its part's rows, training vertices are dealt within the
// part, and training and evaluation work; fewer parts means fewer remote
// rows than without replication.
func TestFeatureReplication(t *testing.T) {
	g := sbm()
	cfg := testConfig("sage")
	cfg.Epochs, cfg.LR, cfg.Model.Dropout = 20, 0.02, 0.1
	plain, err := runRanks(4, cfg, partition.Random(g.NumNodes, 4, 5))
	require.NoError(t, err)
	for _, tc := range []struct{ c, topoC int }{{2, 1}, {2, 2}, {4, 1}} {
		t.Run(fmt.Sprintf("c%d_topology%d", tc.c, tc.topoC), func(t *testing.T) {
			c := cfg
			c.Replication = tc.c
			if tc.topoC > 1 {
				c.Topology, c.C = Topology15D, tc.topoC
			}
			book := partition.Random(g.NumNodes, 4/tc.c, 5)
			res, err := runRanks(4, c, book)
			require.NoError(t, err)
			sizes := book.Sizes()
			for r, st := range res[0].Stores {
				require.Equal(t, sizes[r/tc.c], st.OwnRows, "rank %d", r)
			}
			for r := 1; r < 4; r++ {
				require.Equal(t, res[0].Epochs, withoutTimes(res[r].Epochs, res[0].Epochs))
			}
			require.Greater(t, res[0].BestValAcc, 0.75)
			require.Less(t, res[0].RemoteRowsPerEpoch, plain[0].RemoteRowsPerEpoch)
			if tc.c == 4 {
				require.Zero(t, res[0].RemoteRowsPerEpoch, "one part: everything is local")
			}
		})
	}
	// Data of 2 parts on 4 ranks without replication.
	book := partition.Random(g.NumNodes, 2, 5)
	err = inproc.Run(4, inproc.Options{Timeout: time.Minute}, func(cm collective.Comm) error {
		d, err := Distribute(g, "random", book, cm.Rank()/2)
		if err != nil {
			return err
		}
		_, err = newTrainer(cm, d, cfg)
		return err
	})
	require.ErrorContains(t, err, "loaded for 2 parts; 4 ranks with feature replication 1 need 4")
}

// Inference with feature replication computes the same function as without.
func TestEvaluationWithReplication(t *testing.T) {
	g := sbm()
	eval := func(p, c int) evaluation {
		book := partition.Random(g.NumNodes, p/c, 9)
		var acc evaluation
		err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(cm collective.Comm) error {
			d, err := Distribute(g, "random", book, cm.Rank()/c)
			if err != nil {
				return err
			}
			cfg := testConfig("sage")
			cfg.Replication = c
			tr, err := newTrainer(cm, d, cfg)
			if err != nil {
				return err
			}
			a, err := tr.evaluate()
			if cm.Rank() == 0 {
				acc = a
			}
			return err
		})
		require.NoError(t, err)
		return acc
	}
	ref := eval(1, 1)
	for _, pc := range [][2]int{{2, 2}, {4, 2}, {6, 3}} {
		got := eval(pc[0], pc[1])
		assert.InDelta(t, ref.ValAcc, got.ValAcc, 1.0/120, "p=%d c=%d", pc[0], pc[1])
		assert.InDelta(t, ref.TestAcc, got.TestAcc, 1.0/120, "p=%d c=%d", pc[0], pc[1])
	}
}

func TestFeatureConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Cache = "lru" }, `unknown cache policy "lru"`},
		{func(c *Config) { c.CacheFrac = 0.1 }, "cache policy none"},
		{func(c *Config) { c.Cache, c.CacheFrac = alltoall.CacheVIP, -1 }, "cache fraction -1"},
		{func(c *Config) { c.Cache, c.Sampler, c.Model.Kind = alltoall.CacheVIP, SamplerLADIES, "gcn" }, "models the node-wise sampler"},
		{func(c *Config) { c.Cache, c.CacheSimEpochs = alltoall.CacheSim, 0 }, "simulated epochs"},
		{func(c *Config) { c.FeatureDType = "bf16" }, `unknown feature dtype "bf16"`},
		{func(c *Config) { c.GPUFrac = 2 }, "GPU fraction 2"},
		{func(c *Config) { c.Replication = 0 }, "feature replication 0"},
	} {
		cfg := Defaults(model.KindSAGE, ModeMinibatch).Minibatch
		tc.mod(&cfg)
		require.ErrorContains(t, cfg.Validate(), tc.want)
	}
}

// FetchSweep replays the training loop's fetches: its rows per epoch are
// those Run reports for the same policy and fraction.
func TestFetchSweepMatchesRun(t *testing.T) {
	const p = 3
	cfg := testConfig("sage")
	cfg.Epochs, cfg.EvalEvery = 2, 0
	g := sbm()
	book := partition.Random(g.NumNodes, p, 5)
	var pts []SweepPoint
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Distribute(g, "random", book, c.Rank())
		if err != nil {
			return err
		}
		return FetchSweep(collective.WithStats(c, nil), d, cfg, 2, []alltoall.CachePolicy{alltoall.CacheNone, alltoall.CacheVIP}, []float64{0, 0.3}, func(pt SweepPoint) error {
			if c.Rank() == 0 {
				pts = append(pts, pt)
			}
			return nil
		})
	})
	require.NoError(t, err)
	require.Len(t, pts, 3) // none 0, vip 0, vip 0.3
	for _, pt := range pts {
		c := cfg
		c.Cache, c.CacheFrac = alltoall.CachePolicy(pt.Cache), pt.CacheFrac
		res := runP(t, p, c, nil)
		var rows, hits, remote, bytes float64
		for _, e := range res.Epochs {
			rows += float64(e.FetchRows) / 2
			hits += float64(e.CacheHits) / 2
			remote += float64(e.RemoteRows) / 2
			bytes += float64(e.Bytes[metrics.PhaseFetch]) / 2
		}
		require.Equal(t, []float64{rows, hits, remote, bytes}, []float64{pt.FetchRows, pt.CacheHits, pt.RemoteRows, pt.FetchBytes}, "%s %g", pt.Cache, pt.CacheFrac)
	}
	require.Less(t, pts[2].RemoteRows, pts[0].RemoteRows)
}

// On a contiguous book the evaluation book splits every part's range into
// consecutive sub-ranges, as many vertices per rank as the round-robin
// deal of a Part-array book gives, and stays contiguous; other books keep
// the round-robin deal.
func TestEvalBookContiguous(t *testing.T) {
	offsets := []int64{0, 7, 7, 12, 20}
	contig, err := partition.Contiguous(offsets, "test")
	require.NoError(t, err)
	part := make([]int32, 20)
	for q := range 4 {
		for g := offsets[q]; g < offsets[q+1]; g++ {
			part[g] = int32(q)
		}
	}
	arr, err := partition.New(part, 4, "test")
	require.NoError(t, err)
	for _, c := range []int{1, 2, 3} {
		eb, err := evalBook(contig, c)
		require.NoError(t, err)
		ea, err := evalBook(arr, c)
		require.NoError(t, err)
		require.Equal(t, 4*c, eb.Parts)
		assert.Nil(t, eb.Part, "c=%d: the evaluation book of a contiguous book is contiguous", c)
		assert.Equal(t, ea.Sizes(), eb.Sizes(), "c=%d", c)
		for g := range int64(20) {
			assert.Equal(t, contig.Owner(g), eb.Owner(g)/c, "c=%d: vertex %d stays in its part", c, g)
			// The Part-array book keeps the round-robin deal.
			assert.Equal(t, arr.Owner(g)*c+int(arr.LocalID(g))%c, ea.Owner(g), "c=%d", c)
		}
	}
	eb, err := evalBook(contig, 2)
	require.NoError(t, err)
	assert.Equal(t, []int64{0, 4, 7, 7, 7, 10, 12, 16, 20}, eb.Offsets())
}
