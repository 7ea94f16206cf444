package alltoall

import (
	"cmp"
	"fmt"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// InDegree returns the in-degree of the vertices this rank knows, summed
// over a row-distributed adjacency: the degree cache score (CacheDegree)
// of a rank that holds only its own rows.
//
// rows is this rank's row block: rows whose entries are global column ids
// (NCols = book.NumNodes()), such that the blocks of the ranks of c together
// hold every row of the adjacency exactly once (which row a block's row k
// is does not matter). The result, of length book.NumNodes(), lists the
// vertices of the rank's halo (the columns of its rows) and the vertices it
// owns under book, each with its in-degree over the whole adjacency (the
// number of stored entries in its column), leaving out owned vertices of
// in-degree 0.
//
// Each rank counts the columns of its rows, sends each distinct column and
// its count to the column's owner, which sums them, and gets back the
// totals of the columns it sent: four Alltoallv calls (two of p counts, two
// of the pairs and totals), 16 bytes out and 8 back per distinct column of
// the rank's rows. Memory is O(nnz of the block + the part's size).
// InDegree does not set a phase for byte accounting.
//
// InDegree is collective over c, whose rank q holds part q of book. It
// returns an error if c's size is not the book's number of parts, rows has
// another number of columns than the book vertices, another rank sends a
// column this rank does not own (the ranks' books differ), or
// communication fails.
func InDegree(c collective.Comm, book *partition.Book, rows *sparse.CSR) (*sparse.Vec, error) {
	n, rank, p := book.NumNodes(), c.Rank(), c.Size()
	if p != book.Parts {
		return nil, fmt.Errorf("alltoall: in-degree over %d ranks for a book of %d parts", p, book.Parts)
	}
	if rows.NCols != n {
		return nil, fmt.Errorf("alltoall: in-degree of a row block with %d columns for a book of %d vertices", rows.NCols, n)
	}

	// The distinct columns of the block with their counts, grouped by
	// owner (ascending within an owner).
	cols := slices.Clone(rows.Indices)
	slices.Sort(cols)
	type colCount struct {
		gid, count int64
		owner      int
	}
	var halo []colCount
	for i := 0; i < len(cols); {
		j := i + 1
		for j < len(cols) && cols[j] == cols[i] {
			j++
		}
		if cols[i] < 0 || cols[i] >= n {
			return nil, fmt.Errorf("alltoall: in-degree: column %d outside [0, %d)", cols[i], n)
		}
		halo = append(halo, colCount{cols[i], int64(j - i), book.Owner(cols[i])})
		i = j
	}
	cols = nil
	slices.SortStableFunc(halo, func(a, b colCount) int { return cmp.Compare(a.owner, b.owner) })
	pairCounts := make([]int, p)
	send := make([]int64, 0, 2*len(halo))
	for _, h := range halo {
		pairCounts[h.owner] += 2
		send = append(send, h.gid, h.count)
	}

	// The owners sum the counts and answer with the totals.
	recvCounts, err := collective.AlltoallCounts(c, pairCounts)
	if err != nil {
		return nil, fmt.Errorf("alltoall: exchanging in-degree counts: %w", err)
	}
	recv, err := collective.AlltoallvFlat(c, send, pairCounts, recvCounts)
	if err != nil {
		return nil, fmt.Errorf("alltoall: exchanging in-degree counts: %w", err)
	}
	owned := book.Owned(rank)
	total := make([]int64, len(owned))
	var bad error // reported after the answer, so that no rank is left waiting
	lids := make([]int64, len(recv)/2)
	for k := range lids {
		gid := recv[2*k]
		q, lid := -1, int64(-1)
		if gid >= 0 && gid < n {
			q, lid = book.Locate(gid)
		}
		if q != rank {
			if bad == nil {
				bad = fmt.Errorf("alltoall: in-degree: rank %d was sent the count of vertex %d, which it does not own (partition books differ?)", rank, gid)
			}
			lids[k] = -1
			continue
		}
		lids[k] = lid
		total[lid] += recv[2*k+1]
	}
	answer := make([]int64, len(lids))
	for k, lid := range lids {
		if lid >= 0 {
			answer[k] = total[lid]
		}
	}
	half := func(x []int) []int {
		h := make([]int, len(x))
		for i, v := range x {
			h[i] = v / 2
		}
		return h
	}
	back, err := collective.AlltoallvFlat(c, answer, half(recvCounts), half(pairCounts))
	if err != nil {
		return nil, fmt.Errorf("alltoall: exchanging in-degree totals: %w", err)
	}
	if bad != nil {
		return nil, bad
	}

	// The halo's totals and the owned vertices', merged by id.
	out := make([]colCount, 0, len(halo)+len(owned))
	for k, h := range halo {
		if h.owner != rank {
			out = append(out, colCount{gid: h.gid, count: back[k]})
		}
	}
	for lid, gid := range owned {
		if total[lid] > 0 {
			out = append(out, colCount{gid: gid, count: total[lid]})
		}
	}
	slices.SortFunc(out, func(a, b colCount) int { return cmp.Compare(a.gid, b.gid) })
	v := &sparse.Vec{N: n, Indices: make([]int64, len(out)), Values: make([]float64, len(out))}
	for k, e := range out {
		v.Indices[k], v.Values[k] = e.gid, float64(e.count)
	}
	return v, nil
}
