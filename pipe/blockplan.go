package pipe

import (
	"fmt"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// NewBlockPlan builds, on every rank of lay, the PartPlan of its pipeline's
// part from that part's own adjacency rows, no rank holding the whole graph.
// The vertices are numbered so that part q owns the contiguous range
// [offsets[q], offsets[q+1]) (len(offsets) = lay.Pipelines + 1, offsets[0]
// = 0, the last entry the number of vertices n); a vertex's part-local id is
// its global id minus its part's offset. local holds the adjacency rows of
// the rank's part (offsets[k+1] − offsets[k] rows, n columns, global column
// ids) and chunk the chunk of each of them, in [0, chunks).
//
// The plan equals Plan.PartPlan of the replicated plan of the whole graph
// with the same parts and chunks, so training on it is bit-identical. The
// ranks exchange, stage by stage among the pipelines (as the trainer's halo
// exchange does), the part-local ids each chunk reads from every other part
// and those vertices' degrees, and sum the halo rows; the bytes count
// under the caller's phase.
//
// NewBlockPlan is collective over c. It returns an error on every rank if
// the inputs of any rank are inconsistent (sizes, a column outside [0, n),
// a chunk out of range, an empty chunk).
func NewBlockPlan(c collective.Comm, lay Layout, offsets []int64, local *sparse.CSR, chunk []int32, chunks int) (*PartPlan, error) {
	k, s := lay.Pipeline(c.Rank()), lay.Stage(c.Rank())
	err := checkBlock(c, lay, offsets, local, chunk, chunks)
	if err = collective.Agree(c, err); err != nil {
		return nil, err
	}
	P := lay.Pipelines
	lo, hi := offsets[k], offsets[k+1]
	n := offsets[P]
	gids := make([]int64, hi-lo)
	deg := make([]int64, hi-lo)
	for i := range gids {
		gids[i] = lo + int64(i)
		deg[i] = degree(gids[i], local.Row(int64(i)))
	}
	src := &partSource{k: k, parts: P, chunks: chunks, gids: gids,
		chunk:  func(l int32) int32 { return chunk[l] },
		row:    func(l int32) []int64 { return local.Row(int64(l)) },
		locate: func(j int64) (int, int32) { return locate(offsets, k, j) },
		ownDeg: func(l int32) int64 { return deg[l] },
	}
	pp := &PartPlan{Part: k, Parts: P, Chunks: chunks, N: n, Gids: gids}
	pp.chunks = src.blocks(false)
	pp.whole = pp.chunks[0]
	all := pp.chunks // every block, in the order of the exchange
	if chunks > 1 {
		pp.whole = src.blocks(true)[0]
		all = append(slices.Clone(all), pp.whole)
	}
	stageC, err := c.Split(s, k)
	if err != nil {
		return nil, err
	}
	defer collective.Free(stageC)
	served, err := exchangeRemote(stageC, k, all)
	if err != nil {
		return nil, err
	}
	if err := exchangeDegrees(stageC, k, all, served, deg); err != nil {
		return nil, err
	}
	pp.served, pp.servedWhole = make([][][]int32, P), make([][][]int32, P)
	for q := range P {
		if q != k {
			pp.served[q], pp.servedWhole[q] = served[q][:chunks], served[q][len(served[q])-1:]
		}
	}
	if chunks == 1 {
		pp.servedWhole = pp.served
	}
	halo := []int64{0, 0}
	for i, blocks := range [][]*Block{pp.chunks, {pp.whole}} {
		for _, b := range blocks {
			halo[i] += int64(b.RemoteRows())
		}
	}
	if err := collective.AllreduceSlice(stageC, halo, collective.Sum); err != nil {
		return nil, err
	}
	pp.haloRows, pp.haloRowsWhole = halo[0], halo[1]
	return pp, nil
}

// checkBlock checks NewBlockPlan's inputs on one rank.
func checkBlock(c collective.Comm, lay Layout, offsets []int64, local *sparse.CSR, chunk []int32, chunks int) error {
	P := lay.Pipelines
	switch {
	case lay.Stages < 1 || P < 1 || lay.Ranks() != c.Size():
		return fmt.Errorf("pipe: %d stages × %d pipelines for %d ranks", lay.Stages, P, c.Size())
	case len(offsets) != P+1 || offsets[0] != 0:
		return fmt.Errorf("pipe: %d part offsets starting at %d; want %d starting at 0", len(offsets), offsets[0], P+1)
	case chunks < 1:
		return fmt.Errorf("pipe: %d chunks; want ≥ 1", chunks)
	}
	for q := range P {
		if offsets[q+1] < offsets[q] {
			return fmt.Errorf("pipe: part offsets %v are not ascending", offsets)
		}
	}
	k := lay.Pipeline(c.Rank())
	rows, n := offsets[k+1]-offsets[k], offsets[P]
	switch {
	case local.NRows != rows || local.NCols != n:
		return fmt.Errorf("pipe: rank %d: the rows of part %d are %d×%d, want %d×%d", c.Rank(), k, local.NRows, local.NCols, rows, n)
	case int64(len(chunk)) != rows:
		return fmt.Errorf("pipe: rank %d: %d chunk entries for the %d vertices of part %d", c.Rank(), len(chunk), rows, k)
	}
	for _, j := range local.Indices {
		if j < 0 || j >= n {
			return fmt.Errorf("pipe: rank %d: part %d has an edge to vertex %d outside [0, %d)", c.Rank(), k, j, n)
		}
	}
	size := make([]int, chunks)
	for i, ch := range chunk {
		if ch < 0 || int(ch) >= chunks {
			return fmt.Errorf("pipe: rank %d: vertex %d in chunk %d; want chunk < %d", c.Rank(), offsets[k]+int64(i), ch, chunks)
		}
		size[ch]++
	}
	for ch, sz := range size {
		if sz == 0 {
			return fmt.Errorf("pipe: part %d chunk %d is empty", k, ch)
		}
	}
	return nil
}

// locate returns the part of vertex j under offsets, and its part-local
// id; the own part k is tried first.
func locate(offsets []int64, k int, j int64) (int, int32) {
	if offsets[k] <= j && j < offsets[k+1] {
		return k, int32(j - offsets[k])
	}
	q, found := slices.BinarySearch(offsets, j)
	if !found {
		q--
	}
	for offsets[q+1] == offsets[q] { // empty parts share their offset
		q++
	}
	return q, int32(j - offsets[q])
}

// exchangeRemote sends every other pipeline q, over the stage communicator
// (rank q is pipeline q), the part-local ids in q that each of blocks reads
// (its Remote[q]) and returns what each pipeline's blocks read of part k:
// served[q][i] for q's i-th block (nil for q = k). Every pipeline has the
// same number of blocks.
func exchangeRemote(stageC collective.Comm, k int, blocks []*Block) ([][][]int32, error) {
	P := stageC.Size()
	send := make([][]int32, P)
	for q := range P {
		if q == k {
			continue
		}
		for _, b := range blocks {
			send[q] = append(send[q], int32(len(b.Remote[q])))
			send[q] = append(send[q], b.Remote[q]...)
		}
	}
	recv, err := collective.AlltoallvSlices(stageC, send)
	if err != nil {
		return nil, err
	}
	served := make([][][]int32, P)
	for q := range P {
		if q == k {
			continue
		}
		rest := recv[q]
		for range blocks {
			if len(rest) == 0 || int(rest[0]) > len(rest)-1 {
				return nil, fmt.Errorf("pipe: pipeline %d sent a malformed list of the rows it reads", q)
			}
			var ids []int32 // nil when empty, as Plan.Served has it
			if m := int(rest[0]); m > 0 {
				ids = rest[1 : 1+m : 1+m]
			}
			served[q] = append(served[q], ids)
			m := len(ids)
			rest = rest[1+m:]
		}
	}
	return served, nil
}

// exchangeDegrees sends every pipeline the degrees of the part's vertices
// its blocks read (served, in that order) and fills in the degrees of the
// blocks' Remote sources from what the owners send.
func exchangeDegrees(stageC collective.Comm, k int, blocks []*Block, served [][][]int32, deg []int64) error {
	P := stageC.Size()
	send := make([][]int64, P)
	for q, lists := range served {
		for _, ids := range lists {
			for _, l := range ids {
				if int(l) >= len(deg) || l < 0 {
					return fmt.Errorf("pipe: pipeline %d reads vertex %d of part %d, which has %d", q, l, k, len(deg))
				}
				send[q] = append(send[q], deg[l])
			}
		}
	}
	recv, err := collective.AlltoallvSlices(stageC, send)
	if err != nil {
		return err
	}
	for q := range P {
		if q == k {
			continue
		}
		rest := recv[q]
		for _, b := range blocks {
			at := len(b.Dst) + len(b.Local)
			for p := range q {
				at += len(b.Remote[p])
			}
			m := len(b.Remote[q])
			if len(rest) < m {
				return fmt.Errorf("pipe: pipeline %d sent %d degrees, fewer than its vertices part %d reads", q, len(recv[q]), k)
			}
			copy(b.deg[at:at+m], rest[:m])
			rest = rest[m:]
		}
	}
	return nil
}
