package dist

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// BlockRange returns the rows [lo, hi) of rank r of p in a split of n rows
// into p consecutive blocks whose sizes differ by at most one, the larger
// first, as partition.Block assigns vertices. It will panic unless
// n ≥ 0 and 0 ≤ r < p.
func BlockRange(n int64, p, r int) (lo, hi int64) {
	if n < 0 || p < 1 || r < 0 || r >= p {
		panic("dist: bad block range")
	}
	q, big := n/int64(p), n%int64(p)
	lo = int64(r)*q + min(int64(r), big)
	hi = lo + q
	if int64(r) < big {
		hi++
	}
	return lo, hi
}

// Bounds returns the bounds of the row blocks of every rank of c, p+1
// offsets: rank q holds rows [b[q], b[q+1]). Each rank passes the first
// row lo and the block adj; n is the number of vertices of the whole
// graph. It returns an error, on every rank alike, unless the blocks are
// consecutive from 0 to n in rank order and every block is NRows×n.
// Bounds is collective over c.
func Bounds(c collective.Comm, n, lo int64, adj *sparse.CSR) ([]int64, error) {
	p := c.Size()
	mine := []int64{lo, adj.NRows, adj.NCols, n}
	all, _, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return nil, err
	}
	b := make([]int64, p+1)
	for q := range p {
		qlo, rows, cols, qn := all[4*q], all[4*q+1], all[4*q+2], all[4*q+3]
		if qn != n || cols != n {
			return nil, fmt.Errorf("dist: rank %d has a block of %d columns for %d vertices, rank %d of %d columns", q, cols, qn, c.Rank(), n)
		}
		if qlo != b[q] || rows < 0 {
			return nil, fmt.Errorf("dist: rank %d holds rows [%d,%d), want them to start at %d", q, qlo, qlo+rows, b[q])
		}
		b[q+1] = qlo + rows
	}
	if b[p] != n {
		return nil, fmt.Errorf("dist: the row blocks cover [0,%d), want [0,%d)", b[p], n)
	}
	return b, nil
}

// Symmetrize returns this rank's rows of the pattern of A ∪ Aᵀ without
// self-loops, where A is the n×n matrix whose rows [lo, lo+adj.NRows) are
// adj on this rank: row i holds j when (i, j) or (j, i) is in A and i ≠ j,
// columns ascending and without repeats. Values are dropped. The result
// equals the same rows of the single-rank symmetrization, whatever p.
// Symmetrize is collective over c; blocks must be as Bounds requires.
func Symmetrize(c collective.Comm, n, lo int64, adj *sparse.CSR) (*sparse.CSR, error) {
	b, err := Bounds(c, n, lo, adj)
	if err != nil {
		return nil, err
	}
	p := c.Size()
	// Reverse edges as (row, col) pairs for the owner of row.
	send := make([][]int64, p)
	for i := range adj.NRows {
		g := lo + i
		for _, j := range adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]] {
			if j < 0 || j >= n {
				panic("dist: column out of range")
			}
			if j != g {
				q := collective.BlockOf(b, j)
				send[q] = append(send[q], j, g)
			}
		}
	}
	recv, err := collective.AlltoallvSlices(c, send)
	if err != nil {
		return nil, err
	}
	return RowsFromPairs(lo, lo+adj.NRows, n, adj, recv, true), nil
}

// RowsFromPairs returns the CSR of rows [lo, hi) of an n-column pattern
// from own, this rank's rows of it (nil for none), and the (row, column)
// pairs of recv, rows in [lo, hi): every row's columns ascending and
// without repeats, and without its diagonal entry (i, i) when dropLoops
// is set. Values are dropped.
func RowsFromPairs(lo, hi, n int64, own *sparse.CSR, recv [][]int64, dropLoops bool) *sparse.CSR {
	b := NewRowBuilder(lo, hi, n)
	if own != nil {
		for i := range hi - lo {
			b.ptr[i+1] = own.Indptr[i+1] - own.Indptr[i]
		}
	}
	for _, pairs := range recv {
		b.Count(pairs, 2)
	}
	b.Alloc()
	if own != nil {
		for i := range hi - lo {
			b.next[i] += int64(copy(b.ind[b.next[i]:], own.Indices[own.Indptr[i]:own.Indptr[i+1]]))
		}
	}
	for _, pairs := range recv {
		b.Place(pairs)
	}
	return b.Finish(dropLoops)
}

// RowBuilder builds the CSR of rows [lo, hi) of an n-column pattern from
// (row, column) pairs that may arrive in rounds, in two passes over the
// same pairs: Count sees every pair's row, Alloc sizes the rows, Place
// puts every pair's column in its row, and Finish sorts the rows and
// drops repeats. It holds one int64 for each pair and two for each row,
// never the pairs themselves.
type RowBuilder struct {
	lo, hi, n      int64
	ptr, next, ind []int64
}

