package train

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/partition"
	"gnnmpi/sampling"
)

// On one rank holding the whole graph, the block of inference in one chunk
// is the graph's adjacency itself, equal to the block FullBlockRows builds
// by relabelling; a rank holding a part, or a graph with repeated or
// unsorted entries in a row, gets none.
func TestIdentityBlock(t *testing.T) {
	g := sbm()
	for _, p := range []int{1, 2} {
		err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			d, err := Distribute(g, "random", partition.Block(g.NumNodes, p), c.Rank())
			if err != nil {
				return err
			}
			tr, err := newTrainer(c, d, testConfig("sage"))
			if err != nil {
				return err
			}
			owned := tr.ebook.Owned(c.Rank())
			blk, ok := tr.identityBlock(owned)
			if p > 1 {
				require.False(t, ok, "a rank holding a part")
				return nil
			}
			require.True(t, ok)
			want := sampling.FullBlockRows(tr.d.Adj, tr.d.RowLo, owned)
			require.Equal(t, want.Src, blk.Src)
			require.Equal(t, want.Dst, blk.Dst)
			require.Equal(t, want.Adj.NRows, blk.Adj.NRows)
			require.Equal(t, want.Adj.NCols, blk.Adj.NCols)
			require.Equal(t, want.Adj.Indptr, blk.Adj.Indptr)
			require.Equal(t, want.Adj.Indices, blk.Adj.Indices)
			require.Nil(t, blk.Adj.Values)

			// A repeated entry: relabelling would merge it.
			a := *tr.d.Adj
			a.Indices = append([]int64(nil), a.Indices...)
			for i := range a.NRows {
				if lo, hi := a.Indptr[i], a.Indptr[i+1]; hi-lo >= 2 {
					a.Indices[lo+1] = a.Indices[lo]
					break
				}
			}
			tr.d.Adj = &a
			_, ok = tr.identityBlock(owned)
			require.False(t, ok, "a row with a repeated entry")
			return nil
		})
		require.NoError(t, err)
	}
}
