package partition

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

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
// Make a Book with New, Read or a partitioner, and do not modify its fields
// afterwards: its methods rely on caches built from them. A Book is safe for
// concurrent use by readers.
type Book struct {
	Parts  int     // number of parts (ranks)
	Method string  // how the book was made: "block", "random", "metis", …
	Part   []int32 // gid → rank
	Local  []int64 // gid → local id within its rank

	// offsets[r]:offsets[r+1] is the range of order holding the gids of
	// part r, in ascending order. Both are nil in a book built as a
	// literal, and then computed on demand.
	offsets []int64
	order   []int64
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
	b.order = make([]int64, len(part))
	next := slices.Clone(b.offsets[:parts])
	for gid, r := range part {
		b.Local[gid] = next[r] - b.offsets[r]
		b.order[next[r]] = int64(gid)
		next[r]++
	}
	return b
}

// NumNodes returns the number of vertices the book assigns.
func (b *Book) NumNodes() int64 { return int64(len(b.Part)) }

// Owner returns the rank owning global vertex gid.
// It will panic if gid is out of range.
func (b *Book) Owner(gid int64) int {
	if gid < 0 || gid >= int64(len(b.Part)) {
		panic("partition: gid out of range")
	}
	return int(b.Part[gid])
}

// LocalID returns the local id of global vertex gid on its owning rank.
// It will panic if gid is out of range.
func (b *Book) LocalID(gid int64) int64 {
	if gid < 0 || gid >= int64(len(b.Local)) {
		panic("partition: gid out of range")
	}
	return b.Local[gid]
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
	if b.offsets == nil {
		var gids []int64
		for gid, r := range b.Part {
			if int(r) == rank {
				gids = append(gids, int64(gid))
			}
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
	n := int64(len(b.Part))
	if adj.NRows != n || adj.NCols != n {
		panic("partition: adjacency does not match book")
	}
	var cut int64
	for i := range n {
		pi := b.Part[i]
		for _, j := range adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]] {
			if b.Part[j] != pi {
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
			total = int64(len(b.Part))
		} else {
			if len(mask) != len(b.Part) {
				panic("partition: balance mask length does not match book")
			}
			clear(w)
			for gid, in := range mask {
				if in {
					w[b.Part[gid]]++
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
	return newBook(part, parts, "block")
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
	return newBook(part, parts, "random")
}
