package pipe

import (
	"fmt"

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
// which part (pipeline) and chunk every vertex belongs to. Every rank builds
// the same Plan from the same inputs; PartPlan derives from it what the ranks
// of one part train on. NewBlockPlan builds that PartPlan instead from the
// part's own adjacency rows, without any rank holding the whole graph.
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
		p.Deg[v] = degree(v, adj.Row(v))
	}
	for i, s := range size {
		if s == 0 {
			return nil, fmt.Errorf("pipe: part %d chunk %d is empty", i/chunks, i%chunks)
		}
	}
	return p, nil
}

// degree returns the number of entries of v's adjacency row other than v.
func degree(v int64, row []int64) int64 {
	var d int64
	for _, j := range row {
		if j != v {
			d++
		}
	}
	return d
}

// source returns the view of part k that building its blocks reads.
func (p *Plan) source(k int) *partSource {
	own := p.Members[k]
	return &partSource{k: k, parts: p.Parts, chunks: p.Chunks, gids: own,
		chunk:     func(l int32) int32 { return p.Chunk[own[l]] },
		row:       func(l int32) []int64 { return p.Adj.Row(own[l]) },
		locate:    func(j int64) (int, int32) { return int(p.Part[j]), p.LID[j] },
		ownDeg:    func(l int32) int64 { return p.Deg[own[l]] },
		remoteDeg: func(q int, l int32) int64 { return p.Deg[p.Members[q][l]] },
	}
}

// Blocks returns the blocks of part k's chunks in chunk order, or with whole
// the single block of the whole part (exact full-graph inference, graph
// parallelism). With normalize the blocks carry GCN weights (model.GCNNorm
// with full-graph degrees).
func (p *Plan) Blocks(k int, normalize, whole bool) []*Block {
	return finish(p.source(k).blocks(whole), normalize)
}

// Served returns what part k's ranks send to the others: served[q][c] are the
// part-local ids of k's vertices that chunk c of part q reads (its
// Remote[k]), in that block's column order; served[k] is nil. With whole,
// every part has the one chunk of Blocks(…, whole).
func (p *Plan) Served(k int, whole bool) [][][]int32 {
	served, _ := p.servedHalo(k, whole)
	return served
}

// servedHalo returns Served(k, whole) and HaloRows(whole), from one sweep
// over every part's chunks.
func (p *Plan) servedHalo(k int, whole bool) ([][][]int32, int64) {
	out := make([][][]int32, p.Parts)
	var halo int64
	for q := range p.Parts {
		s := p.source(q)
		col := s.scratch()
		for _, dst := range s.chunkLids(whole) {
			_, remote := s.sources(dst, col)
			for _, r := range remote {
				halo += int64(len(r))
			}
			if q != k {
				out[q] = append(out[q], remote[k])
			}
		}
	}
	return out, halo
}

// HaloRows returns the rows one layer of one pass fetches from other parts,
// summed over all chunks of all parts: Σ |Remote[q]|. A vertex read by two
// chunks of one part counts twice, since they fetch it at different times.
func (p *Plan) HaloRows(whole bool) int64 {
	_, halo := p.servedHalo(0, whole)
	return halo
}

// PartPlan returns what the ranks of part k train on: the same as
// NewBlockPlan returns on those ranks given part k's rows.
func (p *Plan) PartPlan(k int) *PartPlan {
	s := p.source(k)
	pp := &PartPlan{Part: k, Parts: p.Parts, Chunks: p.Chunks, N: p.Adj.NRows, Gids: p.Members[k]}
	pp.chunks = s.blocks(false)
	pp.served, pp.haloRows = p.servedHalo(k, false)
	if p.Chunks == 1 {
		pp.whole, pp.servedWhole, pp.haloRowsWhole = pp.chunks[0], pp.served, pp.haloRows
	} else {
		pp.whole = s.blocks(true)[0]
		pp.servedWhole, pp.haloRowsWhole = p.servedHalo(k, true)
	}
	return pp
}
