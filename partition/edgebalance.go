package partition

import (
	"slices"

	"gnnmpi/sparse"
)

// EdgeBalance returns the stored edges of the heaviest part over the mean
// of a part, the parts holding the rows of adj (n×n, n = NumNodes) by b:
// 1 is perfect balance, and a graph without edges has balance 1.
func (b *Book) EdgeBalance(adj *sparse.CSR) float64 {
	edges := make([]int64, b.Parts)
	for v := range adj.NRows {
		edges[b.Owner(v)] += adj.Degree(v)
	}
	mean := float64(adj.NNZ()) / float64(b.Parts)
	if mean == 0 {
		return 1
	}
	return float64(slices.Max(edges)) / mean
}

// Mask returns the mask of n vertices that is true on ids, as Balance
// takes it. It will panic if an id is outside [0, n).
func Mask(n int64, ids []int64) []bool {
	m := make([]bool, n)
	for _, v := range ids {
		m[v] = true
	}
	return m
}
