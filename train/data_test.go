package train

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

func TestFeatureNormResolve(t *testing.T) {
	assert.Equal(t, FeatureNormRow, FeatureNormAuto.Resolve(true))
	assert.Equal(t, FeatureNormNone, FeatureNormAuto.Resolve(false))
	for _, nn := range []bool{true, false} {
		assert.Equal(t, FeatureNormRow, FeatureNormRow.Resolve(nn))
		assert.Equal(t, FeatureNormNone, FeatureNormNone.Resolve(nn))
	}
	assert.Equal(t, FeatureNormAuto, Defaults(model.KindSAGE, ModeMinibatch).Minibatch.FeatureNorm)
	assert.Equal(t, FeatureNormAuto, Defaults(model.KindGCNII, ModePipe).Full.FeatureNorm)
}

// oneWay returns a copy of g with each undirected edge stored once (i < j,
// sparse.StrictUpper), as many edge lists store them.
func oneWay(g *graph.Dataset) *graph.Dataset {
	d := *g
	d.Adj = sparse.StrictUpper(g.Adj)
	return &d
}

// loadOn runs Load on p in-process ranks and returns every rank's Data.
func loadOn(t *testing.T, p int, path string, symmetrize bool) []*Data {
	t.Helper()
	out := make([]*Data, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Load(c, path, LoadOptions{Partition: PartitionBlock, Symmetrize: symmetrize, Seed: 1})
		out[c.Rank()] = d
		return err
	})
	require.NoError(t, err)
	return out
}

// TestLoadDirection writes the test SBM with each edge once and checks
// that Load reports its low reciprocity, that symmetrize restores the
// graph, and that a file recorded as symmetric is taken as it is.
func TestLoadDirection(t *testing.T) {
	g := sbm()
	dir := t.TempDir()
	once := filepath.Join(dir, "once.gnn")
	require.NoError(t, graph.WriteBinary(once, oneWay(g)))
	both := filepath.Join(dir, "both")
	require.NoError(t, graph.WriteOGB(both, g))

	for _, d := range loadOn(t, 2, once, false) {
		assert.Equal(t, 0.0, d.Reciprocity)
		assert.False(t, d.Symmetrized)
		assert.Equal(t, g.Adj.NNZ()/2, d.Adj.NNZ())
		assert.False(t, d.NonNegative, "SBM features are signed")
		assert.Equal(t, FeatureNormNone, FeatureNormAuto.Resolve(d.NonNegative))
		assert.Empty(t, d.EmptyClasses)
	}
	for _, d := range loadOn(t, 2, once, true) {
		assert.Equal(t, 1.0, d.Reciprocity)
		assert.True(t, d.Symmetrized)
		assert.Equal(t, g.Adj, d.Adj)
	}
	// Both directions stored: no symmetrization needed or done.
	for _, d := range loadOn(t, 1, both, false) {
		assert.Equal(t, 1.0, d.Reciprocity)
		assert.Equal(t, g.Adj, d.Adj)
	}
	for _, d := range loadOn(t, 1, both, true) {
		assert.True(t, d.Symmetrized, "an OGB directory records no direction: symmetrized on request")
		assert.Equal(t, g.Adj, d.Adj)
	}
	// A .gnn recorded as symmetric is neither copied nor checked.
	sym := filepath.Join(dir, "sym.gnn")
	require.NoError(t, graph.WriteBinary(sym, g))
	for _, d := range loadOn(t, 1, sym, true) {
		assert.Equal(t, 1.0, d.Reciprocity)
		assert.False(t, d.Symmetrized)
	}
}

// TestLoadEmptyClassesAndNonNegative relabels one class of the test SBM
// out of the way and makes its features non-negative.
func TestLoadEmptyClassesAndNonNegative(t *testing.T) {
	g := *sbm()
	g.Labels = slices.Clone(g.Labels)
	for i, l := range g.Labels {
		if l == 3 {
			g.Labels[i] = int32(g.NumClasses) // class 3 empties, one class more
		}
	}
	g.NumClasses++
	f := *g.Feat
	f.Data = slices.Clone(f.Data)
	for i, v := range f.Data {
		f.Data[i] = max(v, 0)
	}
	g.Feat = &f
	path := filepath.Join(t.TempDir(), "relabelled.gnn")
	require.NoError(t, graph.WriteBinary(path, &g))
	for _, d := range loadOn(t, 2, path, false) {
		assert.Equal(t, []int{3}, d.EmptyClasses)
		assert.True(t, d.NonNegative)
		assert.Equal(t, FeatureNormRow, FeatureNormAuto.Resolve(d.NonNegative))
	}
	// Distribute measures the same without communicating.
	d, err := Distribute(&g, "random", partition.Block(g.NumNodes, 1), 0)
	require.NoError(t, err)
	assert.Equal(t, []int{3}, d.EmptyClasses)
	assert.True(t, d.NonNegative)
	assert.Equal(t, 1.0, d.Reciprocity)
}
