package spgemm

import (
	"fmt"
	"slices"
	"unsafe"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// Row fetching in the streamed 1.5D product. When every rank knows the
// degree of every row of B (Stream.Degrees), a stage need not broadcast
// its whole block B_j: each rank (i, k) of grid column k can ask the root
// (j, k) for just the rows of B_j that the columns of A_i name, as Mul1D's
// fetchBRows does. Which of the two is cheaper depends on the frontier, so
// it is chosen per stage from predicted bytes that every rank of the grid
// column computes alike:
//
//	full_j      = (q−1)·(8·rows_j + (8+s)·nnz(B_j))
//	selective_j = Σ_{x≠j} (8·R_xj + (8+s)·N_xj)
//
// where R_xj is the number of distinct rows of B_j that rank (x, k) needs,
// N_xj their entries (from Degrees), and s the bytes of a value (0 for a
// pattern): a broadcast sends each of the q−1 others the row offsets and
// entries of the whole block; a fetch sends each requester its row ids
// (8 bytes a row) one way and the rows' entries the other (the lengths are
// known from Degrees, so none are sent). The stage fetches iff
// selective_j < full_j. A fetch's ids cost what the broadcast's row
// offsets do for the rows it asks for, so it is never dearer: the two tie
// when every rank needs every row of the block, and the broadcast (one
// tree-shaped call, no ids) is kept then. To make the choice a pure
// function of shared data,
// the ranks of the grid column first gather every rank's R_xj and N_xj
// (one Allgatherv of 2 int64 per stage of the column).

// FetchVolume15D returns the bytes the stage of block j of B costs in a
// streamed 1.5D product over q grid rows when broadcast (full) and when
// fetched row by row (selective), as above: rows and nnz are B_j's rows
// and entries, need[x] and entries[x] the rows of B_j that rank x of the
// grid column needs and their entries (ignored for x = j), and valSize the
// bytes of a value of B (0 for a pattern). Mul15DStream fetches iff
// selective < full.
func FetchVolume15D(q, j int, rows, nnz int64, need, entries []int64, valSize int64) (full, selective int64) {
	full = int64(q-1) * (8*rows + (8+valSize)*nnz)
	for x := range q {
		if x != j {
			selective += 8*need[x] + (8+valSize)*entries[x]
		}
	}
	return full, selective
}

// fetchPlan is the row-fetching plan of one rank of a streamed 1.5D
// product: for each of its replica's stages t (block js[t] of B), whether
// the stage is fetched, the rows of the block this rank needs (global ids,
// ascending; none for its own block) and, gathered from the grid column,
// every rank's count of them (count[x][t]).
type fetchPlan struct {
	js    []int
	sel   []bool
	need  [][]int64
	count [][]int64
}

func (p *fetchPlan) selective(t int) bool { return p != nil && p.sel[t] }

// planFetch15D returns the plan of this rank (g.Row, g.Col) for A·B, or nil
// when there is nothing to choose (deg is nil or the grid has one row). It
// is collective over g.ColComm: one Allgatherv of 2 int64 per stage.
func planFetch15D[T sparse.Scalar](g *collective.Grid, a, b *Dist[T], deg []int32) (*fetchPlan, error) {
	q, c, i, k := g.PR, g.PC, g.Row, g.Col
	if deg == nil || q == 1 {
		return nil, nil
	}
	if int64(len(deg)) != b.M {
		return nil, fmt.Errorf("%w: %d degrees for the %d rows of B", ErrLayout, len(deg), b.M)
	}
	p := &fetchPlan{}
	for j := k; j < q; j += c {
		p.js = append(p.js, j)
	}
	ns := len(p.js)
	cols := distinctSorted(a.Local.Indices, b.M)
	mine := make([]int64, 2*ns) // R then N for each stage
	p.need = make([][]int64, ns)
	for t, j := range p.js {
		if j == i {
			continue
		}
		lo, hi := b.RowBounds[j], b.RowBounds[j+1]
		x, _ := slices.BinarySearch(cols, lo)
		y, _ := slices.BinarySearch(cols, hi)
		p.need[t] = cols[x:y:y]
		mine[t] = int64(y - x)
		for _, r := range p.need[t] {
			mine[ns+t] += int64(deg[r])
		}
	}
	counts := make([]int, q)
	for x := range counts {
		counts[x] = 2 * ns
	}
	all := make([]int64, 2*ns*q)
	if err := g.ColComm.Allgatherv(collective.BufOf(mine), collective.BufOf(all), counts); err != nil {
		return nil, err
	}
	var vs int64
	if b.Local.Values != nil {
		var z T
		vs = int64(unsafe.Sizeof(z))
	}
	p.sel, p.count = make([]bool, ns), make([][]int64, q)
	for x := range q {
		p.count[x] = all[2*ns*x : 2*ns*x+ns]
	}
	need, ent := make([]int64, q), make([]int64, q)
	for t, j := range p.js {
		lo, hi := b.RowBounds[j], b.RowBounds[j+1]
		var nnz int64
		for _, d := range deg[lo:hi] {
			nnz += int64(d)
		}
		for x := range q {
			need[x], ent[x] = all[2*ns*x+t], all[2*ns*x+ns+t]
		}
		full, sel := FetchVolume15D(q, j, hi-lo, nnz, need, ent, vs)
		p.sel[t] = sel < full
	}
	return p, nil
}

// fetchStage runs stage t (block j of B) of a streamed 1.5D product by
// fetching: the ranks of grid column k send the root (j, k) the ids of the
// rows of B_j they need (one Alltoallv over cc), the root sends each its
// rows' column indices and values (one or two Alltoallv), and every rank
// streams a(:, block j)·(the rows it has of B_j) to s.Chunk, the block as
// one piece, then calls s.StageDone. It is collective over cc (the grid
// column, rank x being grid row x).
func fetchStage[T sparse.Scalar, S sparse.Semiring[T]](sr S, s *Stream[T], cc collective.Comm, p *fetchPlan, t int, a, b *Dist[T], deg []int32) error {
	q, me, j := cc.Size(), cc.Rank(), p.js[t]
	lo, hi := b.RowBounds[j], b.RowBounds[j+1]
	valued := b.Local.Values != nil
	sendIDs, recvIDs := make([]int, q), make([]int, q)
	if me != j {
		sendIDs[j] = len(p.need[t])
	} else {
		for x := range q {
			if x != j {
				recvIDs[x] = int(p.count[x][t])
			}
		}
	}
	asked, err := collective.AlltoallvFlat(cc, p.need[t], sendIDs, recvIDs)
	if err != nil {
		return err
	}
	// The root serves the rows asked for, in the order asked.
	sendNNZ, recvNNZ := make([]int, q), make([]int, q)
	var ind []int64
	var val []T
	blk := b.Local
	if me == j {
		// The send buffers are sized once from the rows' degrees: grown by
		// append they took twice the memory and copied every entry again.
		var total int
		for _, r := range asked {
			total += int(deg[r])
		}
		ind = make([]int64, 0, total)
		if valued {
			val = make([]T, 0, total)
		}
		own := b.Local
		var at int
		for x := range q {
			for _, r := range asked[at : at+recvIDs[x]] {
				u, v := own.Indptr[r-lo], own.Indptr[r-lo+1]
				ind = append(ind, own.Indices[u:v]...)
				if valued {
					val = append(val, own.Values[u:v]...)
				}
				sendNNZ[x] += int(v - u)
			}
			at += recvIDs[x]
		}
	} else {
		for _, r := range p.need[t] {
			recvNNZ[j] += int(deg[r])
		}
	}
	rind, err := collective.AlltoallvFlat(cc, ind, sendNNZ, recvNNZ)
	if err != nil {
		return err
	}
	var rval []T
	if valued {
		rval = make([]T, len(rind))
		if err := cc.Alltoallv(valBuf(val), sendNNZ, valBuf(rval), recvNNZ); err != nil {
			return err
		}
	}
	if me != j {
		ind, val = nil, nil
		blk = &sparse.Matrix[T]{NRows: hi - lo, NCols: b.N, Indptr: make([]int64, hi-lo+1), Indices: rind, Values: rval}
		for _, r := range p.need[t] {
			blk.Indptr[r-lo+1] = int64(deg[r])
		}
		for x := range hi - lo {
			blk.Indptr[x+1] += blk.Indptr[x]
		}
		if blk.Indptr[hi-lo] != int64(len(rind)) {
			return fmt.Errorf("spgemm: fetched %d entries of block %d, its degrees say %d", len(rind), j, blk.Indptr[hi-lo])
		}
	}
	if err := streamStage(sr, j, a.Local, lo, hi, blk, s); err != nil {
		return err
	}
	if s.StageDone != nil {
		return s.StageDone(j)
	}
	return nil
}
