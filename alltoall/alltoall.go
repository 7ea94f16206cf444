package alltoall

import (
	"cmp"
	"fmt"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/graph"
)

// Plan says how one rank obtains the feature rows of a list of global vertex
// ids: which rows it copies from its own part, which distinct rows it asks
// each other rank for, and where every received row goes in the result.
//
// A Plan is pure data made by NewPlan without communication; Exchange
// carries it out. It is immutable and may be reused for any number of
// exchanges with the same ids and book.
type Plan struct {
	rank, parts int
	// counts[q] is the number of distinct rows requested from rank q, and
	// req the local ids (on their owner) of those rows: rank 0's first,
	// each owner's in ascending local id. counts[rank] is 0.
	counts []int
	req    []int64
	// from[i] says where row i of the result comes from: received row
	// from[i] (an index into the packed rows answering req) when ≥ 0, or
	// this rank's local row ^from[i] when < 0.
	from []int64
}

// NewPlan returns the plan for fetching the feature rows of ids, in order,
// onto rank rank of a communicator partitioned by book. ids may repeat: each
// distinct remote id is requested once and copied to every position that
// asks for it. Rows owned by rank are copied locally and never sent.
//
// NewPlan is pure: it does not communicate and does not modify ids, and the
// plan shares no memory with ids. It takes O(len(ids) + r·log r) time for r
// distinct remote ids.
// It will panic if rank is outside [0, book.Parts) or an id is outside
// [0, book.NumNodes()).
func NewPlan(ids []int64, book *graph.PartitionBook, rank int) *Plan {
	if rank < 0 || rank >= book.Parts {
		panic("alltoall: rank out of range")
	}
	n := book.NumNodes()
	p := &Plan{rank: rank, parts: book.Parts, counts: make([]int, book.Parts), from: make([]int64, len(ids))}

	// First pass: local rows get their final source, each distinct remote id
	// a slot in order of first appearance (from[i] = slot for now).
	type want struct {
		owner int32
		lid   int64
		slot  int64
	}
	slot := map[int64]int64{}
	var wants []want
	for i, gid := range ids {
		if gid < 0 || gid >= n {
			panic("alltoall: id out of range")
		}
		owner, lid := book.Part[gid], book.Local[gid]
		if int(owner) == rank {
			p.from[i] = ^lid
			continue
		}
		s, ok := slot[gid]
		if !ok {
			s = int64(len(wants))
			slot[gid] = s
			wants = append(wants, want{owner: owner, lid: lid, slot: s})
			p.counts[owner]++
		}
		p.from[i] = s
	}

	// Pack the requests by owner and, within an owner, by local id, so that
	// owners read their feature rows in memory order.
	slices.SortFunc(wants, func(a, b want) int {
		if c := cmp.Compare(a.owner, b.owner); c != 0 {
			return c
		}
		return cmp.Compare(a.lid, b.lid)
	})
	pos := make([]int64, len(wants)) // slot → packed position
	p.req = make([]int64, len(wants))
	for k, w := range wants {
		p.req[k] = w.lid
		pos[w.slot] = int64(k)
	}
	for i, f := range p.from {
		if f >= 0 {
			p.from[i] = pos[f]
		}
	}
	return p
}

// Remote returns the number of distinct rows the plan requests from other
// ranks.
func (p *Plan) Remote() int { return len(p.req) }

// Exchange fetches the feature rows planned by p and returns them as a
// len(ids)×local.Cols matrix whose row i is the feature row of ids[i]. local
// holds this rank's part of the feature matrix: its row k is the features of
// the vertex with Part = this rank and Local = k in book.
//
// Exchange is collective over c: every rank must call it, with a plan made
// by NewPlan for its own rank and the same book, and with local matrices of
// the same number of columns. Ranks may fetch different numbers of rows,
// including none. It makes three Alltoallv calls: the request counts, the
// requested local ids (int64), and the feature rows (float32); each rank
// sends only rows others asked for and copies its own rows locally, so rank
// r sends 8(p−1) + 8·p.Remote() + 4F·(rows it serves) bytes and receives
// 8(p−1) + 8·(rows it serves) + 4F·p.Remote() bytes. Exchange does not set
// a phase for byte accounting; the caller chooses one (Fetch uses "fetch").
//
// The result is a new matrix that shares no memory with local.
// It returns an error if communication fails or another rank asks for a
// row that local does not have (inconsistent books).
// It will panic if p was made for another rank or communicator size than
// c's, if book has another number of parts, or if local lacks a row the plan
// copies from this rank.
func Exchange(c collective.Comm, p *Plan, book *graph.PartitionBook, local *dense.Matrix) (*dense.Matrix, error) {
	return ExchangeTo(c, nil, p, book, local)
}

