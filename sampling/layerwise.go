package sampling

import (
	"fmt"
	"math"
	"slices"

	"gnnmpi/sparse"
)

// LayerWise is LADIES, layer-dependent importance sampling (Zou, Hu, Wang,
// Jiang, Sun and Gu, NeurIPS 2019), in the matrix form of Tripathy, Yelick
// and Buluç (MLSys 2024): every minibatch samples a fixed number of
// vertices per layer, shared by all of the layer's destinations, with
// probabilities that follow the destinations' own neighbourhoods.
//
// Norm is the GCN-normalised adjacency Â = D^{−1/2}(A + I)D^{−1/2} of the
// graph (repeated entries of A count once; d_v is the number of distinct
// neighbours of v, itself included). For a minibatch whose current layer
// has destinations F, the layer below samples from
//
//	p_u = Σ_{v∈F} Â(v,u)² / Σ_{v∈F} Σ_w Â(v,w)²,
//
// the squared column norms of Â's rows F: for k minibatches at once these
// are the k rows of P = Q·(Â∘Â), where row b of Q has a one at every
// destination of minibatch b. Sizes[h] vertices are drawn independently
// with replacement (h = 0 below the seeds); u, drawn c_u times, enters the
// block with the weight c_u/(Sizes[h]·p_u) on every edge Â(v,u), so that
// the block's aggregation Σ_u Adj(v,u)·x_u is an unbiased estimate of the
// exact Σ_u Â(v,u)·x_u. When the destinations have at most Sizes[h]
// distinct neighbours, all of them are taken with weight 1 (the exact
// aggregation) and no randomness is used.
//
// A block's destinations are F and its sources F followed by the sampled
// vertices outside F in ascending id (the destinations keep their own rows
// for the layers' self terms, as LADIES's implementation adds the output
// nodes to the sampled ones); its Adj has the weighted values of Â at the
// sampled columns only. Use Adj's values as the layer's propagation matrix,
// without normalising it again.
//
// The draws of minibatch b at hop h come from RowStream(keys[b], h, −1).
//
// Â lives in a Topology: replicated (NewLayerWise; Norm is then Â) or
// distributed (NewLayerWiseOn; Norm is nil). The sampler fetches the rows
// of Â of all the minibatches' destinations (one selection product per hop
// for all of them) and forms P = Q·(Â∘Â) from them, which also gives the
// blocks' rows.
type LayerWise struct {
	Norm  *sparse.CSR // Â when replicated, else nil
	Sizes []int
	top   Topology // holds Â
}

var _ Sampler = (*LayerWise)(nil)

// NewLayerWise returns a LADIES sampler over the graph adj (n×n, row v
// listing v's neighbours) drawing sizes[h] vertices per minibatch at hop
// h+1 from the seeds (sizes[0] belongs to the output layer). It returns an
// error if adj is not a valid square CSR, sizes is empty, or a size is
// below 1.
func NewLayerWise(adj *sparse.CSR, sizes []int) (*LayerWise, error) {
	if err := checkAdj(adj); err != nil {
		return nil, err
	}
	if err := checkSizes(sizes); err != nil {
		return nil, err
	}
	norm := GCNNormalized(adj)
	s, err := NewLayerWiseOn(Replicated(norm), sizes)
	if err != nil {
		return nil, err
	}
	s.Norm = norm
	return s, nil
}

// NewLayerWiseOn returns a LADIES sampler over the normalised adjacency
// Â = GCNNormalized(adj) held by top (for instance Distributed15DBlock or
// Distributed2D of this rank's rows of Â from GCNNormalizedBlock). It returns an error if sizes is empty or a size is
// below 1.
func NewLayerWiseOn(top Topology, sizes []int) (*LayerWise, error) {
	if err := checkSizes(sizes); err != nil {
		return nil, err
	}
	return &LayerWise{Sizes: slices.Clone(sizes), top: top}, nil
}

