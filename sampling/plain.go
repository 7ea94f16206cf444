package sampling

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"gnnmpi/sparse"
)

// Plain is GraphSAGE's node-wise sampler written the obvious way, one
// minibatch and one vertex at a time, with no matrix form: the baseline
// that the bulk sampler's benchmarks compare with. For every frontier
// vertex it copies the vertex's row of Adj and takes min(fanout, degree)
// entries by a partial Fisher–Yates shuffle; a block's vertices are
// relabelled through a hash map, as in the usual per-batch samplers of
// DGL and PyG on the CPU.
//
// It draws from the same distribution as NodeWise on an adjacency whose
// rows hold no repeated entries (a repeated entry counts as another
// neighbour here), from one generator per minibatch, PCG(key, 0), so its
// minibatches are not NodeWise's. Blocks follow the conventions of Block
// (sources are the destinations, then new vertices in order of first
// appearance; rows sorted).
type Plain struct {
	Adj     *sparse.CSR
	Fanouts []int
}

var _ Sampler = (*Plain)(nil)

// NewPlain returns the plain sampler over adj (kept, not copied) with the
// given fanouts (copied). It returns an error if adj is not a valid square
// CSR or fanouts is empty.
func NewPlain(adj *sparse.CSR, fanouts []int) (*Plain, error) {
	if err := checkAdj(adj); err != nil {
		return nil, err
	}
	if len(fanouts) == 0 {
		return nil, fmt.Errorf("sampling: no fanouts (need one per layer)")
	}
	return &Plain{Adj: adj, Fanouts: slices.Clone(fanouts)}, nil
}

// Sample samples the minibatches one after another.
func (s *Plain) Sample(batches [][]int64, keys []uint64) ([]*MiniBatch, error) {
	if err := checkBatches(batches, keys, s.Adj.NRows); err != nil {
		return nil, err
	}
	out := make([]*MiniBatch, len(batches))
	for b, seeds := range batches {
		r := rand.New(rand.NewPCG(keys[b], 0))
		nl := len(s.Fanouts)
		m := &MiniBatch{Blocks: make([]Block, nl)}
		dst := slices.Clone(seeds)
		for h, fanout := range s.Fanouts {
			blk := s.hop(dst, fanout, r)
			m.Blocks[nl-1-h] = blk
			dst = blk.Src
		}
		m.Seeds = m.Blocks[nl-1].Dst
		out[b] = m
	}
	return out, nil
}

func (s *Plain) hop(dst []int64, fanout int, r *rand.Rand) Block {
	local := make(map[int64]int64, len(dst))
	src := slices.Clone(dst)
	for i, v := range dst {
		local[v] = int64(i)
	}
	adj := &sparse.CSR{NRows: int64(len(dst)), Indptr: make([]int64, len(dst)+1), Indices: []int64{}}
	var nb []int64
	for i, v := range dst {
		nb = append(nb[:0], s.Adj.Row(v)...)
		take := len(nb)
		if fanout >= 0 && fanout < take {
			for j := range fanout {
				k := j + r.IntN(len(nb)-j)
				nb[j], nb[k] = nb[k], nb[j]
			}
			take = fanout
		}
		slices.Sort(nb[:take]) // new sources in ascending id within a row, as Block wants
		for _, u := range nb[:take] {
			j, ok := local[u]
			if !ok {
				j = int64(len(src))
				local[u] = j
				src = append(src, u)
			}
			adj.Indices = append(adj.Indices, j)
		}
		slices.Sort(adj.Indices[adj.Indptr[i]:])
		adj.Indptr[i+1] = int64(len(adj.Indices))
	}
	adj.NCols = int64(len(src))
	return Block{Adj: adj, Dst: src[:len(dst):len(dst)], Src: src}
}
