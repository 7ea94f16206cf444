package graph

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"gnnmpi/graph/metis"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// genStreamPartRandom is the stream id of RandomPartition under its seed.
const genStreamPartRandom = 101

// PartitionBook assigns every vertex of a graph to one of Parts ranks and
// numbers the vertices of each rank, modelled on DGL's GraphPartitionBook
// (nid2partid, nid2localnid).
//
// Part[gid] is the rank owning global vertex gid, and Local[gid] its local id
// there. Local ids run from 0 to the part's size − 1 and follow ascending global
// id within each part, so the vertices of a rank are Owned(rank) in local-id
// order.
//
// Make a PartitionBook with NewPartitionBook, ReadBook or a partitioner, and
// do not modify its fields afterwards: its methods rely on caches built from
// them. A PartitionBook is safe for concurrent use by readers.
type PartitionBook struct {
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

// NewPartitionBook returns the book assigning vertex gid to part[gid], made
// with method (a non-empty word without white space, recorded in files). It
// returns an error if parts < 1 or too large for int32, if method is not a
// word, or if an entry of part lies outside [0, parts).
//
// The book keeps part as its Part field; the caller must not modify it
// afterwards.
func NewPartitionBook(part []int32, parts int, method string) (*PartitionBook, error) {
	if parts < 1 || parts > math.MaxInt32 {
		return nil, fmt.Errorf("graph: partition book with %d parts", parts)
	}
	if err := checkMethod(method); err != nil {
		return nil, err
	}
	for gid, r := range part {
		if r < 0 || int(r) >= parts {
			return nil, fmt.Errorf("graph: vertex %d assigned to part %d outside [0,%d)", gid, r, parts)
		}
	}
	return newBook(part, parts, method), nil
}

func checkMethod(method string) error {
	if method == "" || strings.ContainsFunc(method, unicode.IsSpace) {
		return fmt.Errorf("graph: partition method %q is not a non-empty word", method)
	}
	return nil
}

// newBook builds a book from a valid assignment.
func newBook(part []int32, parts int, method string) *PartitionBook {
	b := &PartitionBook{Parts: parts, Method: method, Part: part}
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
func (b *PartitionBook) NumNodes() int64 { return int64(len(b.Part)) }

// Owner returns the rank owning global vertex gid.
// It will panic if gid is out of range.
func (b *PartitionBook) Owner(gid int64) int {
	if gid < 0 || gid >= int64(len(b.Part)) {
		panic("graph: gid out of range")
	}
	return int(b.Part[gid])
}

// LocalID returns the local id of global vertex gid on its owning rank.
// It will panic if gid is out of range.
func (b *PartitionBook) LocalID(gid int64) int64 {
	if gid < 0 || gid >= int64(len(b.Local)) {
		panic("graph: gid out of range")
	}
	return b.Local[gid]
}

// Owned returns the global ids of the vertices owned by rank in ascending
// order, which is also their local-id order: Owned(r)[lid] is the vertex
// with LocalID lid on rank r. It takes time proportional to the part's size;
// the caller owns the returned slice.
// It will panic if rank is outside [0, Parts).
func (b *PartitionBook) Owned(rank int) []int64 {
	if rank < 0 || rank >= b.Parts {
		panic("graph: rank out of range")
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
func (b *PartitionBook) Sizes() []int64 {
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
func (b *PartitionBook) EdgeCut(adj *sparse.CSR) int64 {
	n := int64(len(b.Part))
	if adj.NRows != n || adj.NCols != n {
		panic("graph: adjacency does not match partition book")
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
func (b *PartitionBook) Balance(weights ...[]bool) []float64 {
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
				panic("graph: balance mask length does not match partition book")
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

// BlockPartition returns the book assigning n vertices to parts ranks in
// contiguous blocks of ascending ids whose sizes differ by at most one (the
// first n mod parts blocks are one larger). Method is "block".
// It will panic if n < 0 or parts < 1 or parts does not fit int32.
func BlockPartition(n int64, parts int) *PartitionBook {
	if n < 0 || parts < 1 || parts > math.MaxInt32 {
		panic("graph: bad block partition size")
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

// RandomPartition returns a balanced random book for n vertices: a seeded
// random permutation of the vertices is dealt to the parts round-robin, so
// part sizes differ by at most one. Method is "random". The book depends only
// on n, parts and seed.
// It will panic if n < 0 or parts < 1 or parts does not fit int32.
func RandomPartition(n int64, parts int, seed uint64) *PartitionBook {
	if n < 0 || parts < 1 || parts > math.MaxInt32 {
		panic("graph: bad random partition size")
	}
	part := make([]int32, n)
	for i := range part {
		part[i] = int32(i % parts)
	}
	// Fisher–Yates: part[perm[i]] = i mod parts for a uniform perm.
	r := rng.New(seed, genStreamPartRandom)
	for i := n - 1; i > 0; i-- {
		j := r.Int64N(i + 1)
		part[i], part[j] = part[j], part[i]
	}
	return newBook(part, parts, "random")
}

// MetisPartition partitions the whole dataset d into parts with METIS k-way
// (package graph/metis), minimising the edge cut of its adjacency made
// symmetric and free of self-loops. Method is "metis".
//
// When split names one of d.Splits, the partition balances four constraints
// at once, as SALIENT++ does: vertex count and the numbers of train, valid
// and test vertices of that split (each within METIS's default 3%, up to
// granularity; empty sets are left out). With split "" it balances vertex
// count only. seed seeds METIS.
//
// MetisPartition returns an error if d holds only some rows (Rows != nil) or
// no adjacency, if the split does not exist, if parts < 1, or if METIS fails
// (wrapping the graph/metis error).
func MetisPartition(d *Dataset, parts int, split string, seed int) (*PartitionBook, error) {
	if d.Rows != nil {
		return nil, fmt.Errorf("graph: MetisPartition needs the whole graph, dataset %s holds %d of %d rows", d.Name, len(d.Rows), d.NumNodes)
	}
	if d.Adj == nil {
		return nil, fmt.Errorf("graph: MetisPartition: dataset %s has no adjacency", d.Name)
	}
	n := d.NumNodes
	if d.Adj.NRows != n || d.Adj.NCols != n {
		return nil, fmt.Errorf("graph: MetisPartition: adjacency is %d×%d, want %d×%d", d.Adj.NRows, d.Adj.NCols, n, n)
	}
	if parts < 1 || parts > math.MaxInt32 {
		return nil, fmt.Errorf("graph: MetisPartition into %d parts", parts)
	}

	// Vertex weights: (1, isTrain, isValid, isTest), keeping non-empty sets.
	var vwgt []int64
	ncon := 1
	if split != "" {
		s, ok := d.Splits[split]
		if !ok {
			return nil, fmt.Errorf("graph: MetisPartition: dataset %s has no split %q (have %v)", d.Name, split, d.SplitNames())
		}
		sets := [][]int64{nil}
		for _, set := range [][]int64{s.Train, s.Valid, s.Test} {
			if len(set) > 0 {
				sets = append(sets, set)
			}
		}
		ncon = len(sets)
		vwgt = make([]int64, n*int64(ncon))
		for v := range n {
			vwgt[v*int64(ncon)] = 1
		}
		for c, set := range sets[1:] {
			for _, v := range set {
				if v < 0 || v >= n {
					return nil, fmt.Errorf("graph: MetisPartition: split %s has vertex %d outside [0,%d)", split, v, n)
				}
				vwgt[v*int64(ncon)+int64(c+1)] = 1
			}
		}
		if ncon == 1 {
			vwgt = nil
		}
	}

	// METIS needs both directions of every edge; it ignores self-loops.
	sym := Symmetrize(d.Adj)
	part, _, err := metis.PartGraph(sym.Indptr, sym.Indices, vwgt, ncon, parts, metis.Options{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("graph: METIS partition of %s into %d parts: %w", d.Name, parts, err)
	}
	return newBook(part, parts, "metis"), nil
}

// WriteBook writes b to path: a header line
//
//	gnnmpi-partition 1 nodes=N parts=K method=M
//
// then the part of each vertex, one decimal number per line in global-id
// order. The file is gzip-compressed when path ends in ".gz". WriteBook
// writes a temporary file in the same directory and renames it over path, so
// readers see either the old file or the complete new one.
func WriteBook(path string, b *PartitionBook) error {
	if b.Parts < 1 || b.Parts > math.MaxInt32 {
		return fmt.Errorf("graph: writing %s: partition book with %d parts", path, b.Parts)
	}
	if err := checkMethod(b.Method); err != nil {
		return fmt.Errorf("graph: writing %s: %w", path, err)
	}
	for gid, r := range b.Part {
		if r < 0 || int(r) >= b.Parts {
			return fmt.Errorf("graph: writing %s: vertex %d in part %d outside [0,%d)", path, gid, r, b.Parts)
		}
	}

	return writeText(path, func(w *bufio.Writer) error {
		if _, err := fmt.Fprintf(w, "gnnmpi-partition 1 nodes=%d parts=%d method=%s\n", len(b.Part), b.Parts, b.Method); err != nil {
			return err
		}
		return writeInts(w, b.Part)
	})
}

// ReadBook reads a partition book written by WriteBook, gunzipping it when
// path ends in ".gz". Malformed input is reported as a *ParseError at its
// line ("path:line: message"): a bad header, a part id that is not a number
// or lies outside [0, parts), or fewer or more part ids than the header's
// node count.
func ReadBook(path string) (*PartitionBook, error) {
	lr, err := openLines(path)
	if err != nil {
		return nil, err
	}
	defer lr.close()

	h, err := lr.next()
	if err == io.EOF {
		return nil, parseErr(path, 1, "empty file, want header "+strconv.Quote(bookHeaderSyntax))
	}
	if err != nil {
		return nil, err
	}
	nodes, parts, method, err := parseBookHeader(h)
	if err != nil {
		return nil, lr.errorf("%v", err)
	}
	// Every id takes at least two bytes, so a larger count is a lie; check
	// before allocating for it.
	if nodes > maxLines(path) {
		return nil, lr.errorf("nodes=%d is more than the file can hold", nodes)
	}

	part := make([]int32, 0, nodes)
	for {
		b, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if int64(len(part)) == nodes {
			return nil, lr.errorf("more than nodes=%d part ids", nodes)
		}
		r, ok := parseInt(b)
		if !ok {
			return nil, lr.errorf("bad part id %s", quote(b))
		}
		if r < 0 || r >= int64(parts) {
			return nil, lr.errorf("part id %d out of range [0,%d)", r, parts)
		}
		part = append(part, int32(r))
	}
	if int64(len(part)) != nodes {
		return nil, parseErr(path, lr.line+1, fmt.Sprintf("unexpected end of file after %d of nodes=%d part ids", len(part), nodes))
	}
	return newBook(part, parts, method), nil
}

// bookHeaderSyntax describes a valid header in error messages.
const bookHeaderSyntax = "gnnmpi-partition 1 nodes=N parts=K method=M"

// parseBookHeader parses "gnnmpi-partition 1 nodes=N parts=K method=M".
func parseBookHeader(line []byte) (nodes int64, parts int, method string, err error) {
	f := strings.Fields(string(line))
	if len(f) != 5 || f[0] != "gnnmpi-partition" {
		return 0, 0, "", fmt.Errorf("bad header %s, want %q", quote(line), bookHeaderSyntax)
	}
	if f[1] != "1" {
		return 0, 0, "", fmt.Errorf("unsupported partition book version %q, want 1", f[1])
	}
	value := func(field, key string) (int64, string, error) {
		v, ok := strings.CutPrefix(field, key+"=")
		if !ok || v == "" {
			return 0, "", fmt.Errorf("bad header field %q, want %s=…", field, key)
		}
		x, ok := parseInt([]byte(v))
		if key != "method" && !ok {
			return 0, "", fmt.Errorf("bad header field %q: not an integer", field)
		}
		return x, v, nil
	}
	nodes, _, err = value(f[2], "nodes")
	if err != nil {
		return 0, 0, "", err
	}
	if nodes < 0 {
		return 0, 0, "", fmt.Errorf("bad node count %d", nodes)
	}
	p, _, err := value(f[3], "parts")
	if err != nil {
		return 0, 0, "", err
	}
	if p < 1 || p > math.MaxInt32 {
		return 0, 0, "", fmt.Errorf("bad part count %d", p)
	}
	if _, method, err = value(f[4], "method"); err != nil {
		return 0, 0, "", err
	}
	return nodes, int(p), method, nil
}

// genStreamSubRandom is the stream id of SubPartition's random chunks.
const genStreamSubRandom = 102

// SubPartition splits every part of book into k chunks and returns each
// vertex's chunk, in [0, k): GNNPipe's chunks, which flow through a pipeline
// one after another. With method "metis" each part's induced subgraph (made
// symmetric, without self-loops, edges to other parts dropped) is split by
// METIS k-way with the given seed, so that few edges join chunks; with
// "random" the part's vertices are dealt to the chunks in a seeded random
// order (sizes differ by at most one). adj is the whole graph, n×n.
//
// It returns an error if k < 1, if a part has fewer than k vertices, if
// method is unknown or if METIS fails.
func SubPartition(adj *sparse.CSR, book *PartitionBook, k int, method string, seed int) ([]int32, error) {
	n := book.NumNodes()
	if adj.NRows != n || adj.NCols != n {
		return nil, fmt.Errorf("graph: SubPartition: adjacency is %d×%d for a book of %d vertices", adj.NRows, adj.NCols, n)
	}
	if k < 1 || k > math.MaxInt32 {
		return nil, fmt.Errorf("graph: SubPartition into %d chunks", k)
	}
	if method != "metis" && method != "random" {
		return nil, fmt.Errorf("graph: SubPartition method %q; want metis or random", method)
	}
	chunk := make([]int32, n)
	sym := adj
	if method == "metis" {
		sym = Symmetrize(adj)
	}
	for r := range book.Parts {
		own := book.Owned(r)
		if len(own) < k {
			return nil, fmt.Errorf("graph: part %d has %d vertices, fewer than %d chunks", r, len(own), k)
		}
		if k == 1 {
			continue
		}
		if method == "random" {
			rnd := rng.New(uint64(seed), genStreamSubRandom, uint64(r))
			perm := rnd.Perm(len(own))
			for i, j := range perm {
				chunk[own[j]] = int32(i % k)
			}
			continue
		}
		// The part's induced subgraph in local ids (own is ascending, so
		// local id = position in own = book.Local).
		xadj := make([]int64, len(own)+1)
		var adjncy []int64
		for i, gid := range own {
			for _, j := range sym.Row(gid) {
				if j != gid && int(book.Part[j]) == r {
					adjncy = append(adjncy, book.Local[j])
				}
			}
			xadj[i+1] = int64(len(adjncy))
		}
		part, _, err := metis.PartGraph(xadj, adjncy, nil, 1, k, metis.Options{Seed: seed})
		if err != nil {
			return nil, fmt.Errorf("graph: METIS split of part %d into %d chunks: %w", r, k, err)
		}
		for i, gid := range own {
			chunk[gid] = part[i]
		}
	}
	return chunk, nil
}
