package sampling

import (
	"slices"

	"gnnmpi/sparse"
)

// FullBlockRows is FullBlock over a row block: adj holds rows
// [lo, lo+adj.NRows) of a graph of adj.NCols vertices (global column ids),
// and every vertex of dst is one of those rows. The block equals FullBlock's
// on the whole graph, and its scratch memory is proportional to the block,
// not to the graph: the vertices are numbered compactly (sorted distinct
// ids) while relabel runs.
// It will panic if a vertex of dst is outside the rows held or repeated.
func FullBlockRows(adj *sparse.CSR, lo int64, dst []int64) Block {
	local := make([]int64, len(dst))
	for i, v := range dst {
		if v < lo || v >= lo+adj.NRows {
			panic("sampling: destination vertex outside the rows held")
		}
		local[i] = v - lo
	}
	smp := sparse.SelectRowsSR(sparse.PlusTimes[float64]{}, adj, local, nil)
	ids := slices.Concat(dst, smp.Indices)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	compact := func(v int64) int64 {
		x, _ := slices.BinarySearch(ids, v)
		return int64(x)
	}
	pos := make([]int32, len(ids))
	for x := range pos {
		pos[x] = -1
	}
	cdst := make([]int64, len(dst))
	for i, v := range dst {
		cdst[i] = compact(v)
		if pos[cdst[i]] == 0 {
			panic("sampling: destination vertex repeated")
		}
		pos[cdst[i]] = 0
	}
	for _, x := range cdst {
		pos[x] = -1
	}
	csmp := &sparse.CSR{NRows: smp.NRows, NCols: int64(len(ids)), Indptr: smp.Indptr, Indices: make([]int64, len(smp.Indices))}
	for q, v := range smp.Indices {
		csmp.Indices[q] = compact(v)
	}
	b := relabel(cdst, csmp, pos)
	for x, c := range b.Src { // b.Dst is a prefix of b.Src
		b.Src[x] = ids[c]
	}
	return b
}
