package partition

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"gnnmpi/collective"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// streamRandom is the stream id of Random under its seed.
const streamRandom = 101

// Book assigns every vertex of a graph to one of Parts ranks and numbers the
// vertices of each rank, modelled on DGL's GraphPartitionBook (nid2partid,
// nid2localnid).
//
// Part[gid] is the rank owning global vertex gid, and Local[gid] its local id
// there. Local ids run from 0 to the part's size − 1 and follow ascending global
// id within each part, so the vertices of a rank are Owned(rank) in local-id
// order.
//
// A book made by Contiguous assigns every part a contiguous range of ids,
// [offsets[r], offsets[r+1]), and stores only those K+1 offsets: its Part
// and Local are nil, Owner is a binary search and LocalID is gid −
// offsets[r]. Code outside this package reads a book through its methods,
// which answer alike for both kinds.
//
// Make a Book with New, Contiguous, Read or a partitioner, and do not
// modify its fields afterwards: its methods rely on caches built from them.
// A Book is safe for concurrent use by readers.
type Book struct {
	Parts  int     // number of parts (ranks)
	Method string  // how the book was made: "block", "random", "metis", …
	Part   []int32 // gid → rank; nil in a book made by Contiguous
	Local  []int64 // gid → local id within its rank; nil in a book made by Contiguous

	// offsets[r]:offsets[r+1] is the range of order holding the gids of
	// part r, in ascending order. Both are nil in a book built as a
	// literal, and then computed on demand. When contig is true the parts
	// are consecutive id ranges in part order, offsets[r]:offsets[r+1] is
	// part r's id range itself and order is nil (it would be the
	// identity).
	offsets []int64
	order   []int64
	contig  bool
}

// Contiguous returns the book in which part r owns the vertices
// [offsets[r], offsets[r+1]) with local id gid − offsets[r], made with
// method (a non-empty word without white space, recorded in files). It
// holds only a copy of offsets (Part and Local are nil), so it takes
// O(K) memory for K = len(offsets) − 1 parts whatever the vertex count.
// It returns an error if there is no part or too many for int32, offsets[0]
// is not 0, the offsets decrease, or method is not a word.
func Contiguous(offsets []int64, method string) (*Book, error) {
	parts := len(offsets) - 1
	if parts < 1 || parts > math.MaxInt32 {
		return nil, fmt.Errorf("partition: contiguous book with %d parts", max(parts, 0))
	}
	if err := checkMethod(method); err != nil {
		return nil, err
	}
	if offsets[0] != 0 {
		return nil, fmt.Errorf("partition: contiguous book whose first offset is %d, not 0", offsets[0])
	}
	for r := range parts {
		if offsets[r+1] < offsets[r] {
			return nil, fmt.Errorf("partition: contiguous book whose offset %d (%d) is below offset %d (%d)", r+1, offsets[r+1], r, offsets[r])
		}
	}
	return &Book{Parts: parts, Method: method, offsets: slices.Clone(offsets), contig: true}, nil
}

// compact reports whether b was made by Contiguous (stores no arrays).
func (b *Book) compact() bool { return b.Part == nil && b.contig }

// Offsets returns the K+1 offsets of a book whose parts are consecutive id
// ranges in part order, part r owning [Offsets()[r], Offsets()[r+1]): every
// book made by Contiguous, and a book of another kind whose assignment
// happens to be so (a Block book, say). It returns nil for any other book.
// The caller owns the returned slice.
func (b *Book) Offsets() []int64 {
	if !b.contig {
		return nil
	}
	return slices.Clone(b.offsets)
}

// Range returns the id range [lo, hi) of part r in a book whose Offsets are
// not nil.
// It will panic if the book's parts are not id ranges or r is outside
// [0, Parts).
func (b *Book) Range(r int) (lo, hi int64) {
	if !b.contig {
		panic("partition: Range of a book whose parts are not id ranges")
	}
	if r < 0 || r >= b.Parts {
		panic("partition: rank out of range")
	}
	return b.offsets[r], b.offsets[r+1]
}

