package alltoall

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// randomAdj returns a random directed n×n pattern with about deg entries a
// row, skewed so that some columns are much hotter than others.
func randomAdj(t testing.TB, r *rand.Rand, n int64, deg int) *sparse.CSR {
	var rows, cols []int64
	for u := range n {
		for range r.IntN(2 * deg) {
			v := r.Int64N(n)
			if r.IntN(3) == 0 {
				v = r.Int64N(max(1, n/10))
			}
			rows, cols = append(rows, u), append(cols, v)
		}
	}
	a, err := sparse.FromCOO(n, n, rows, cols, nil)
	require.NoError(t, err)
	return a
}

// InDegree over row blocks equals the whole graph's in-degree, on the
// rank's halo and own vertices, for p = 1..4, Part and contiguous books.
func TestInDegree(t *testing.T) {
	const n = 200
	for p := 1; p <= 4; p++ {
		r := rand.New(rand.NewPCG(uint64(p), 21))
		adj := randomAdj(t, r, n, 4)
		whole := make([]float64, n)
		for _, v := range adj.Indices {
			whole[v]++
		}
		contig, _ := contiguousPair(t, r, n, p)
		for _, book := range []*partition.Book{contig, unevenBook(t, r, n, p, true), partition.Random(n, p, 5)} {
			t.Run(fmt.Sprintf("p%d_%s", p, book.Method), func(t *testing.T) {
				err := inproc.Run(p, opts, func(c collective.Comm) error {
					rank := c.Rank()
					own := book.Owned(rank)
					block := sparse.SelectRows(adj, own)
					got, err := InDegree(c, book, block)
					if err != nil {
						return err
					}
					if err := got.Validate(); err != nil {
						return err
					}
					// Want: the whole in-degree on the halo (zero
					// impossible there) and on the own vertices (nonzero
					// only).
					known := slices.Clone(block.Indices)
					for _, g := range own {
						if whole[g] > 0 {
							known = append(known, g)
						}
					}
					slices.Sort(known)
					known = slices.Compact(known)
					want := &sparse.Vec{N: n}
					for _, g := range known {
						want.Indices = append(want.Indices, g)
						want.Values = append(want.Values, whole[g])
					}
					if !slices.Equal(got.Indices, want.Indices) || !slices.Equal(got.Values, want.Values) || got.N != n {
						return fmt.Errorf("rank %d: in-degree %v, want %v", rank, got, want)
					}
					return nil
				})
				require.NoError(t, err)
			})
		}
	}
}

func TestInDegreeErrors(t *testing.T) {
	book := partition.Block(10, 2)
	adj, err := sparse.FromCOO(10, 10, []int64{0, 0, 1, 7}, []int64{3, 6, 9, 2}, nil)
	require.NoError(t, err)
	err = inproc.Run(1, opts, func(c collective.Comm) error {
		_, err := InDegree(c, book, adj)
		return err
	})
	require.ErrorContains(t, err, "in-degree over 1 ranks for a book of 2 parts")
	err = inproc.Run(2, opts, func(c collective.Comm) error {
		_, err := InDegree(c, book, &sparse.CSR{NRows: 0, NCols: 9, Indptr: []int64{0}})
		return err
	})
	require.ErrorContains(t, err, "row block with 9 columns for a book of 10 vertices")
	// Books that differ between the ranks: every rank fails, none hangs.
	other, err := partition.Contiguous([]int64{0, 8, 10}, "other")
	require.NoError(t, err)
	err = inproc.Run(2, opts, func(c collective.Comm) error {
		b := book
		if c.Rank() == 1 {
			b = other
		}
		_, err := InDegree(c, b, sparse.SelectRows(adj, b.Owned(c.Rank())))
		return err
	})
	require.ErrorContains(t, err, "which it does not own")
}