// ExchangeTo is Exchange writing into dst's storage when it is large
// enough (dst may be nil), and returns the result, which aliases dst then.
// Reusing one buffer across minibatches avoids faulting in fresh pages for
// every exchange, which dominates the cost of wide feature rows.
//
// ExchangeTo is collective over c, under the conditions of Exchange.
func ExchangeTo(c collective.Comm, dst *dense.Matrix, p *Plan, book *graph.PartitionBook, local *dense.Matrix) (*dense.Matrix, error) {
	if c.Rank() != p.rank || c.Size() != p.parts || book.Parts != p.parts {
		panic("alltoall: plan made for another rank or communicator size")
	}
	f := local.Cols
	var out *dense.Matrix
	if n := len(p.from) * f; dst != nil && cap(dst.Data) >= n {
		// Every row is written below: own rows here, the others on receipt.
		out = &dense.Matrix{Rows: len(p.from), Cols: f, Data: dst.Data[:n]}
	} else {
		out = dense.New(len(p.from), f)
	}
	// Copy the own rows first, so that a bad local matrix panics before any
	// communication rather than leaving the other ranks blocked.
	for i, src := range p.from {
		if src < 0 {
			lid := int(^src)
			if lid >= local.Rows {
				panic("alltoall: local feature matrix lacks a row this rank owns")
			}
			copy(out.Data[i*f:(i+1)*f], local.Data[lid*f:(lid+1)*f])
		}
	}

	// Requests: how many rows each rank wants from this one, then which.
	serveCounts, err := collective.AlltoallCounts(c, p.counts)
	if err != nil {
		return nil, fmt.Errorf("alltoall: exchanging request counts: %w", err)
	}
	serve, err := collective.AlltoallvFlat(c, p.req, p.counts, serveCounts)
	if err != nil {
		return nil, fmt.Errorf("alltoall: exchanging requested ids: %w", err)
	}

	// Answers: the requested rows, packed in request order.
	rows := make([]float32, len(serve)*f)
	for k, lid := range serve {
		if lid < 0 || lid >= int64(local.Rows) {
			return nil, fmt.Errorf("alltoall: rank %d asked for local row %d of %d on rank %d (partition books differ?)",
				requester(serveCounts, k), lid, local.Rows, p.rank)
		}
		copy(rows[k*f:(k+1)*f], local.Data[int(lid)*f:(int(lid)+1)*f])
	}
	sendCounts := scaled(serveCounts, f)
	recvCounts := scaled(p.counts, f)
	got, err := collective.AlltoallvFlat(c, rows, sendCounts, recvCounts)
	if err != nil {
		return nil, fmt.Errorf("alltoall: exchanging feature rows: %w", err)
	}

	for i, src := range p.from {
		if src >= 0 {
			copy(out.Data[i*f:(i+1)*f], got[int(src)*f:(int(src)+1)*f])
		}
	}
	return out, nil
}

// Fetch returns the feature rows of ids, in order, from the ranks that own
// them: NewPlan followed by Exchange, with the traffic counted under the
// phase "fetch" (the previous phase is restored on return).
//
// Fetch is collective over c, under the conditions of Exchange.
// It will panic if an id is out of range or local lacks a row this rank
// owns.
func Fetch(c collective.Comm, ids []int64, book *graph.PartitionBook, local *dense.Matrix) (*dense.Matrix, error) {
	return FetchTo(c, nil, ids, book, local)
}

// FetchTo is Fetch writing into dst's storage when it is large enough, as
// ExchangeTo does.
//
// FetchTo is collective over c, under the conditions of Exchange.
func FetchTo(c collective.Comm, dst *dense.Matrix, ids []int64, book *graph.PartitionBook, local *dense.Matrix) (*dense.Matrix, error) {
	defer collective.SetPhase(c, "fetch")()
	return ExchangeTo(c, dst, NewPlan(ids, book, c.Rank()), book, local)
}

// scaled returns counts multiplied by f.
func scaled(counts []int, f int) []int {
	out := make([]int, len(counts))
	for q, n := range counts {
		out[q] = n * f
	}
	return out
}

// requester returns the rank whose request is element k of the packed
// requests with the given per-rank counts.
func requester(counts []int, k int) int {
	for q, n := range counts {
		if k < n {
			return q
		}
		k -= n
	}
	return -1
}
