package pipe

import (
	"fmt"
	"slices"

	"gnnmpi/model"
	"gnnmpi/sparse"
)

// Layout places the p = Stages·Pipelines ranks of a run: rank r is stage
// r mod Stages of pipeline r / Stages, so the ranks of one pipeline are
// consecutive. Graph parallelism is Stages = 1 (every rank a pipeline of one
// stage), GNNPipe is Pipelines = 1, and the hybrid is anything between.
type Layout struct {
	Stages, Pipelines int
}

// Stage returns the stage of rank r.
func (l Layout) Stage(r int) int { return r % l.Stages }

// Pipeline returns the pipeline (and graph part) of rank r.
func (l Layout) Pipeline(r int) int { return r / l.Stages }

// Ranks returns Stages·Pipelines.
func (l Layout) Ranks() int { return l.Stages * l.Pipelines }

// Layers returns the convolution layers [lo, hi) (1-based: layer 1 reads
// H⁰) of stage s when layers layers are split over stages contiguous
// stages, the first layers mod stages stages taking one more.
// It will panic if s is out of range or there are fewer layers than stages.
func Layers(layers, stages, s int) (lo, hi int) {
	if s < 0 || s >= stages || layers < stages {
		panic("pipe: bad stage or fewer layers than stages")
	}
	q, r := layers/stages, layers%stages
	lo = 1 + s*q + min(s, r)
	hi = lo + q
	if s < r {
		hi++
	}
	return lo, hi
}

// Plan is the replicated, communication-free description of a run's graph:
// which part (pipeline) and chunk every vertex belongs to, and from it every
// chunk's block and the rows it needs from other parts. Every rank builds the
// same Plan from the same inputs.
type Plan struct {
	Adj    *sparse.CSR // the whole graph, n×n
	Parts  int         // graph parts = pipelines
	Chunks int         // chunks per part
	Part   []int32     // vertex → part
	Chunk  []int32     // vertex → chunk within its part
	// Members[k] are the global ids of part k's vertices, ascending; a
	// vertex's index there is its part-local id, LID.
	Members [][]int64
	LID     []int32
	Deg     []int64 // full-graph degree without self-loops (GCN normalisation)
}

// NewPlan checks and indexes an assignment of the n vertices of adj to parts
// and chunks. It returns an error if a vertex's part or chunk is out of range
// or some chunk is empty.
func NewPlan(adj *sparse.CSR, part, chunk []int32, parts, chunks int) (*Plan, error) {
	n := adj.NRows
	switch {
	case adj.NCols != n:
		return nil, fmt.Errorf("pipe: adjacency is %d×%d, want square", adj.NRows, adj.NCols)
	case int64(len(part)) != n || int64(len(chunk)) != n:
		return nil, fmt.Errorf("pipe: %d part and %d chunk entries for %d vertices", len(part), len(chunk), n)
	case parts < 1 || chunks < 1:
		return nil, fmt.Errorf("pipe: %d parts and %d chunks; want both ≥ 1", parts, chunks)
	}
	p := &Plan{Adj: adj, Parts: parts, Chunks: chunks, Part: part, Chunk: chunk,
		Members: make([][]int64, parts), LID: make([]int32, n), Deg: make([]int64, n)}
	size := make([]int, parts*chunks)
	for v := range n {
		k, c := part[v], chunk[v]
		if k < 0 || int(k) >= parts || c < 0 || int(c) >= chunks {
			return nil, fmt.Errorf("pipe: vertex %d in part %d chunk %d; want part < %d, chunk < %d", v, k, c, parts, chunks)
		}
		p.LID[v] = int32(len(p.Members[k]))
		p.Members[k] = append(p.Members[k], v)
		size[int(k)*chunks+int(c)]++
		for _, j := range adj.Row(v) {
			if j != v {
				p.Deg[v]++
			}
		}
	}
	for i, s := range size {
		if s == 0 {
			return nil, fmt.Errorf("pipe: part %d chunk %d is empty", i/chunks, i%chunks)
		}
	}
	return p, nil
}

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

// chunkMembers returns the vertices of part k grouped by chunk: out[c] are
// those of chunk c, ascending. With whole, the part is one chunk.
func (p *Plan) chunkMembers(k int, whole bool) [][]int64 {
	if whole {
		return [][]int64{p.Members[k]}
	}
	out := make([][]int64, p.Chunks)
	for _, v := range p.Members[k] {
		out[p.Chunk[v]] = append(out[p.Chunk[v]], v)
	}
	return out
}

