package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/partition"
)

// partition --balance-edges evens out the parts' stored edges on an R-MAT
// graph, whose hubs crowd one part when METIS balances vertices alone.
func TestPartitionBalanceEdges(t *testing.T) {
	dir := t.TempDir()
	g := filepath.Join(dir, "rmat.gnn")
	_, err := runCmd(t, 1, "gen", "--scale", "12", "--edgefactor", "8", "--out", g, "rmat")
	require.NoError(t, err)
	d, err := graph.Load(g, graph.ReadOptions{})
	require.NoError(t, err)
	balance := func(book string, args ...string) float64 {
		_, err := runCmd(t, 1, "partition", append([]string{"--data", g, "--parts", "8", "--method", "metis", "--split", "none", "--book", book}, args...)...)
		require.NoError(t, err)
		b, err := partition.Read(book)
		require.NoError(t, err)
		return b.EdgeBalance(d.Adj)
	}
	plain := balance(filepath.Join(dir, "plain.book"))
	even := balance(filepath.Join(dir, "even.book"), "--balance-edges")
	require.Less(t, even, plain)
	require.Less(t, even, 1.2, "within METIS's tolerance of the mean")
}