// New returns the book assigning vertex gid to part[gid], made with method (a
// non-empty word without white space, recorded in files). It returns an
// error if parts < 1 or too large for int32, if method is not a word, or if
// an entry of part lies outside [0, parts).
//
// The book keeps part as its Part field; the caller must not modify it
// afterwards.
func New(part []int32, parts int, method string) (*Book, error) {
	if parts < 1 || parts > math.MaxInt32 {
		return nil, fmt.Errorf("partition: book with %d parts", parts)
	}
	if err := checkMethod(method); err != nil {
		return nil, err
	}
	for gid, r := range part {
		if r < 0 || int(r) >= parts {
			return nil, fmt.Errorf("partition: vertex %d assigned to part %d outside [0,%d)", gid, r, parts)
		}
	}
	return newBook(part, parts, method), nil
}

func checkMethod(method string) error {
	if method == "" || strings.ContainsFunc(method, unicode.IsSpace) {
		return fmt.Errorf("partition: method %q is not a non-empty word", method)
	}
	return nil
}

// newBook builds a book from a valid assignment.
func newBook(part []int32, parts int, method string) *Book {
	b := &Book{Parts: parts, Method: method, Part: part}
	b.offsets = make([]int64, parts+1)
	for _, r := range part {
		b.offsets[r+1]++
	}
	for r := range parts {
		b.offsets[r+1] += b.offsets[r]
	}
	b.Local = make([]int64, len(part))
	b.contig = slices.IsSorted(part)
	if !b.contig {
		b.order = make([]int64, len(part))
	}
	next := slices.Clone(b.offsets[:parts])
	for gid, r := range part {
		b.Local[gid] = next[r] - b.offsets[r]
		if !b.contig {
			b.order[next[r]] = int64(gid)
		}
		next[r]++
	}
	return b
}

// NumNodes returns the number of vertices the book assigns.
func (b *Book) NumNodes() int64 {
	if b.compact() {
		return b.offsets[b.Parts]
	}
	return int64(len(b.Part))
}

// Owner returns the rank owning global vertex gid: an array read, or a
// binary search over the offsets of a book made by Contiguous.
// It will panic if gid is out of range.
func (b *Book) Owner(gid int64) int {
	if b.compact() {
		return b.rangeOf(gid)
	}
	if gid < 0 || gid >= int64(len(b.Part)) {
		panic("partition: gid out of range")
	}
	return int(b.Part[gid])
}

// rangeOf returns the part of a compact book whose range holds gid (empty
// parts, which end where they start, are skipped).
func (b *Book) rangeOf(gid int64) int {
	if gid < 0 || gid >= b.offsets[b.Parts] {
		panic("partition: gid out of range")
	}
	return collective.BlockOf(b.offsets, gid)
}

// LocalID returns the local id of global vertex gid on its owning rank.
// It will panic if gid is out of range.
func (b *Book) LocalID(gid int64) int64 {
	if b.compact() {
		return gid - b.offsets[b.rangeOf(gid)]
	}
	if gid < 0 || gid >= int64(len(b.Local)) {
		panic("partition: gid out of range")
	}
	return b.Local[gid]
}

// Locate returns Owner(gid) and LocalID(gid) together, with one binary
// search on a book made by Contiguous, and without reading Part and Local
// on a contiguous book of one part (part 0, local id gid: a run on one
// rank locates every row it samples).
// It will panic if gid is out of range.
func (b *Book) Locate(gid int64) (owner int, lid int64) {
	if b.contig && b.Parts == 1 {
		if gid < 0 || gid >= b.offsets[1] {
			panic("partition: gid out of range")
		}
		return 0, gid
	}
	if b.compact() {
		r := b.rangeOf(gid)
		return r, gid - b.offsets[r]
	}
	return b.Owner(gid), b.Local[gid]
}

// Owned returns the global ids of the vertices owned by rank in ascending
// order, which is also their local-id order: Owned(r)[lid] is the vertex
// with LocalID lid on rank r. It takes time proportional to the part's size;
// the caller owns the returned slice.
// It will panic if rank is outside [0, Parts).
func (b *Book) Owned(rank int) []int64 {
	if rank < 0 || rank >= b.Parts {
		panic("partition: rank out of range")
	}
	switch {
	case b.offsets == nil:
		var gids []int64
		for gid, r := range b.Part {
			if int(r) == rank {
				gids = append(gids, int64(gid))
			}
		}
		return gids
	case b.contig:
		lo, hi := b.offsets[rank], b.offsets[rank+1]
		gids := make([]int64, hi-lo)
		for i := range gids {
			gids[i] = lo + int64(i)
		}
		return gids
	}
	return slices.Clone(b.order[b.offsets[rank]:b.offsets[rank+1]])
}