func checkSizes(sizes []int) error {
	if len(sizes) == 0 {
		return fmt.Errorf("sampling: no layer sizes (need one per layer)")
	}
	for h, s := range sizes {
		if s < 1 {
			return fmt.Errorf("sampling: layer size %d at hop %d; LADIES samples at least 1 vertex per layer", s, h+1)
		}
	}
	return nil
}

// Topology returns where the sampler's Â lives.
func (s *LayerWise) Topology() Topology { return s.top }

// GCNNormalized returns Â = D^{−1/2}(A + I)D^{−1/2} for the square adj:
// the distinct entries of every row of adj plus the diagonal, each (v,u)
// of value 1/√(d_v·d_u), d_v being the length of row v of A + I. Rows are
// sorted.
func GCNNormalized(adj *sparse.CSR) *sparse.CSR {
	out := selfLooped(adj, 0)
	for v := range out.NRows {
		dv := float64(out.Degree(v))
		for q := out.Indptr[v]; q < out.Indptr[v+1]; q++ {
			out.Values[q] = gcnWeight(dv, float64(out.Degree(out.Indices[q])))
		}
	}
	return out
}

// gcnWeight is the entry 1/√(d_v·d_u) of Â.
func gcnWeight(dv, du float64) float64 { return 1 / math.Sqrt(dv*du) }

// selfLooped returns the rows of a (rows off, off+1, … of the whole
// matrix, global columns) with the diagonal added, sorted and distinct,
// and zero values.
func selfLooped(a *sparse.CSR, off int64) *sparse.CSR {
	out := &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: make([]int64, a.NRows+1)}
	for r := range a.NRows {
		row := append(slices.Clone(a.Row(r)), off+r)
		slices.Sort(row)
		row = slices.Compact(row)
		out.Indices = append(out.Indices, row...)
		out.Indptr[r+1] = int64(len(out.Indices))
	}
	if out.Indices == nil {
		out.Indices = []int64{}
	}
	out.Values = make([]float64, len(out.Indices))
	return out
}

// Sample returns the minibatches of batches, each with len(s.Sizes)
// blocks, drawing for all of them at once per layer (see LayerWise). It
// returns an error if len(keys) != len(batches), or a seed is outside
// [0, n) or repeated within its minibatch. It does not modify batches and
// the minibatches share no memory with them.
func (s *LayerWise) Sample(batches [][]int64, keys []uint64) ([]*MiniBatch, error) {
	n := s.top.N()
	if err := checkBatches(batches, keys, n); err != nil {
		return nil, err
	}
	k, nl := len(batches), len(s.Sizes)
	out := make([]*MiniBatch, k)
	frontiers := make([][]int64, k)
	for b := range k {
		out[b] = &MiniBatch{Blocks: make([]Block, nl)}
		frontiers[b] = batches[b]
	}
	st := newStreams()
	var prefix []float64
	var rows []int64
	var rowKeys []uint64
	// q sums each minibatch's rows: row b has a one at the positions of its
	// destinations among the stacked rows.
	q := &sparse.CSR{NRows: int64(k), Indptr: make([]int64, k+1)}
	for h, size := range s.Sizes {
		rows, rowKeys = rows[:0], rowKeys[:0]
		for b, f := range frontiers {
			rows = append(rows, f...)
			for range f {
				rowKeys = append(rowKeys, keys[b])
			}
			q.Indptr[b+1] = int64(len(rows))
		}
		// R: the rows of Â of all the destinations; P = Q·(Â∘Â) = q·(R∘R),
		// one row per minibatch, summed in the destinations' order.
		r, err := s.top.rows(rows, rowKeys, nil)
		if err != nil {
			return nil, err
		}
		if r.Values == nil && r.NNZ() > 0 {
			return nil, fmt.Errorf("sampling: LADIES needs the values of Â; the topology holds a pattern matrix")
		}
		rsq := &sparse.CSR{NRows: r.NRows, NCols: n, Indptr: r.Indptr, Indices: r.Indices, Values: make([]float64, len(r.Values))}
		for x, a := range r.Values {
			rsq.Values[x] = a * a
		}
		q.NCols = int64(len(rows))
		q.Indices = q.Indices[:0]
		for x := range rows {
			q.Indices = append(q.Indices, int64(x))
		}
		p, err := sparse.Mul(q, rsq)
		if err != nil {
			return nil, err
		}
		// The draws, in minibatch order, then the blocks on goroutines.
		factors := drawLayer(p, keys, h, size, st, &prefix)
		forEach(k, func(b int, t *idTable) {
			blk := block(frontiers[b], rowRange(r, q.Indptr[b], q.Indptr[b+1]), p.Row(int64(b)), factors[b], t)
			out[b].Blocks[nl-1-h] = blk
			frontiers[b] = blk.Src
		})
	}
	for _, m := range out {
		m.Seeds = m.Blocks[nl-1].Dst
	}
	return out, nil
}