// sources returns the in-part sources outside dst (part-local ids) and the
// sources of every other part q (part-local ids in q), each ascending. seen is
// an n-long scratch of zeros, left zeroed.
func (p *Plan) sources(k int, dst []int64, seen []bool) (local []int32, remote [][]int32) {
	for _, v := range dst {
		seen[v] = true
	}
	var ext []int64
	for _, v := range dst {
		for _, j := range p.Adj.Row(v) {
			if !seen[j] {
				seen[j] = true
				ext = append(ext, j)
			}
		}
	}
	for _, v := range dst {
		seen[v] = false
	}
	slices.Sort(ext)
	remote = make([][]int32, p.Parts)
	for _, j := range ext {
		seen[j] = false
		if q := int(p.Part[j]); q == k {
			local = append(local, p.LID[j])
		} else {
			remote[q] = append(remote[q], p.LID[j])
		}
	}
	return local, remote
}

// Blocks returns the blocks of part k's chunks in chunk order, or with whole
// the single block of the whole part (exact full-graph inference, graph
// parallelism). With normalize the blocks carry GCN weights (model.GCNNorm
// with full-graph degrees).
func (p *Plan) Blocks(k int, normalize, whole bool) []*Block {
	seen := make([]bool, p.Adj.NRows)
	col := make([]int32, p.Adj.NRows)
	var out []*Block
	for c, dst := range p.chunkMembers(k, whole) {
		b := &Block{Chunk: c, Gids: dst, Dst: make([]int32, len(dst))}
		for i, v := range dst {
			b.Dst[i] = p.LID[v]
		}
		b.Local, b.Remote = p.sources(k, dst, seen)
		// Column of every source's global id.
		next := int32(0)
		for _, v := range dst {
			col[v] = next
			next++
		}
		mark := func(q int, lids []int32) {
			for _, l := range lids {
				col[p.Members[q][l]] = next
				next++
			}
		}
		mark(k, b.Local)
		for q, r := range b.Remote {
			mark(q, r)
		}
		a := &sparse.CSR{NRows: int64(len(dst)), NCols: int64(next), Indptr: make([]int64, len(dst)+1)}
		for i, v := range dst {
			start := len(a.Indices)
			for _, j := range p.Adj.Row(v) {
				a.Indices = append(a.Indices, int64(col[j]))
			}
			slices.Sort(a.Indices[start:])
			a.Indptr[i+1] = int64(len(a.Indices))
		}
		if normalize {
			degDst := make([]int64, a.NRows)
			for i, v := range dst {
				degDst[i] = p.Deg[v]
			}
			degSrc := make([]int64, a.NCols)
			copy(degSrc, degDst)
			i := len(dst)
			fill := func(q int, lids []int32) {
				for _, l := range lids {
					degSrc[i] = p.Deg[p.Members[q][l]]
					i++
				}
			}
			fill(k, b.Local)
			for q, r := range b.Remote {
				fill(q, r)
			}
			a = model.GCNNorm(a, degDst, degSrc)
		}
		b.A, b.Conv = a, model.NewBlock(a)
		out = append(out, b)
	}
	return out
}

// Served returns what part k's ranks send to the others: served[q][c] are the
// part-local ids of k's vertices that chunk c of part q reads (its
// Remote[k]), in that block's column order; served[k] is nil. With whole,
// every part has the one chunk of Blocks(…, whole).
func (p *Plan) Served(k int, whole bool) [][][]int32 {
	seen := make([]bool, p.Adj.NRows)
	out := make([][][]int32, p.Parts)
	for q := range p.Parts {
		if q == k {
			continue
		}
		for _, dst := range p.chunkMembers(q, whole) {
			_, remote := p.sources(q, dst, seen)
			out[q] = append(out[q], remote[k])
		}
	}
	return out
}

// HaloRows returns the rows one layer of one pass fetches from other parts,
// summed over all chunks of all parts: Σ |Remote[q]|. A vertex read by two
// chunks of one part counts twice, since they fetch it at different times.
func (p *Plan) HaloRows(whole bool) int64 {
	seen := make([]bool, p.Adj.NRows)
	var n int64
	for k := range p.Parts {
		for _, dst := range p.chunkMembers(k, whole) {
			_, remote := p.sources(k, dst, seen)
			for _, r := range remote {
				n += int64(len(r))
			}
		}
	}
	return n
}
