package sampling

import (
	"fmt"
	"slices"

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
	for h, fanout := range s.Fanouts {
		var total int
		for _, f := range frontiers {
			total += len(f)
		}
		if cap(rows) < total {
			rows, rowKeys = make([]int64, 0, total), make([]uint64, 0, total)
		}
		rows, rowKeys = rows[:0], rowKeys[:0]
		for b, f := range frontiers {
			off[b] = int64(len(rows))
			rows = append(rows, f...)
			for range f {
				rowKeys = append(rowKeys, keys[b])
			}
		}
		off[k] = int64(len(rows))
		var smp *sparse.CSR
		var view *keptView
		var err error
		if d, ok := s.top.(*dist15D); ok {
			// The rows where the topology kept them, when it can (c = 1):
			// each block reads its own, not a copy of the bulk's sample.
			smp, view, err = d.rowsKept(rows, rowKeys, uniformPicker(h, fanout))
		} else {
			smp, err = s.top.rows(rows, rowKeys, uniformPicker(h, fanout))
		}
		if err != nil {
			return nil, err
		}
		// The minibatches' blocks, on up to GOMAXPROCS goroutines, each
		// with its own table numbering a block's sources.
		forEach(k, func(b int, t *idTable) {
			var blk Block
			if view != nil {
				blk = relabelView(frontiers[b], view, off[b], off[b+1], n, t)
			} else {
				// smp is this call's (rows' result): each block takes its
				// rows' indices, disjoint from the others'.
				blk = relabel(frontiers[b], rowRange(smp, off[b], off[b+1]), t, true)
			}
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
		var r *pcg
		if fanout >= 0 && len(cols) > fanout {
			r = sc.rp.row(key, h, v)
		}
		return sc.d.draw(len(cols), nil, fanout, r)
	}
}

// relabel turns the sampled matrix smp (|dst|×n, global columns) into the
// block with destinations dst: sources are the destinations followed by
// the other sampled vertices in order of first appearance, and each row's
// local columns are sorted. t is scratch: it numbers the block's sources
// while the block is built. With own, smp's indices are the caller's to
// give: the block's local columns overwrite them (each is written at or
// before the place it is read from), and the block keeps them, instead
// of a new array of the same length (which would be zeroed and then
// written). Otherwise smp is not modified.
// It will panic if a vertex of dst is repeated.
func relabel(dst []int64, smp *sparse.CSR, t *idTable, own bool) Block {
	out := smp.Indices
	if !own {
		out = make([]int64, len(smp.Indices))
	}
	row := func(i int) []int64 { return smp.Indices[smp.Indptr[i]:smp.Indptr[i+1]] }
	return relabelRows(dst, smp.Indptr, row, out, smp.NCols, t)
}

// relabelView is relabel of rows [lo, hi) of the kept rows v (row i of
// the sampled matrix being v.row(lo+i)), into a new array of the block's
// size: the rows are read where they were kept, not first gathered into
// one matrix.
func relabelView(dst []int64, v *keptView, lo, hi int64, n int64, t *idTable) Block {
	indptr := make([]int64, hi-lo+1)
	for i := range hi - lo {
		indptr[i+1] = indptr[i] + int64(len(v.row(lo+i)))
	}
	row := func(i int) []int64 { return v.row(lo + int64(i)) }
	return relabelRows(dst, indptr, row, make([]int64, indptr[hi-lo]), n, t)
}

// relabelRows is relabel of the len(dst) rows row(0), row(1), … of a
// matrix of ncols columns, whose offsets in the block are indptr (row i
// at [indptr[i], indptr[i+1])): the block's local columns are written to
// out (which may hold the rows themselves, each row at its offsets: each
// id is written at or before the place it is read from), and the block
// keeps out and indptr.
func relabelRows(dst []int64, indptr []int64, row func(i int) []int64, out []int64, ncols int64, t *idTable) Block {
	nd := len(dst)
	// The sources gather in t's scratch and are copied out once at their
	// size.
	src := append(t.src[:0], dst...)
	t.reset(int(min(int64(nd+len(out)), ncols)), ncols)
	for i, v := range dst {
		if t.put(v, int32(i)) != int32(i) {
			panic("sampling: destination vertex repeated")
		}
	}
	direct, dense, gen := t.direct, t.dense, t.gen
	adj := &sparse.CSR{NRows: int64(nd), Indptr: indptr, Indices: out}
	// A row's vertices new to the block get ids above all earlier ones, in
	// the row's order: the row is its earlier vertices' ids, sorted, then
	// the new ones. Only the first part needs sorting (all of the row if
	// the new ids are out of order, as a repeated vertex would make them).
	for i := range nd {
		s, e := indptr[i], indptr[i+1]
		in := row(i)
		if direct {
			src = relabelRow(adj.Indices, in, s, src, dense, gen, t)
			continue
		}
		before, o := int32(len(src)), s // o: the next place for an earlier vertex
		fresh := t.fresh[:0]
		ordered := true
		for _, v := range in {
			j := t.put(v, int32(len(src)))
			if int(j) == len(src) {
				src = append(src, v)
			}
			if j < before {
				adj.Indices[o] = int64(j)
				o++
				continue
			}
			ordered = ordered && (len(fresh) == 0 || int64(j) > fresh[len(fresh)-1])
			fresh = append(fresh, int64(j))
		}
		copy(adj.Indices[o:e], fresh)
		if ordered {
			sortSmall(adj.Indices[s:o])
		} else {
			sortSmall(adj.Indices[s:e])
		}
		t.fresh = fresh
	}
	adj.NCols = int64(len(src))
	t.src = src
	src = append(make([]int64, 0, len(src)), src...) // never nil, as Dst and Src were before
	return Block{Adj: adj, Dst: src[:nd:nd], Src: src}
}

// relabelRow is a row of relabel with a direct idTable (dense,
// generation gen): it reads the row's vertices from row, writes their ids
// to out[s:s+len(row)] (which may be where row is: each is written at or
// before the place it is read from), appends the new vertices to src and
// returns it. Its loop
// has no branch on the vertices: every id is written both as an earlier
// one (at o) and as a new one (in t.fresh), and the counts advance by the
// comparisons, so that a row whose vertices are new or not at random costs
// no mispredicted branches.
func relabelRow(out, row []int64, s int64, src []int64, dense []idStamp, gen uint32, t *idTable) []int64 {
	row = row[:len(row):len(row)]
	e := s + int64(len(row))
	before, o := int32(len(src)), s // o: the next place for an earlier vertex
	ns := len(src)
	src = slices.Grow(src, len(row))
	room := src[:cap(src)]
	fresh := slices.Grow(t.fresh[:0], len(row))[:len(row)]
	nf := 0
	ordered := true
	last := int32(-1) // the last new id of the row
	for _, v := range row {
		d := &dense[v]
		j := int32(ns)
		if d.gen == gen {
			j = d.val
		}
		*d = idStamp{gen: gen, val: j}
		room[ns] = v // kept only when v is new
		isNew, earlier := 0, 0
		if int(j) == ns {
			isNew = 1
		}
		if j < before {
			earlier = 1
		}
		ns += isNew
		out[o] = int64(j)
		o += int64(earlier)
		fresh[nf] = int64(j)
		nf += 1 - earlier
		ordered = ordered && (j < before || j > last)
		last = max(last, j)
	}
	copy(out[o:e], fresh[:nf])
	if ordered {
		sortSmall(out[s:o])
	} else {
		sortSmall(out[s:e])
	}
	t.fresh = fresh[:0]
	return room[:ns]
}

// smallSort is the length up to which sortSmall sorts by insertion: a
// sampled row (at most its fanout of entries) is that short, and
// slices.Sort's pattern-defeating quicksort costs more on it. Up to
// sweepSort it inserts without branches on the values.
const (
	smallSort = 32
	sweepSort = 16
)

// sortSmall sorts x in ascending order, by insertion when it is short:
// up to sweepSort entries by sweeps of min and max (each entry carried
// down past all those before it, a fixed number of steps whatever the
// order, so no mispredicted branch: about 1.6× as fast on 10 to 15 random
// entries as the insertion that stops at the entry's place).
func sortSmall[E int | int64](x []E) {
	if len(x) > smallSort {
		slices.Sort(x)
		return
	}
	if len(x) <= sweepSort {
		for i := 1; i < len(x); i++ {
			v := x[i]
			for j := i; j > 0; j-- {
				a := x[j-1]
				x[j] = max(a, v)
				v = min(a, v)
			}
			x[0] = v
		}
		return
	}
	for i := 1; i < len(x); i++ {
		v := x[i]
		j := i
		for ; j > 0 && x[j-1] > v; j-- {
			x[j] = x[j-1]
		}
		x[j] = v
	}
}