// drawLayer draws size candidates with replacement from every row b of p
// (minibatch b's candidates at layer h, weighted by the row's values)
// with the stream of (keys[b], h), and returns per minibatch the weight
// of each candidate (total/(size·w) per draw, 0 if not drawn; all 1 when
// the row has at most size candidates). prefix is scratch.
func drawLayer(p *sparse.CSR, keys []uint64, h, size int, st *streams, prefix *[]float64) [][]float64 {
	factors := make([][]float64, len(keys))
	for b := range keys {
		cols, w := p.Row(int64(b)), p.Values[p.Indptr[b]:p.Indptr[b+1]]
		factor := make([]float64, len(cols))
		factors[b] = factor
		if len(cols) <= size {
			for t := range factor {
				factor[t] = 1
			}
			continue
		}
		pre := (*prefix)[:0]
		var total float64
		for _, x := range w {
			total += x
			pre = append(pre, total)
		}
		*prefix = pre
		rnd := st.at(keys[b], h, -1)
		for drawn := 0; drawn < size; {
			t := upper(pre, rnd.Float64()*total)
			if t == len(pre) || w[t] == 0 {
				continue // rounding put the dart at the end
			}
			factor[t] += total / (float64(size) * w[t])
			drawn++
		}
	}
	return factors
}

// block builds the block of the destinations dst, whose rows of Â are
// those of norm, over the candidate columns cols (ascending) with their
// weights factor (0: not sampled). t is scratch: it numbers the block's
// sources while the block is built.
func block(dst []int64, norm *sparse.CSR, cols []int64, factor []float64, t *idTable) Block {
	nd, drawn := len(dst), 0
	for _, f := range factor {
		if f != 0 {
			drawn++
		}
	}
	src := make([]int64, nd, nd+drawn)
	copy(src, dst)
	t.reset(nd+drawn, norm.NCols)
	for i, v := range dst {
		t.put(v, int32(i))
	}
	// weight[j]: the factor of source j, 0 if it was not sampled (a
	// destination only).
	weight := make([]float64, nd, nd+drawn)
	for x, u := range cols {
		if factor[x] == 0 {
			continue
		}
		if j := t.put(u, int32(len(src))); int(j) < len(src) {
			weight[j] = factor[x]
		} else {
			src = append(src, u)
			weight = append(weight, factor[x])
		}
	}
	adj := &sparse.CSR{NRows: int64(nd), NCols: int64(len(src)), Indptr: make([]int64, nd+1)}
	for i := range dst {
		lo, hi := norm.Indptr[i], norm.Indptr[i+1]
		for x := lo; x < hi; x++ {
			if j := t.get(norm.Indices[x]); j >= 0 && weight[j] != 0 {
				adj.Indices = append(adj.Indices, int64(j))
				adj.Values = append(adj.Values, norm.Values[x]*weight[j])
			}
		}
		adj.Indptr[i+1] = int64(len(adj.Indices))
	}
	if adj.Indices == nil {
		adj.Indices, adj.Values = []int64{}, []float64{}
	}
	adj.SortRows()
	return Block{Adj: adj, Dst: src[:nd:nd], Src: slices.Clip(src)}
}
