package distpart

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/partition"
)

// blockParts gives every row the part partition.Block gives it, for ranks
// whose rows span several parts, one, or none.
func TestBlockParts(t *testing.T) {
	for _, tc := range []struct {
		n      int64
		k      int
		lo, hi int64
	}{{10, 3, 0, 10}, {10, 3, 2, 7}, {10, 4, 9, 10}, {7, 9, 0, 7}, {5, 2, 3, 3}} {
		t.Run(fmt.Sprintf("n=%d/k=%d/[%d,%d)", tc.n, tc.k, tc.lo, tc.hi), func(t *testing.T) {
			b := partition.Block(tc.n, tc.k)
			got := blockParts(tc.n, tc.k, tc.lo, tc.hi)
			require.Len(t, got, int(tc.hi-tc.lo))
			for v := tc.lo; v < tc.hi; v++ {
				require.Equal(t, int32(b.Owner(v)), got[v-tc.lo], "vertex %d", v)
			}
		})
	}
}

// Partitioning Cora into blocks on 1 to 4 in-process ranks gives
// partition.Block's book, sizes and edge cut, and WriteParts writes the
// part files that graph.WriteParts writes from that book, byte for byte.
func TestPartitionWriteCora(t *testing.T) {
	d, err := graph.Load(filepath.Join("..", "..", "data", "cora"), graph.ReadOptions{})
	require.NoError(t, err)
	dir := t.TempDir()
	data := filepath.Join(dir, "cora.gnn")
	require.NoError(t, graph.WriteBinary(data, d))
	for _, tc := range []struct{ p, k int }{{1, 2}, {2, 2}, {3, 5}, {4, 3}} {
		t.Run(fmt.Sprintf("p=%d/k=%d", tc.p, tc.k), func(t *testing.T) {
			want := partition.Block(d.NumNodes, tc.k)
			ref := filepath.Join(t.TempDir(), "ref")
			_, err := graph.WriteParts(ref, d, want, "block", nil)
			require.NoError(t, err)
			out := filepath.Join(t.TempDir(), "out")
			err = inproc.Run(tc.p, inproc.Options{}, func(c collective.Comm) error {
				r, err := graph.OpenBinaryRows(data)
				if err != nil {
					return err
				}
				defer r.Close()
				res, err := Partition(c, r, Options{Parts: tc.k})
				if err != nil {
					return err
				}
				if fmt.Sprint(res.Sizes) != fmt.Sprint(want.Sizes()) || res.Cut != want.EdgeCut(d.Adj) || res.NNZ != d.NumEdges() {
					return fmt.Errorf("sizes %v cut %d nnz %d, want %v %d %d", res.Sizes, res.Cut, res.NNZ, want.Sizes(), want.EdgeCut(d.Adj), d.NumEdges())
				}
				b, err := Book(c, res, "block")
				if err != nil {
					return err
				}
				if (c.Rank() == 0) != (b != nil) {
					return fmt.Errorf("rank %d: book %v", c.Rank(), b)
				}
				if b != nil && fmt.Sprint(b.Sizes()) != fmt.Sprint(want.Sizes()) {
					return fmt.Errorf("book sizes %v, want %v", b.Sizes(), want.Sizes())
				}
				_, err = WriteParts(c, r, res, WriteOptions{Dir: out, Method: "block"})
				return err
			})
			require.NoError(t, err)
			for q := range tc.k {
				a, err := os.ReadFile(filepath.Join(out, graph.PartFileName(q)))
				require.NoError(t, err)
				b, err := os.ReadFile(filepath.Join(ref, graph.PartFileName(q)))
				require.NoError(t, err)
				require.True(t, string(a) == string(b), "part %d differs", q)
			}
			m, err := graph.ReadPartManifest(out)
			require.NoError(t, err)
			require.Equal(t, tc.k, m.Parts)
			require.Equal(t, want.EdgeCut(d.Adj), m.EdgeCut)
		})
	}
}
