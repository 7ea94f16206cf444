package sampling

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"gnnmpi/sparse"
)

// NodeWise is GraphSAGE's node-wise neighbour sampler written as sparse
// matrix products: for a frontier F it forms the |F|×n selection matrix Q
// (one nonzero per row, at column F[i]), computes P = Q·A, and draws from
// each row of P up to the hop's fanout of distinct neighbours, uniformly
// without replacement.
//
// The adjacency A (n×n, row v listing the neighbours that v aggregates
// from) lives in a Topology: replicated on every rank (NewNodeWise; Adj is
// then A) or distributed (NewNodeWiseOn with Distributed15DBlock or
// Distributed2D; Adj is nil), which gives the same minibatches. Repeated entries of a row count as one
// neighbour. Fanouts[h] is the number of neighbours sampled at hop h+1 from
// the seeds: Fanouts[0] belongs to the output layer, as in GraphSAGE's and
// PyG's `--fanouts 25,10`, and len(Fanouts) is the number of layers. A
// negative fanout takes all neighbours; a fanout of 0 takes none.
//
// With a replicated topology Sample is safe for concurrent use; Adj and
// Fanouts must not be modified while a NodeWise is in use.
type NodeWise struct {
	Adj     *sparse.CSR // A when replicated, else nil
	Fanouts []int
	top     Topology
}

var _ Sampler = (*NodeWise)(nil)

// NewNodeWise returns a node-wise sampler over adj, replicated, with the
// given fanouts, which it keeps (adj is not copied, fanouts is). It returns
// an error if adj is not a valid square CSR or fanouts is empty.
func NewNodeWise(adj *sparse.CSR, fanouts []int) (*NodeWise, error) {
	if err := checkAdj(adj); err != nil {
		return nil, err
	}
	s, err := NewNodeWiseOn(Replicated(adj), fanouts)
	if err != nil {
		return nil, err
	}
	s.Adj = adj
	return s, nil
}

// NewNodeWiseOn returns a node-wise sampler over the adjacency held by top.
// It returns an error if fanouts is empty.
func NewNodeWiseOn(top Topology, fanouts []int) (*NodeWise, error) {
	if len(fanouts) == 0 {
		return nil, fmt.Errorf("sampling: no fanouts (need one per layer)")
	}
	return &NodeWise{Fanouts: slices.Clone(fanouts), top: top}, nil
}

// Topology returns where the sampler's adjacency lives.
func (s *NodeWise) Topology() Topology { return s.top }

// Sample returns the minibatches of batches, each with len(s.Fanouts)
// blocks. Hop h+1 samples, for every vertex v of a minibatch's current
// frontier (its seeds at the first hop, then all sources of the previous
// hop), min(Fanouts[h], degree) distinct neighbours uniformly without
// replacement, with the generator RowStream(key, h, v), and makes
// Blocks[len(Fanouts)−1−h]. The frontiers of all the minibatches are
// stacked into one selection matrix Q, so that one product P = Q·A per hop
// serves them all (bulk sampling).
//
// The sources of a block are its destinations followed by the sampled
// vertices that are not destinations, in order of first appearance when the
// rows are read in order and each row's sampled neighbours in ascending
// global id.
//
// Sample returns an error if len(keys) != len(batches), or a seed is
// outside [0, n) or repeated within its minibatch, or the topology's
// communication fails. It does not modify batches and the minibatches share
// no memory with them. With a distributed topology it is collective.
func (s *NodeWise) Sample(batches [][]int64, keys []uint64) ([]*MiniBatch, error) {
	n := s.top.N()
	if err := checkBatches(batches, keys, n); err != nil {
		return nil, err
	}
	k, nl := len(batches), len(s.Fanouts)
	out := make([]*MiniBatch, k)
	frontiers := make([][]int64, k)
	for b := range k {
		out[b] = &MiniBatch{Blocks: make([]Block, nl)}
		frontiers[b] = batches[b]
	}
	var rows []int64
	var rowKeys []uint64
	off := make([]int64, k+1)
	var rel [][]int32 // per goroutine: position of each vertex in the block being built, −1 if none
	for h, fanout := range s.Fanouts {
		rows, rowKeys = rows[:0], rowKeys[:0]
		for b, f := range frontiers {
			off[b] = int64(len(rows))
			rows = append(rows, f...)
			for range f {
				rowKeys = append(rowKeys, keys[b])
			}
		}
		off[k] = int64(len(rows))
		smp, err := s.top.rows(rows, rowKeys, uniformPicker(h, fanout))
		if err != nil {
			return nil, err
		}
		// The minibatches' blocks, on up to GOMAXPROCS goroutines, each
		// with its own relabelling array.
		forEach(k, n, &rel, func(b int, pos []int32) {
			blk := relabel(frontiers[b], rowRange(smp, off[b], off[b+1]), pos)
			out[b].Blocks[nl-1-h] = blk
			frontiers[b] = blk.Src
		})
	}
	for _, m := range out {
		m.Seeds = m.Blocks[nl-1].Dst
	}
	return out, nil
}

