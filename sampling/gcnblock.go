package sampling

import (
	"slices"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// GCNNormalizedBlock returns the rows of Â = GCNNormalized(A) that local
// holds: local is row block c.Rank() of the n×n matrix A, rows
// [rowBounds[r], rowBounds[r+1]) with global column ids (n = local.NCols),
// rowBounds having c.Size()+1 entries, the same on every rank. Each block
// has exactly one rank of c: with replication, pass a communicator holding
// one copy of every block, such as the column communicator g.ColComm of a
// 1.5D grid or of a square 2D grid whose ranks load row block g.Row (the
// ranks of a grid row then compute the same rows).
//
// The degrees d_u of the columns outside the block are asked of their
// owners (the block whose bounds hold u) by collective.Halo: an Alltoallv
// of the request counts, one of the requested ids and one of the degrees
// (int64 each), so c ranks exchange 16 bytes per distinct remote column. The result is
// bit for bit rows [rowBounds[r], rowBounds[r+1]) of GCNNormalized(A),
// sorted, with values. It is collective over c, and returns an error if
// rowBounds do not cut [0, n) into c.Size() blocks or local is not a valid
// block of row block c.Rank(), or communication fails.
func GCNNormalizedBlock(c collective.Comm, rowBounds []int64, local *sparse.CSR) (*sparse.CSR, error) {
	p, me := c.Size(), c.Rank()
	if err := checkRowBlock(rowBounds, p, me, local); err != nil {
		return nil, err
	}
	lo, hi := rowBounds[me], rowBounds[me+1]
	out := selfLooped(local, lo)
	// The distinct remote columns, ascending, for a binary search below.
	var remote []int64
	for _, u := range out.Indices {
		if u < lo || u >= hi {
			remote = append(remote, u)
		}
	}
	slices.Sort(remote)
	remote = slices.Compact(remote)
	remoteDeg, err := collective.Halo(c, remote, func(u int64) int { return collective.BlockOf(rowBounds, u) }, func(u int64) (int64, bool) {
		if u < lo || u >= hi {
			return 0, false
		}
		return out.Degree(u - lo), true
	})
	if err != nil {
		return nil, err
	}
	deg := func(u int64) float64 {
		if u >= lo && u < hi {
			return float64(out.Degree(u - lo))
		}
		x, _ := slices.BinarySearch(remote, u)
		return float64(remoteDeg[x])
	}
	for r := range out.NRows {
		dv := float64(out.Degree(r))
		for q := out.Indptr[r]; q < out.Indptr[r+1]; q++ {
			out.Values[q] = gcnWeight(dv, deg(out.Indices[q]))
		}
	}
	return out, nil
}
