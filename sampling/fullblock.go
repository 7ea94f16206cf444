package sampling

import (
	"gnnmpi/sparse"
)

// FullBlock returns the block of dst with all their neighbours in adj
// (repeated entries counted once), for exact layer-wise inference. Sources
// are ordered as by NodeWise.Sample. dst is not modified and the block
// shares no memory with it or with adj. Its scratch memory is proportional
// to the block, not to the graph.
// It will panic if adj is not square or a vertex of dst is outside
// [0, n) or repeated.
func FullBlock(adj *sparse.CSR, dst []int64) Block {
	if adj.NRows != adj.NCols {
		panic("sampling: adjacency not square")
	}
	for _, v := range dst {
		if v < 0 || v >= adj.NRows {
			panic("sampling: destination vertex out of range")
		}
	}
	return fullBlock(adj, dst, dst)
}

// FullBlockRows is FullBlock over a row block: adj holds rows
// [lo, lo+adj.NRows) of a graph of adj.NCols vertices (global column ids),
// and every vertex of dst is one of those rows. The block equals FullBlock's
// on the whole graph, and its scratch memory is proportional to the block.
// It will panic if a vertex of dst is outside the rows held or repeated.
func FullBlockRows(adj *sparse.CSR, lo int64, dst []int64) Block {
	local := make([]int64, len(dst))
	for i, v := range dst {
		if v < lo || v >= lo+adj.NRows {
			panic("sampling: destination vertex outside the rows held")
		}
		local[i] = v - lo
	}
	return fullBlock(adj, dst, local)
}

// fullBlock is FullBlock of the destinations dst, whose rows of adj are
// rows (dst shifted to adj's first row).
func fullBlock(adj *sparse.CSR, dst, rows []int64) Block {
	// The rows as a pattern (or, and): repeats merged, no values formed.
	pat := sparse.SelectRowsSR(sparse.OrAnd{}, &sparse.Matrix[bool]{NRows: adj.NRows, NCols: adj.NCols, Indptr: adj.Indptr, Indices: adj.Indices}, rows, nil)
	smp := &sparse.CSR{NRows: pat.NRows, NCols: pat.NCols, Indptr: pat.Indptr, Indices: pat.Indices}
	t := tables.Get().(*idTable)
	b := relabel(dst, smp, t, false)
	tables.Put(t)
	return b
}
