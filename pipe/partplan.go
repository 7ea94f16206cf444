package pipe

import (
	"slices"

	"gnnmpi/model"
	"gnnmpi/sparse"
)

// Block is one chunk's computation on a rank of its part: the chunk's
// vertices are the destinations, and the sources are, in column order, the
// destinations themselves, then the chunk's neighbours in the same part
// (Local: read from the stage's historical embeddings), then its neighbours
// in every other part q (Remote[q]: fetched from that part's pipeline).
// Within each group sources are in ascending global id.
type Block struct {
	Chunk  int
	Gids   []int64 // destinations' global ids, ascending
	Dst    []int32 // their part-local ids
	Local  []int32 // part-local ids of the in-part sources outside the chunk
	Remote [][]int32
	// A is the NDst×NSrc block, rows sorted by column; with normalize its
	// Values are GCN's D̃^{-1/2}(A+I)D̃^{-1/2} entries (self-loops added).
	A *sparse.CSR
	// Conv is A as the conv layers take it: what they derive from A
	// (float32 values, transposes) is computed once and shared by every
	// layer and chunk copy that runs on this block.
	Conv *model.Block

	// deg is every source's full-graph degree, in column order, on the
	// blocks a PartPlan keeps (nil on those Blocks returns): what
	// normalisation needs.
	deg []int64
}

// NSrc returns the number of sources: Dst, Local, then every Remote part.
func (b *Block) NSrc() int {
	n := len(b.Dst) + len(b.Local)
	for _, r := range b.Remote {
		n += len(r)
	}
	return n
}

// RemoteRows returns the number of sources in other parts.
func (b *Block) RemoteRows() int { return b.NSrc() - len(b.Dst) - len(b.Local) }

// bytes returns the bytes of b's arrays (those of Conv not counted).
func (b *Block) bytes() int64 {
	n := int64(len(b.Gids))*8 + int64(len(b.Dst)+len(b.Local))*4 + int64(len(b.deg))*8
	for _, r := range b.Remote {
		n += int64(len(r)) * 4
	}
	return n + int64(len(b.A.Indptr)+len(b.A.Indices))*8 + int64(len(b.A.Values))*8
}

// PartPlan is what the ranks of one part (pipeline) train on: the part's
// vertices, its chunks' blocks and the whole part's block, the rows it
// serves the other parts, and the run's halo totals that the analytical
// volume needs. Its arrays are O(part rows + part edges + halo); none is
// as long as the graph. Plan.PartPlan derives it from the replicated plan,
// NewBlockPlan from the part's own adjacency rows; both give the same.
type PartPlan struct {
	Part   int   // the part (pipeline)
	Parts  int   // graph parts = pipelines
	Chunks int   // chunks per part
	N      int64 // vertices of the whole graph
	// Gids are the part's vertices, ascending: a vertex's index here is
	// its part-local id.
	Gids []int64

	chunks              []*Block // training chunks, unnormalised
	whole               *Block   // the whole part; chunks[0] with one chunk
	served, servedWhole [][][]int32
	// haloRows and haloRowsWhole are HaloRows(false) and HaloRows(true).
	haloRows, haloRowsWhole int64
}

// Blocks returns the blocks of the part's chunks in chunk order, or with
// whole the single block of the whole part (exact full-graph inference,
// graph parallelism). With normalize the blocks carry GCN weights
// (model.GCNNorm with full-graph degrees). Without, they share their
// arrays with the plan's.
func (pp *PartPlan) Blocks(normalize, whole bool) []*Block {
	if whole {
		return finish([]*Block{pp.whole}, normalize)
	}
	return finish(pp.chunks, normalize)
}

// Served returns what the part's ranks send to the others: served[q][c] are
// the part-local ids of the part's vertices that chunk c of part q reads
// (its Remote[Part]), in that block's column order; served[Part] is nil.
// With whole, every part has the one chunk of Blocks(…, whole).
func (pp *PartPlan) Served(whole bool) [][][]int32 {
	if whole {
		return pp.servedWhole
	}
	return pp.served
}

// HaloRows returns Plan.HaloRows(whole): the rows one layer of one pass
// fetches from other parts, summed over all chunks of all parts.
func (pp *PartPlan) HaloRows(whole bool) int64 {
	if whole {
		return pp.haloRowsWhole
	}
	return pp.haloRows
}

// Bytes returns the bytes of the plan's arrays: what a rank holds of the
// topology before the trainer derives its blocks.
func (pp *PartPlan) Bytes() int64 {
	n := int64(len(pp.Gids)) * 8
	blocks := pp.chunks
	if pp.whole != pp.chunks[0] {
		blocks = append(slices.Clone(blocks), pp.whole)
	}
	for _, b := range blocks {
		n += b.bytes()
	}
	for _, s := range [][][][]int32{pp.served, pp.servedWhole} {
		for _, q := range s {
			for _, ids := range q {
				n += int64(len(ids)) * 4
			}
		}
	}
	return n
}