// NewRowBuilder returns a builder of rows [lo, hi) of n columns.
func NewRowBuilder(lo, hi, n int64) *RowBuilder {
	return &RowBuilder{lo: lo, hi: hi, n: n, ptr: make([]int64, hi-lo+1)}
}

// Count counts a pair for each row rows[0], rows[stride], rows[2·stride],
// …: stride 1 for a list of rows, 2 for (row, column) pairs. It will panic
// if a row lies outside [lo, hi), or if called after Alloc.
func (b *RowBuilder) Count(rows []int64, stride int) {
	if b.ind != nil {
		panic("dist: RowBuilder.Count after Alloc")
	}
	for k := 0; k < len(rows); k += stride {
		b.ptr[rows[k]-b.lo+1]++
	}
}

// Alloc sizes the rows for the pairs counted.
func (b *RowBuilder) Alloc() {
	rows := b.hi - b.lo
	for i := range rows {
		b.ptr[i+1] += b.ptr[i]
	}
	b.ind = make([]int64, b.ptr[rows])
	b.next = slices.Clone(b.ptr[:rows])
}

// Place puts the column of every (row, column) pair of pairs in its row.
// It will panic if a row gets more columns than were counted for it, or
// if a column lies outside [0, n).
func (b *RowBuilder) Place(pairs []int64) {
	for k := 0; k < len(pairs); k += 2 {
		i, j := pairs[k]-b.lo, pairs[k+1]
		if j < 0 || j >= b.n {
			panic("dist: RowBuilder.Place: column out of range")
		}
		if b.next[i] == b.ptr[i+1] {
			panic("dist: RowBuilder.Place: more pairs than counted")
		}
		b.ind[b.next[i]] = j
		b.next[i]++
	}
}

// Finish returns the rows, each sorted, without repeated columns and,
// when dropLoops is set, without its diagonal entry. The builder must not
// be used afterwards. It will panic if fewer pairs were placed than
// counted.
func (b *RowBuilder) Finish(dropLoops bool) *sparse.CSR {
	rows, ptr, ind, n := b.hi-b.lo, b.ptr, b.ind, b.n
	var w int64
	for i := range rows {
		if b.next[i] != ptr[i+1] {
			panic("dist: RowBuilder.Finish: fewer pairs placed than counted")
		}
		row := ind[ptr[i]:ptr[i+1]]
		slices.Sort(row)
		ptr[i] = w
		for k, j := range row {
			if (dropLoops && j == b.lo+i) || (k > 0 && j == row[k-1]) {
				continue
			}
			ind[w] = j
			w++
		}
	}
	ptr[rows] = w
	*b = RowBuilder{}
	return &sparse.CSR{NRows: rows, NCols: n, Indptr: ptr, Indices: slices.Clip(ind[:w])}
}

// Graph is one rank's block of a distributed undirected graph, as an
// Engine receives it.
type Graph struct {
	// N is the number of vertices of the whole graph.
	N int64
	// NNZ is the number of stored entries of the whole graph (each
	// undirected edge counted twice).
	NNZ int64
	// Bounds holds the p+1 block bounds: rank q holds rows
	// [Bounds[q], Bounds[q+1]).
	Bounds []int64
	// Lo is this rank's first row, Bounds[rank].
	Lo int64
	// Adj holds this rank's rows: Adj.NRows × N, symmetric across the
	// ranks, columns ascending, no self-loops or repeated entries.
	Adj *sparse.CSR
}

// Engine partitions the distributed undirected graph g into parts parts,
// seeded by seed, and returns the part of each of this rank's rows. It is
// collective over c, and must fail on every rank alike or on none.
type Engine func(c collective.Comm, g *Graph, parts int, seed int64) ([]int32, error)

