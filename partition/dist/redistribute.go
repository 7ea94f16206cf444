package dist

import (
	"slices"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Block is one rank's rows [Lo, Lo+Adj.NRows) of a dataset, in the
// original vertex ids, as Redistribute takes them.
type Block struct {
	// Lo is the first row; blocks are consecutive in rank order.
	Lo int64
	// Adj holds the rows, NRows × n, with global column ids; Values, if
	// not nil, are the edge weights. Its rows need not be sorted.
	Adj *sparse.CSR
	// Feat or FeatCSR (at most one; neither without features) holds one
	// feature row per row. Every rank passes the same kind and width;
	// FeatCSR.Values is nil on every rank or on none.
	Feat    *dense.Matrix
	FeatCSR *sparse.Matrix[float32]
	// Labels holds one label per row, or is nil on every rank.
	Labels []int32
	// Splits maps each split's name to the original ids in [Lo, Hi) of
	// its train, validation and test members (any order). Every rank
	// passes the same names.
	Splits map[string]Members
}

// Members are the train, validation and test vertices of one split.
type Members [3][]int64

// PartRows is one part of a relabelled dataset, as the rank that writes it
// receives it from Redistribute: part Part holds the new ids [Lo, Hi).
type PartRows struct {
	Part   int
	Lo, Hi int64
	// Adj is (Hi−Lo) × n: row i is new vertex Lo+i, its columns new ids
	// sorted ascending by a stable sort (Adj.SortRows), so repeated
	// edges keep their order and weights.
	Adj     *sparse.CSR
	Feat    *dense.Matrix
	FeatCSR *sparse.Matrix[float32]
	Labels  []int32
	// Splits holds the new ids in [Lo, Hi) of each split's members,
	// ascending.
	Splits map[string]Members
	// OrigIDs[i] is the original id of new vertex Lo+i.
	OrigIDs []int64
}

// Writer returns the rank that writes part q in a job of p ranks: q mod p.
func Writer(q, p int) int { return q % p }

// Offsets returns the parts+1 offsets of the relabelled ids for the
// global part sizes: part q gets [offsets[q], offsets[q+1]).
func Offsets(sizes []int64) []int64 {
	off := make([]int64, len(sizes)+1)
	for q, s := range sizes {
		off[q+1] = off[q] + s
	}
	return off
}

// NewIDs returns the new id of each of this rank's rows under the
// relabelling of graph.Relabel for the book whose parts are part on every
// rank: vertex v of part q gets offsets[q] plus the number of vertices of
// part q with a smaller original id. The row blocks are consecutive in
// rank order, so that number is the count of part q on lower ranks (an
// exclusive prefix over the ranks, from one Allgather of parts counts per
// rank) plus the count before v in this block. It also returns the
// offsets. NewIDs is collective over c; it will panic if a part lies
// outside [0, parts).
func NewIDs(c collective.Comm, part []int32, parts int) (newID, offsets []int64, err error) {
	counts := make([]int64, parts)
	for _, q := range part {
		counts[q]++
	}
	all, _, err := collective.AllgatherSlice(c, counts)
	if err != nil {
		return nil, nil, err
	}
	sizes := make([]int64, parts)
	next := make([]int64, parts)
	for r := range c.Size() {
		for q := range parts {
			if r < c.Rank() {
				next[q] += all[r*parts+q]
			}
			sizes[q] += all[r*parts+q]
		}
	}
	offsets = Offsets(sizes)
	newID = make([]int64, len(part))
	for i, q := range part {
		newID[i] = offsets[q] + next[q]
		next[q]++
	}
	return newID, offsets, nil
}

// fetch returns, for the sorted distinct columns of adj outside this
// rank's rows [b[rank], b[rank+1]), the values val of their owners (each
// owner answers with val[j−lo] for its row j): collective.Halo, whose
// traffic it is. The caller looks a column up in ids (newSortedIndex).
// fetch is collective over c.
func fetch[T collective.Elem](c collective.Comm, b []int64, adj *sparse.CSR, val []T) (ids []int64, vals []T, err error) {
	me := c.Rank()
	lo, hi := b[me], b[me+1]
	// The distinct remote columns, gathered in sorted chunks merged into
	// ids, so that only distinct ones are held beside a chunk.
	chunk := make([]int64, 0, min(fetchChunk, len(adj.Indices)))
	flush := func() {
		slices.Sort(chunk)
		ids = mergeDistinct(ids, slices.Compact(chunk))
		chunk = chunk[:0]
	}
	for _, j := range adj.Indices {
		if j < lo || j >= hi {
			if chunk = append(chunk, j); len(chunk) == cap(chunk) {
				flush()
			}
		}
	}
	flush()
	chunk = nil
	vals, err = collective.Halo(c, ids, func(j int64) int { return collective.BlockOf(b, j) }, func(j int64) (T, bool) {
		if j < lo || j >= hi {
			var zero T
			return zero, false
		}
		return val[j-lo], true
	})
	if err != nil {
		return nil, nil, err
	}
	return ids, vals, nil
}

// fetchChunk is how many remote columns fetch sorts at a time (a
// variable so that tests can use several chunks).
var fetchChunk = 1 << 22

// mergeDistinct returns the sorted distinct values of the sorted
// distinct a and b, a new slice (a itself when b is empty).
func mergeDistinct(a, b []int64) []int64 {
	if len(b) == 0 {
		return a
	}
	out := make([]int64, 0, len(a)+len(b))
	i, k := 0, 0
	for i < len(a) && k < len(b) {
		switch {
		case a[i] < b[k]:
			out = append(out, a[i])
			i++
		case a[i] > b[k]:
			out = append(out, b[k])
			k++
		default:
			out = append(out, a[i])
			i, k = i+1, k+1
		}
	}
	out = append(out, a[i:]...)
	return slices.Clip(append(out, b[k:]...))
}

// Redistribute relabels a dataset spread over the ranks of c in row
// blocks and sends each part's rows to the rank that writes it (Writer).
// b is this rank's block; part[i] is the part of its row i, in
// [0, parts); n is the number of vertices of the whole graph. It returns
// the parts+1 offsets of the new ids (graph.Relabel's for the equivalent
// book) and the parts this rank writes, in ascending part order, each
// equal to graph.MakePart of the whole dataset: new ids as NewIDs gives
// them, every column translated to its new id (the new ids of remote
// columns come from their owners, a halo exchange), rows sorted.
//
// When no vertex changes its id (the parts are consecutive blocks of
// ids, as partition.Block's), the halo exchange is skipped: one scalar
// Allreduce finds it. The rows' headers, features, labels and split
// members go in one
// Alltoallv each; the columns and weights follow in rounds of at most 2²¹
// entries a rank (sendColumns), put in place as they arrive, so that a
// rank holds its block, the rows of the parts it writes, its halo and a
// round's columns, never an array of length n nor a second copy of its
// block's columns. Redistribute is collective over c. It
// returns an error, on every rank alike, if the blocks are not as Bounds
// requires; it will panic if part does not match the block, if a part
// lies outside [0, parts) or if a split member lies outside the block.
func Redistribute(c collective.Comm, n int64, b *Block, part []int32, parts int) (offsets []int64, out []*PartRows, err error) {
	adj := b.Adj
	if int64(len(part)) != adj.NRows {
		panic("dist: Redistribute: parts do not match the rows")
	}
	bounds, err := Bounds(c, n, b.Lo, adj)
	if err != nil {
		return nil, nil, err
	}
	newID, offsets, err := NewIDs(c, part, parts)
	if err != nil {
		return nil, nil, err
	}
	lo, hi := b.Lo, b.Lo+adj.NRows
	// Where every vertex keeps its id (the parts are consecutive blocks
	// in id order), the columns need no relabelling and no halo.
	moved := int64(0)
	for i, v := range newID {
		if v != lo+int64(i) {
			moved = 1
			break
		}
	}
	if moved, err = collective.AllreduceScalar(c, moved, collective.Max); err != nil {
		return nil, nil, err
	}
	var ids []int64
	var remote []int64
	if moved != 0 {
		if ids, remote, err = fetch(c, bounds, adj, newID); err != nil {
			return nil, nil, err
		}
	}
	index := newSortedIndex(ids)
	relabel := func(j int64) int64 {
		if moved == 0 {
			return j
		}
		if j >= lo && j < hi {
			return newID[j-lo]
		}
		k, ok := index.find(j)
		if !ok {
			panic("dist: internal error: missing halo vertex")
		}
		return remote[k]
	}

	// Pack each row's header for the writer of its part: ints are (new
	// id, original id, degree, feature nonzeros, feature columns…); dense
	// feature rows or sparse feature values, and labels go in streams of
	// their own types. The columns and edge weights follow in rounds
	// (sendColumns).
	p := c.Size()
	ints := make([][]int64, p)
	feats := make([][]float32, p)
	labels := make([][]int32, p)
	for i := range adj.NRows {
		q := Writer(int(part[i]), p)
		ints[q] = append(ints[q], newID[i], lo+i, adj.Indptr[i+1]-adj.Indptr[i])
		switch {
		case b.Feat != nil:
			feats[q] = append(feats[q], b.Feat.Row(int(i))...)
		case b.FeatCSR != nil:
			f := b.FeatCSR
			ints[q] = append(ints[q], f.Degree(i))
			ints[q] = append(ints[q], f.Row(i)...)
			if f.Values != nil {
				feats[q] = append(feats[q], f.Values[f.Indptr[i]:f.Indptr[i+1]]...)
			}
		}
		if b.Labels != nil {
			labels[q] = append(labels[q], b.Labels[i])
		}
	}
	// Split members travel as (split, kind, new id) triples.
	names := make([]string, 0, len(b.Splits))
	for name := range b.Splits {
		names = append(names, name)
	}
	slices.Sort(names)
	members := make([][]int64, p)
	for s, name := range names {
		for k, vs := range b.Splits[name] {
			for _, v := range vs {
				if v < lo || v >= hi {
					panic("dist: Redistribute: split member outside the block")
				}
				q := Writer(int(part[v-lo]), p)
				members[q] = append(members[q], int64(s), int64(k), newID[v-lo])
			}
		}
	}
	recvInts, err := collective.AlltoallvSlices(c, ints)
	if err != nil {
		return nil, nil, err
	}
	recvFeats, err := collective.AlltoallvSlices(c, feats)
	if err != nil {
		return nil, nil, err
	}
	recvLabels, err := collective.AlltoallvSlices(c, labels)
	if err != nil {
		return nil, nil, err
	}
	recvMembers, err := collective.AlltoallvSlices(c, members)
	if err != nil {
		return nil, nil, err
	}
	ints, feats, labels, members = nil, nil, nil, nil

	// Which features every rank sends: the same on all, by Block's rules.
	var featCols int
	denseFeat, sparseFeat, featValues := b.Feat != nil, b.FeatCSR != nil, false
	switch {
	case denseFeat:
		featCols = b.Feat.Cols
	case sparseFeat:
		featCols, featValues = int(b.FeatCSR.NCols), b.FeatCSR.Values != nil
	}
	weighted := adj.Values != nil
	hasLabels := b.Labels != nil

	// Size the parts this rank writes, then fill them from each source
	// in rank order.
	me := c.Rank()
	mine := map[int]*PartRows{}
	for q := me; q < parts; q += p {
		pr := &PartRows{Part: q, Lo: offsets[q], Hi: offsets[q+1], Splits: map[string]Members{}}
		rows := pr.Hi - pr.Lo
		pr.Adj = &sparse.CSR{NRows: rows, NCols: n, Indptr: make([]int64, rows+1)}
		pr.OrigIDs = make([]int64, rows)
		switch {
		case denseFeat:
			pr.Feat = dense.New(int(rows), featCols)
		case sparseFeat:
			pr.FeatCSR = &sparse.Matrix[float32]{NRows: rows, NCols: int64(featCols), Indptr: make([]int64, rows+1)}
		}
		if hasLabels {
			pr.Labels = make([]int32, rows)
		}
		mine[q] = pr
		out = append(out, pr)
	}
	partOf := func(v int64) *PartRows {
		q := collective.BlockOf(offsets, v)
		pr := mine[q]
		if pr == nil || v < pr.Lo || v >= pr.Hi {
			panic("dist: internal error: a row for a part this rank does not write")
		}
		return pr
	}
	// First pass: degrees, to size the arrays.
	for _, msg := range recvInts {
		for k := 0; k < len(msg); {
			v, deg := msg[k], msg[k+2]
			pr := partOf(v)
			pr.Adj.Indptr[v-pr.Lo+1] = deg
			k += 3
			if sparseFeat {
				pr.FeatCSR.Indptr[v-pr.Lo+1] = msg[k]
				k += 1 + int(msg[k])
			}
		}
	}
	for _, pr := range out {
		for i := range pr.Adj.NRows {
			pr.Adj.Indptr[i+1] += pr.Adj.Indptr[i]
		}
		pr.Adj.Indices = make([]int64, pr.Adj.Indptr[pr.Adj.NRows])
		if weighted {
			pr.Adj.Values = make([]float64, len(pr.Adj.Indices))
		}
		if f := pr.FeatCSR; f != nil {
			for i := range f.NRows {
				f.Indptr[i+1] += f.Indptr[i]
			}
			f.Indices = make([]int64, f.Indptr[f.NRows])
			if featValues {
				f.Values = make([]float32, len(f.Indices))
			}
		}
	}
	// Second pass: contents.
	for src, msg := range recvInts {
		f, l := recvFeats[src], recvLabels[src]
		for k := 0; k < len(msg); {
			v, orig := msg[k], msg[k+1]
			pr := partOf(v)
			i := v - pr.Lo
			pr.OrigIDs[i] = orig
			k += 3
			switch {
			case denseFeat:
				copy(pr.Feat.Row(int(i)), f[:featCols])
				f = f[featCols:]
			case sparseFeat:
				fn := msg[k]
				fa := pr.FeatCSR.Indptr[i]
				copy(pr.FeatCSR.Indices[fa:fa+fn], msg[k+1:k+1+int(fn)])
				k += 1 + int(fn)
				if featValues {
					copy(pr.FeatCSR.Values[fa:fa+fn], f[:fn])
					f = f[fn:]
				}
			}
			if hasLabels {
				pr.Labels[i] = l[0]
				l = l[1:]
			}
		}
	}
	if err := sendColumns(c, adj, part, relabel, recvInts, partOf, sparseFeat); err != nil {
		return nil, nil, err
	}
	recvInts = nil
	for _, pr := range out {
		pr.Adj.SortRows()
		for _, name := range names {
			pr.Splits[name] = Members{{}, {}, {}}
		}
	}
	for _, msg := range recvMembers {
		for k := 0; k < len(msg); k += 3 {
			s, kind, v := msg[k], msg[k+1], msg[k+2]
			pr := partOf(v)
			m := pr.Splits[names[s]]
			m[kind] = append(m[kind], v)
			pr.Splits[names[s]] = m
		}
	}
	for _, pr := range out {
		for _, m := range pr.Splits {
			for _, vs := range m {
				slices.Sort(vs)
			}
		}
	}
	return offsets, out, nil
}

// columnRound is how many columns (and edge weights) a rank sends in one
// round of Redistribute: 16 MiB of int64s (a variable so that tests can
// cut rows across rounds).
var columnRound int64 = 1 << 21

// sendColumns sends the columns of adj's rows, relabelled, and their
// weights to the writers of the rows' parts (part), in rounds of at most
// columnRound of this rank's entries (as many rounds on every rank: one
// scalar Allreduce, then an Alltoallv of columns, and one of weights when
// weighted, a round), and puts each in its row of the parts partOf finds.
// A writer places what a source sends in the order of the source's row
// headers in recvInts (new id, original id, degree, and with sparse
// features their count and columns), which is the order of the source's
// rows: a round may end within a row. It is collective over c.
func sendColumns(c collective.Comm, adj *sparse.CSR, part []int32, relabel func(int64) int64, recvInts [][]int64,
	partOf func(int64) *PartRows, sparseFeat bool) error {
	p := c.Size()
	rounds, err := collective.AllreduceScalar(c, (adj.NNZ()+columnRound-1)/columnRound, collective.Max)
	if err != nil {
		return err
	}
	weighted := adj.Values != nil
	// Where each source's next column goes: the part cur[src], the row's
	// next free entry at[src] and its end end[src]; the source's next
	// header is at hdr[src].
	hdr, at, end := make([]int, p), make([]int64, p), make([]int64, p)
	cur := make([]*PartRows, p)
	nextRow := func(src int) {
		msg := recvInts[src]
		for at[src] == end[src] {
			k := hdr[src]
			v, deg := msg[k], msg[k+2]
			hdr[src] += 3
			if sparseFeat {
				hdr[src] += 1 + int(msg[k+3])
			}
			pr := partOf(v)
			cur[src] = pr
			at[src] = pr.Adj.Indptr[v-pr.Lo]
			end[src] = at[src] + deg
		}
	}
	cols := make([][]int64, p)
	weights := make([][]float64, p)
	row := int64(0) // this rank's first row not yet fully sent
	for k := range rounds {
		elo, ehi := min(k*columnRound, adj.NNZ()), min((k+1)*columnRound, adj.NNZ())
		for q := range p {
			cols[q], weights[q] = cols[q][:0], weights[q][:0]
		}
		for ; row < adj.NRows && adj.Indptr[row] < ehi; row++ {
			q := Writer(int(part[row]), p)
			a, b := max(adj.Indptr[row], elo), min(adj.Indptr[row+1], ehi)
			for _, j := range adj.Indices[a:b] {
				cols[q] = append(cols[q], relabel(j))
			}
			if weighted {
				weights[q] = append(weights[q], adj.Values[a:b]...)
			}
			if adj.Indptr[row+1] > ehi {
				break // the row goes on in the next round
			}
		}
		recvCols, err := collective.AlltoallvSlices(c, cols)
		if err != nil {
			return err
		}
		var recvWeights [][]float64
		if weighted {
			if recvWeights, err = collective.AlltoallvSlices(c, weights); err != nil {
				return err
			}
		}
		for src, got := range recvCols {
			for e, j := range got {
				nextRow(src)
				pr := cur[src]
				pr.Adj.Indices[at[src]] = j
				if weighted {
					pr.Adj.Values[at[src]] = recvWeights[src][e]
				}
				at[src]++
			}
		}
	}
	return nil
}

// Reciprocal reports whether every stored edge (i, j) of the graph whose
// rows [lo, lo+adj.NRows) this rank holds has its reverse (j, i) stored
// too (self-loops count as their own reverse): graph.Reciprocity finds
// reciprocated = edges. Each rank sends the reverse of its edges to the
// owners of their rows, which look them up. It is collective over c and
// returns the same on every rank.
func Reciprocal(c collective.Comm, n, lo int64, adj *sparse.CSR) (bool, error) {
	b, err := Bounds(c, n, lo, adj)
	if err != nil {
		return false, err
	}
	found, edges, err := Reciprocity(c, Rows{Adj: adj, Lo: lo}, func(j int64) int { return collective.BlockOf(b, j) })
	return found == edges, err
}
