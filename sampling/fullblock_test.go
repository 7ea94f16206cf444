package sampling

import (
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/sparse"
)

// FullBlockRows over any row block holding the destinations equals
// FullBlock over the whole graph, field for field.
func TestFullBlockRowsEqualsFullBlock(t *testing.T) {
	adj, err := graph.RMAT(graph.DefaultRMAT(8, 6))
	require.NoError(t, err)
	n := adj.NRows
	for _, r := range [][2]int64{{0, n}, {40, 170}, {100, 101}} {
		lo, hi := r[0], r[1]
		blk := &sparse.CSR{NRows: hi - lo, NCols: n, Indptr: make([]int64, hi-lo+1)}
		for v := lo; v < hi; v++ {
			blk.Indices = append(blk.Indices, adj.Row(v)...)
			blk.Indptr[v-lo+1] = int64(len(blk.Indices))
		}
		dst := []int64{hi - 1}
		for v := lo; v < hi-1; v += 3 {
			dst = append(dst, v)
		}
		want := FullBlock(adj, dst)
		got := FullBlockRows(blk, lo, dst)
		require.Equal(t, want.Dst, got.Dst)
		require.Equal(t, want.Src, got.Src)
		require.Equal(t, want.Adj.Indptr, got.Adj.Indptr)
		require.Equal(t, want.Adj.Indices, got.Adj.Indices)
		require.Equal(t, want.Adj.NCols, got.Adj.NCols)
		require.Panics(t, func() { FullBlockRows(blk, lo, []int64{hi}) })
		require.Panics(t, func() { FullBlockRows(blk, lo, []int64{lo, lo}) })
	}
}
