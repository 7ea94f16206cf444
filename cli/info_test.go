package cli

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
)

// TestInfoUnlabelled marks every fifth vertex of the SBM unlabelled
// (graph.Unlabelled, out of every split) and runs info on it as .gnn, as
// OGB's csv layout ("nan" labels), as its binary layout (NaN labels,
// deflated) and as a partitioned directory, on 1 and 2 ranks: each counts
// the labelled and unlabelled vertices, leaves no class empty and keeps
// the split sizes.
func TestInfoUnlabelled(t *testing.T) {
	g := *testSBM(t)
	g.Labels = slices.Clone(g.Labels)
	counts := make([]int64, g.NumClasses)
	var unlabelled int64
	for v := range g.Labels {
		if v%5 == 0 {
			g.Labels[v] = graph.Unlabelled
			unlabelled++
		} else {
			counts[g.Labels[v]]++
		}
	}
	for k, c := range counts {
		require.NotZero(t, c, "class %d keeps a labelled vertex", k)
	}
	labelled := func(ids []int64) []int64 {
		return slices.DeleteFunc(slices.Clone(ids), func(v int64) bool { return g.Labels[v] == graph.Unlabelled })
	}
	splits := map[string]graph.Split{}
	sizes := map[string][]int{}
	for name, s := range g.Splits {
		s = graph.Split{Train: labelled(s.Train), Valid: labelled(s.Valid), Test: labelled(s.Test)}
		splits[name] = s
		sizes[name] = []int{len(s.Train), len(s.Valid), len(s.Test)}
	}
	g.Splits = splits
	dir := t.TempDir()
	gnn, csv, npz, parts := filepath.Join(dir, "sbm.gnn"), filepath.Join(dir, "csv", "sbm"), filepath.Join(dir, "npz", "sbm"), filepath.Join(dir, "sbm.parts")
	require.NoError(t, graph.WriteBinary(gnn, &g))
	require.NoError(t, graph.WriteOGB(csv, &g))
	require.NoError(t, graph.WriteOGBBinary(npz, &g, true))
	_, err := runCmd(t, 1, "partition", "--data", gnn, "--parts", "2", "--method", "block", "--out", parts)
	require.NoError(t, err)
	for _, data := range []string{gnn, csv, npz, parts} {
		for _, p := range []int{1, 2} {
			in := infoOf(t, p, "--data", data)
			assert.Equal(t, g.NumNodes-unlabelled, in.Labelled, "%s on %d ranks", data, p)
			assert.Equal(t, unlabelled, in.Unlabelled, "%s on %d ranks", data, p)
			assert.Empty(t, in.EmptyClasses, "%s on %d ranks", data, p)
			assert.Equal(t, sizes, in.Splits, "%s on %d ranks", data, p)
		}
	}
	// Without labels every vertex is unlabelled.
	nl := g
	nl.Labels, nl.NumClasses, nl.Splits = nil, 0, nil
	path := filepath.Join(dir, "nolabels.gnn")
	require.NoError(t, graph.WriteBinary(path, &nl))
	in := infoOf(t, 2, "--data", path)
	assert.Zero(t, in.Labelled)
	assert.Equal(t, g.NumNodes, in.Unlabelled)
}