// finish returns the blocks a trainer runs: raw's with normalised values
// when normalize, and their model.Block.
func finish(raw []*Block, normalize bool) []*Block {
	out := make([]*Block, len(raw))
	for i, r := range raw {
		b := *r
		if normalize {
			b.A = model.GCNNorm(r.A, r.deg[:len(r.Dst)], r.deg)
		}
		b.deg, b.Conv = nil, model.NewBlock(b.A)
		out[i] = &b
	}
	return out
}

// partSource is what building one part's blocks reads, wherever the graph
// lives: the part's vertices and their adjacency rows, and where every
// vertex lives.
type partSource struct {
	k, parts, chunks int
	gids             []int64                      // the part's vertices, ascending
	chunk            func(lid int32) int32        // chunk of an own vertex
	row              func(lid int32) []int64      // adjacency row of an own vertex (global ids)
	locate           func(gid int64) (int, int32) // part and part-local id of any vertex
	ownDeg           func(lid int32) int64        // full-graph degree of an own vertex
	// remoteDeg returns the degree of vertex lid of part q ≠ k; nil when
	// those are filled in later (NewBlockPlan).
	remoteDeg func(q int, lid int32) int64
}

// scratch returns the column scratch of sources and block: one entry per
// own vertex, all −1.
func (s *partSource) scratch() []int32 {
	col := make([]int32, len(s.gids))
	for i := range col {
		col[i] = -1
	}
	return col
}

// chunkLids returns the part's vertices grouped by chunk: out[c] are the
// part-local ids of chunk c, ascending. With whole, the part is one chunk.
func (s *partSource) chunkLids(whole bool) [][]int32 {
	if whole {
		all := make([]int32, len(s.gids))
		for i := range all {
			all[i] = int32(i)
		}
		return [][]int32{all}
	}
	out := make([][]int32, s.chunks)
	for l := range s.gids {
		c := s.chunk(int32(l))
		out[c] = append(out[c], int32(l))
	}
	return out
}

// sources returns the in-part sources outside dst (part-local ids) and the
// sources of every other part q (part-local ids in q), each in ascending
// global id. col is scratch() and is left so.
func (s *partSource) sources(dst []int32, col []int32) (local []int32, remote [][]int32) {
	for _, l := range dst {
		col[l] = 0
	}
	var ext []int64
	for _, l := range dst {
		for _, j := range s.row(l) {
			if q, lj := s.locate(j); q != s.k || col[lj] < 0 {
				ext = append(ext, j)
			}
		}
	}
	for _, l := range dst {
		col[l] = -1
	}
	slices.Sort(ext)
	ext = slices.Compact(ext)
	remote = make([][]int32, s.parts)
	for _, j := range ext {
		if q, lj := s.locate(j); q == s.k {
			local = append(local, lj)
		} else {
			remote[q] = append(remote[q], lj)
		}
	}
	return local, remote
}

// blocks returns the part's raw blocks (unnormalised, with degrees) in
// chunk order, or with whole the one block of the whole part.
func (s *partSource) blocks(whole bool) []*Block {
	col := s.scratch()
	var out []*Block
	for c, dst := range s.chunkLids(whole) {
		out = append(out, s.block(c, dst, col))
	}
	return out
}

// block returns the raw block of chunk c, whose vertices are dst
// (part-local ids, ascending). col is scratch() and is left so.
func (s *partSource) block(c int, dst []int32, col []int32) *Block {
	b := &Block{Chunk: c, Gids: make([]int64, len(dst)), Dst: dst}
	for i, l := range dst {
		b.Gids[i] = s.gids[l]
	}
	b.Local, b.Remote = s.sources(dst, col)
	// Columns: own sources through col, other parts' by their position
	// in Remote[q] after base[q].
	next := int32(0)
	for _, l := range dst {
		col[l] = next
		next++
	}
	for _, l := range b.Local {
		col[l] = next
		next++
	}
	base := make([]int32, s.parts)
	for q, r := range b.Remote {
		base[q] = next
		next += int32(len(r))
	}
	a := &sparse.CSR{NRows: int64(len(dst)), NCols: int64(next), Indptr: make([]int64, len(dst)+1)}
	for i, l := range dst {
		start := len(a.Indices)
		for _, j := range s.row(l) {
			var cj int32
			if q, lj := s.locate(j); q == s.k {
				cj = col[lj]
			} else {
				at, _ := slices.BinarySearch(b.Remote[q], lj)
				cj = base[q] + int32(at)
			}
			a.Indices = append(a.Indices, int64(cj))
		}
		slices.Sort(a.Indices[start:])
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	b.A = a
	b.deg = make([]int64, next)
	for i, l := range dst {
		b.deg[i] = s.ownDeg(l)
		col[l] = -1
	}
	for i, l := range b.Local {
		b.deg[len(dst)+i] = s.ownDeg(l)
		col[l] = -1
	}
	for q, r := range b.Remote {
		if s.remoteDeg == nil {
			break
		}
		for i, l := range r {
			b.deg[int(base[q])+i] = s.remoteDeg(q, l)
		}
	}
	return b
}