// Partition partitions the graph whose rows [lo, lo+adj.NRows) are adj on
// this rank (of n vertices in all; directed or not, with or without
// self-loops) into parts parts with engine, after symmetrizing it
// (Symmetrize), and returns the part of each of this rank's rows, in
// [0, parts). Partition is collective over c.
//
// It returns an error, on every rank alike, if parts < 1 or does not fit
// int32, if the blocks are not as Bounds requires, if the engine fails, or
// if the engine returns the wrong number of parts or a part outside
// [0, parts) on some rank.
func Partition(c collective.Comm, n, lo int64, adj *sparse.CSR, parts int, seed int64, engine Engine) ([]int32, error) {
	if parts < 1 || parts > math.MaxInt32 {
		return nil, fmt.Errorf("dist: partition into %d parts", parts)
	}
	sym, err := Symmetrize(c, n, lo, adj)
	if err != nil {
		return nil, err
	}
	b, err := Bounds(c, n, lo, sym)
	if err != nil {
		return nil, err
	}
	nnz, err := collective.AllreduceScalar(c, sym.NNZ(), collective.Sum)
	if err != nil {
		return nil, err
	}
	part, err := engine(c, &Graph{N: n, NNZ: nnz, Bounds: b, Lo: lo, Adj: sym}, parts, seed)
	if err != nil {
		return nil, err
	}
	var bad int64
	if int64(len(part)) != sym.NRows {
		bad = 1
	} else if slices.ContainsFunc(part, func(r int32) bool { return r < 0 || int(r) >= parts }) {
		bad = 1
	}
	if bad, err = collective.AllreduceScalar(c, bad, collective.Sum); err != nil {
		return nil, err
	}
	if bad > 0 {
		return nil, fmt.Errorf("dist: the partitioner returned invalid parts on %d rank(s)", bad)
	}
	return part, nil
}

// EdgeCut returns the number of stored (directed) edges of the whole graph
// whose endpoints lie in different parts, where this rank holds rows
// [lo, lo+adj.NRows) of the n-vertex graph and part[i] is the part of its
// row i: partition.Book.EdgeCut of the gathered book and whole adjacency.
// The parts of remote endpoints are fetched from their owners (a halo
// exchange). EdgeCut is collective over c and returns the same count on
// every rank. It will panic if len(part) ≠ adj.NRows.
func EdgeCut(c collective.Comm, n, lo int64, adj *sparse.CSR, part []int32) (int64, error) {
	if int64(len(part)) != adj.NRows {
		panic("dist: EdgeCut: parts do not match the rows")
	}
	b, err := Bounds(c, n, lo, adj)
	if err != nil {
		return 0, err
	}
	ids, remote, err := fetch(c, b, adj, part)
	if err != nil {
		return 0, err
	}
	hi := lo + adj.NRows
	index := newSortedIndex(ids)
	var cut int64
	for i := range adj.NRows {
		for _, j := range adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]] {
			var pj int32
			if j >= lo && j < hi {
				pj = part[j-lo]
			} else {
				k, ok := index.find(j)
				if !ok {
					panic("dist: internal error: missing halo vertex")
				}
				pj = remote[k]
			}
			if pj != part[i] {
				cut++
			}
		}
	}
	return collective.AllreduceScalar(c, cut, collective.Sum)
}

// Sizes returns the number of vertices of each of the parts parts, over
// every rank's part (the parts of its rows). It is collective over c and
// returns the same on every rank. It will panic if a part lies outside
// [0, parts).
func Sizes(c collective.Comm, part []int32, parts int) ([]int64, error) {
	sizes := make([]int64, parts)
	for _, r := range part {
		sizes[r]++
	}
	if err := collective.AllreduceSlice(c, sizes, collective.Sum); err != nil {
		return nil, err
	}
	return sizes, nil
}

// Imbalance returns the largest part size over the mean part size (1 is
// perfect balance; 1 for no vertices).
func Imbalance(sizes []int64) float64 {
	var total, big int64
	for _, s := range sizes {
		total += s
		big = max(big, s)
	}
	if total == 0 {
		return 1
	}
	return float64(big) * float64(len(sizes)) / float64(total)
}

// tagGather is the message tag of GatherParts.
const tagGather = 20

// GatherParts returns, on rank root, the parts of every rank in rank
// order (so in vertex order when the ranks hold consecutive row blocks),
// and nil on the other ranks. Only root holds the whole array. It is
// collective over c.
func GatherParts(c collective.Comm, part []int32, root int) ([]int32, error) {
	if root < 0 || root >= c.Size() {
		return nil, errors.New("dist: GatherParts: root out of range")
	}
	counts, err := collective.AllgatherCounts(c, len(part))
	if err != nil {
		return nil, err
	}
	if c.Rank() != root {
		if len(part) == 0 {
			return nil, nil
		}
		return nil, c.Send(collective.BufOf(part), root, tagGather)
	}
	total := 0
	for _, k := range counts {
		total += k
	}
	all := make([]int32, 0, total)
	for q, k := range counts {
		if q == root {
			all = append(all, part...)
			continue
		}
		if k == 0 {
			continue
		}
		buf := make([]int32, k)
		got, err := c.Recv(collective.BufOf(buf), q, tagGather)
		if err != nil {
			return nil, err
		}
		if got != k {
			return nil, fmt.Errorf("dist: GatherParts: %d parts from rank %d, want %d", got, q, k)
		}
		all = append(all, buf...)
	}
	return all, nil
}