// uniformPicker keeps min(fanout, len(cols)) distinct entries of a row
// drawn uniformly without replacement by dart throwing (all of them for a
// negative fanout), from RowStream(key, h, v); a row with at most fanout
// entries keeps all and draws nothing.
func uniformPicker(h, fanout int) picker {
	return func(sc *scratch, key uint64, v int64, cols []int64, _ []float64) []int {
		var r *rand.Rand
		if fanout >= 0 && len(cols) > fanout {
			r = sc.stream(key, h, v)
		}
		return sc.d.draw(len(cols), nil, fanout, r)
	}
}

// FullBlock returns the block of dst with all their neighbours in adj
// (repeated entries counted once), for exact layer-wise inference. Sources
// are ordered as by NodeWise.Sample. dst is not modified and the block
// shares no memory with it or with adj.
// It will panic if adj is not square or a vertex of dst is outside
// [0, n) or repeated.
func FullBlock(adj *sparse.CSR, dst []int64) Block {
	if adj.NRows != adj.NCols {
		panic("sampling: adjacency not square")
	}
	pos := make([]int32, adj.NRows)
	for v := range pos {
		pos[v] = -1
	}
	for _, v := range dst {
		if v < 0 || v >= adj.NRows {
			panic("sampling: destination vertex out of range")
		}
		if pos[v] == 0 {
			panic("sampling: destination vertex repeated")
		}
		pos[v] = 0
	}
	for _, v := range dst {
		pos[v] = -1
	}
	return relabel(dst, sparse.SelectRowsSR(sparse.PlusTimes[float64]{}, adj, dst, nil), pos)
}

// relabel turns the sampled matrix smp (|dst|×n, global columns) into the
// block with destinations dst: sources are the destinations followed by
// the other sampled vertices in order of first appearance, and each row's
// local columns are sorted. pos (n entries) is −1 everywhere on entry and
// on return; it holds each vertex's source index while the block is built.
func relabel(dst []int64, smp *sparse.CSR, pos []int32) Block {
	nd := len(dst)
	src := make([]int64, nd, nd+len(smp.Indices))
	copy(src, dst)
	for i, v := range dst {
		pos[v] = int32(i)
	}
	adj := &sparse.CSR{NRows: int64(nd), Indptr: smp.Indptr, Indices: make([]int64, len(smp.Indices))}
	for q, v := range smp.Indices {
		j := pos[v]
		if j < 0 {
			j = int32(len(src))
			pos[v] = j
			src = append(src, v)
		}
		adj.Indices[q] = int64(j)
	}
	for _, v := range src {
		pos[v] = -1
	}
	for i := range nd {
		slices.Sort(adj.Indices[adj.Indptr[i]:adj.Indptr[i+1]])
	}
	adj.NCols = int64(len(src))
	return Block{Adj: adj, Dst: src[:nd:nd], Src: slices.Clip(src)}
}

// forEach calls fn(b, pos) for b in [0, k) on up to GOMAXPROCS goroutines,
// each with its own array pos of n int32 set to −1, kept in *arrays for
// the next call. It will panic with fn's panic.
func forEach(k int, n int64, arrays *[][]int32, fn func(b int, pos []int32)) {
	g := min(k, runtime.GOMAXPROCS(0))
	for len(*arrays) < g {
		pos := make([]int32, n)
		for v := range pos {
			pos[v] = -1
		}
		*arrays = append(*arrays, pos)
	}
	if g <= 1 {
		for b := range k {
			fn(b, (*arrays)[0])
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var pv any
	for x := range g {
		pos := (*arrays)[x]
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { pv = r })
				}
			}()
			for {
				b := int(next.Add(1) - 1)
				if b >= k {
					return
				}
				fn(b, pos)
			}
		})
	}
	wg.Wait()
	if pv != nil {
		panic(pv)
	}
}
