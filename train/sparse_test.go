package train

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/partition"
)

const coraPath = "../data/cora"

// Load holds every rank's rows dense or sparse as the format says, the
// same rows either way, and Features normalises sparse rows exactly as
// dense ones (a 0/1 pattern gets values).
func TestLoadFeatureFormats(t *testing.T) {
	const p = 2
	rows := make(map[graph.FeatureFormat][]*Data)
	for _, format := range []graph.FeatureFormat{graph.FeatureDense, graph.FeatureCSR, graph.FeatureAuto} {
		rows[format] = make([]*Data, p)
		err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			d, err := Load(c, coraPath, LoadOptions{Partition: PartitionBlock, Format: format, Seed: 1})
			rows[format][c.Rank()] = d
			return err
		})
		require.NoError(t, err)
	}
	for r := range p {
		dn, sp, auto := rows[graph.FeatureDense][r], rows[graph.FeatureCSR][r], rows[graph.FeatureAuto][r]
		require.Nil(t, dn.FeatCSR)
		require.Nil(t, sp.Feat)
		require.NotNil(t, auto.FeatCSR, "Cora is sparse")
		require.Nil(t, sp.FeatCSR.Values, "0/1 features are a pattern")
		require.Equal(t, graph.SparseRows(dn.Feat), sp.FeatCSR)
		require.Equal(t, sp.FeatCSR, auto.FeatCSR)
		require.Equal(t, dn.NumFeatures(), sp.NumFeatures())
		require.Equal(t, dn.OwnRows(), sp.OwnRows())
		require.Equal(t, dn.Book.Sizes()[r], int64(sp.OwnRows()))

		require.Same(t, sp.FeatCSR, sp.Features(FeatureNormNone).CSR)
		norm := sp.Features(FeatureNormRow)
		require.NotNil(t, norm.CSR.Values)
		require.Equal(t, dense.RowNormalized(dn.Feat), graph.DenseRows(norm.CSR), "rank %d", r)
		require.Nil(t, sp.FeatCSR.Values, "the loaded rows stay a pattern")
	}
	err := inproc.Run(1, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		_, err := Load(c, coraPath, LoadOptions{Partition: PartitionBlock, Format: "coo", Seed: 1})
		return err
	})
	require.ErrorContains(t, err, `unknown feature format "coo"`)
}

// Distribute keeps a sparse dataset's rows sparse.
func TestDistributeSparse(t *testing.T) {
	g := *sbm()
	g.FeatCSR, g.Feat = graph.SparseRows(g.Feat), nil
	book := partition.Random(g.NumNodes, 3, 5)
	for r := range 3 {
		d, err := Distribute(&g, "random", book, r)
		require.NoError(t, err)
		require.Nil(t, d.Feat)
		want, err := Distribute(sbm(), "random", book, r)
		require.NoError(t, err)
		require.Equal(t, want.Feat, graph.DenseRows(d.FeatCSR))
	}
}

// Training on sparse feature rows (a sparse store, sparse fetches and the
// model's sparse first layer) gives the losses of dense rows within float32
// rounding (the first layer multiplies before it aggregates), with and
// without row normalisation, cache and replication, while the fetch moves
// a small fraction of the bytes.
func TestSparseSameLosses(t *testing.T) {
	for _, tc := range []struct {
		p, replication int
		norm           FeatureNorm
		cache          alltoall.CachePolicy
	}{
		{2, 1, FeatureNormRow, alltoall.CacheNone},
		{2, 1, FeatureNormNone, alltoall.CacheDegree},
		{4, 2, FeatureNormRow, alltoall.CacheDegree},
	} {
		t.Run(fmt.Sprintf("p%d_c%d_%s_%s", tc.p, tc.replication, tc.norm, tc.cache), func(t *testing.T) {
			cfg := testConfig("sage")
			cfg.Epochs, cfg.EvalEvery = 2, 1
			cfg.FeatureNorm, cfg.Replication = tc.norm, tc.replication
			if tc.cache != alltoall.CacheNone {
				cfg.Cache, cfg.CacheFrac = tc.cache, 0.1
			}
			dn := runCora(t, tc.p, cfg, graph.FeatureDense)
			sp := runCora(t, tc.p, cfg, graph.FeatureCSR)
			require.InEpsilonSlice(t, losses(dn), losses(sp), 1e-5)
			for e := range dn.Epochs {
				require.InDelta(t, dn.Epochs[e].TestAcc, sp.Epochs[e].TestAcc, 0.003)
				require.Equal(t, dn.Epochs[e].RemoteRows, sp.Epochs[e].RemoteRows)
				require.Positive(t, sp.Epochs[e].RemoteRows)
				// Cora: 18 nonzeros of 1433 a row on average; pairs when
				// normalised, columns only for the pattern.
				require.Less(t, 20*sp.Epochs[e].Bytes[metrics.PhaseFetch], dn.Epochs[e].Bytes[metrics.PhaseFetch])
			}
			require.Less(t, 20*sp.Stores[0].Bytes, dn.Stores[0].Bytes)
		})
	}
}