// Sizes returns the number of vertices of each part. The caller owns the
// returned slice.
func (b *Book) Sizes() []int64 {
	sizes := make([]int64, b.Parts)
	if b.offsets == nil {
		for _, r := range b.Part {
			sizes[r]++
		}
		return sizes
	}
	for r := range sizes {
		sizes[r] = b.offsets[r+1] - b.offsets[r]
	}
	return sizes
}

// EdgeCut returns the number of stored (directed) edges of adj whose
// endpoints lie in different parts. For a symmetric adjacency it is twice
// the number of cut undirected edges that METIS reports.
// It will panic if adj is not NumNodes×NumNodes.
func (b *Book) EdgeCut(adj *sparse.CSR) int64 {
	n := b.NumNodes()
	if adj.NRows != n || adj.NCols != n {
		panic("partition: adjacency does not match book")
	}
	var cut int64
	for i := range n {
		pi := b.Owner(i)
		for _, j := range adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]] {
			if b.Owner(j) != pi {
				cut++
			}
		}
	}
	return cut
}

// Balance returns, for each constraint, the weight of the heaviest part over
// the mean weight of a part: 1 is perfect balance. Each constraint is a mask
// giving weight 1 to the vertices where it is true (train vertices, say), or
// nil for weight 1 on every vertex; with no arguments Balance measures vertex
// counts, as Balance(nil) does. A constraint of total weight 0 has balance 1.
// It will panic if a non-nil mask's length is not NumNodes.
func (b *Book) Balance(weights ...[]bool) []float64 {
	if len(weights) == 0 {
		weights = [][]bool{nil}
	}
	bal := make([]float64, len(weights))
	w := make([]int64, b.Parts)
	for c, mask := range weights {
		var total int64
		if mask == nil {
			w = b.Sizes()
			total = b.NumNodes()
		} else {
			if int64(len(mask)) != b.NumNodes() {
				panic("partition: balance mask length does not match book")
			}
			clear(w)
			for gid, in := range mask {
				if in {
					w[b.Owner(int64(gid))]++
					total++
				}
			}
		}
		bal[c] = 1
		if total > 0 {
			bal[c] = float64(slices.Max(w)) / (float64(total) / float64(b.Parts))
		}
	}
	return bal
}

// Block returns the book assigning n vertices to parts ranks in contiguous
// blocks of ascending ids whose sizes differ by at most one (the first
// n mod parts blocks are one larger). Method is "block".
// It will panic if n < 0 or parts < 1 or parts does not fit int32.
func Block(n int64, parts int) *Book {
	if n < 0 || parts < 1 || parts > math.MaxInt32 {
		panic("partition: bad block partition size")
	}
	part := make([]int32, n)
	q, big := n/int64(parts), n%int64(parts)
	var lo int64
	for r := range parts {
		hi := lo + q
		if int64(r) < big {
			hi++
		}
		for gid := lo; gid < hi; gid++ {
			part[gid] = int32(r)
		}
		lo = hi
	}
	return newBook(part, parts, string(MethodBlock))
}

// Random returns a balanced random book for n vertices: a seeded random
// permutation of the vertices is dealt to the parts round-robin, so part
// sizes differ by at most one. Method is "random". The book depends only on
// n, parts and seed.
// It will panic if n < 0 or parts < 1 or parts does not fit int32.
func Random(n int64, parts int, seed uint64) *Book {
	if n < 0 || parts < 1 || parts > math.MaxInt32 {
		panic("partition: bad random partition size")
	}
	part := make([]int32, n)
	for i := range part {
		part[i] = int32(i % parts)
	}
	// Fisher–Yates: part[perm[i]] = i mod parts for a uniform perm.
	r := rng.New(seed, streamRandom)
	for i := n - 1; i > 0; i-- {
		j := r.Int64N(i + 1)
		part[i], part[j] = part[j], part[i]
	}
	return newBook(part, parts, string(MethodRandom))
}
