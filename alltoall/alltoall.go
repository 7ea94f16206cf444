package alltoall

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/metrics"
	"gnnmpi/partition"
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
	// own is the number of ids this rank owns (repeats counted), resident
	// the number copied from the table (from[i] < 0).
	own, resident int
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
func NewPlan(ids []int64, book *partition.Book, rank int) *Plan {
	return newPlan(ids, book, rank, func(_ int64, owner int, lid int64) (int64, bool) {
		return lid, owner == rank
	})
}

// newPlan is NewPlan with the rows this rank holds given by resident: it
// returns, for a vertex with its owner and local id there, the row of this
// rank's table that holds it and whether there is one. Resident rows are
// copied from the table (from = ^row); the others are requested from their
// owners. Under NewPlan the table is the rank's own part, indexed by local
// id; under a Store it is the store's resident rows (own part and cache).
// resident must be safe for concurrent calls: a long ids is looked up on
// several goroutines (resolve).
func newPlan(ids []int64, book *partition.Book, rank int, resident func(gid int64, owner int, lid int64) (int64, bool)) *Plan {
	if rank < 0 || rank >= book.Parts {
		panic("alltoall: rank out of range")
	}
	n := book.NumNodes()
	for _, gid := range ids {
		if gid < 0 || gid >= n {
			panic("alltoall: id out of range")
		}
	}
	p := &Plan{rank: rank, parts: book.Parts, counts: make([]int, book.Parts), from: make([]int64, len(ids))}

	// First pass: resident rows get their final source (resolve); then,
	// in order, each distinct remote id a slot in order of first
	// appearance (from[i] = slot for now).
	p.own, p.resident = resolve(ids, book, rank, resident, p.from)
	type want struct {
		owner int32
		lid   int64
		slot  int64
	}
	slot := map[int64]int64{}
	var wants []want
	for i, gid := range ids {
		if p.from[i] != remoteRow {
			continue
		}
		o, lid := book.Locate(gid)
		owner := int32(o)
		if int(owner) == rank {
			panic("alltoall: a row this rank owns is not resident")
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

// remoteRow marks, in resolve's from, an id that is not resident.
const remoteRow = math.MaxInt64

// resolveSplit is the number of ids per goroutine below which resolve
// does not split its ids further.
const resolveSplit = 1 << 14

// resolve sets from[i] to ^row for every ids[i] that resident places in
// row row of this rank's table, and to remoteRow for the others, and
// returns the number of ids rank owns and the number resident. The ids
// are split into contiguous ranges of at least resolveSplit, one per
// goroutine, up to GOMAXPROCS: each lookup is a miss into the book's and
// the table's index arrays, and the goroutines keep their misses in
// flight together. The ids must be in range.
func resolve(ids []int64, book *partition.Book, rank int, resident func(gid int64, owner int, lid int64) (int64, bool), from []int64) (own, res int) {
	run := func(lo, hi int) (own, res int) {
		for i := lo; i < hi; i++ {
			gid := ids[i]
			o, lid := book.Locate(gid)
			if o == rank {
				own++
			}
			if row, ok := resident(gid, o, lid); ok {
				from[i] = ^row
				res++
			} else {
				from[i] = remoteRow
			}
		}
		return own, res
	}
	n := len(ids)
	g := min(runtime.GOMAXPROCS(0), n/resolveSplit)
	if g <= 1 {
		return run(0, n)
	}
	owns, ress := make([]int, g), make([]int, g)
	var wg sync.WaitGroup
	for k := range g {
		wg.Go(func() { owns[k], ress[k] = run(n*k/g, n*(k+1)/g) })
	}
	wg.Wait()
	for k := range g {
		own, res = own+owns[k], res+ress[k]
	}
	return own, res
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
// a phase for byte accounting; the caller chooses one (Fetch uses metrics.PhaseFetch).
//
// The result is a new matrix that shares no memory with local.
// It returns an error if communication fails or another rank asks for a
// row that local does not have (inconsistent books).
// It will panic if p was made for another rank or communicator size than
// c's, if book has another number of parts, or if local lacks a row the plan
// copies from this rank.
func Exchange(c collective.Comm, p *Plan, book *partition.Book, local *dense.Matrix) (*dense.Matrix, error) {
	return ExchangeTo(c, nil, p, book, local)
}

// ExchangeTo is Exchange writing into dst's storage when it is large
// enough (dst may be nil), and returns the result, which aliases dst then.
// Reusing one buffer across minibatches avoids faulting in fresh pages for
// every exchange, which dominates the cost of wide feature rows.
//
// ExchangeTo is collective over c, under the conditions of Exchange.
func ExchangeTo(c collective.Comm, dst *dense.Matrix, p *Plan, book *partition.Book, local *dense.Matrix) (*dense.Matrix, error) {
	if c.Rank() != p.rank || c.Size() != p.parts || book.Parts != p.parts {
		panic("alltoall: plan made for another rank or communicator size")
	}
	f := local.Cols
	out := dense.Reuse(dst, len(p.from), f)
	// Copy the own rows first, so that a bad local matrix panics before any
	// communication rather than leaving the other ranks blocked.
	for i, src := range p.from {
		if src < 0 {
			lid := int(^src)
			if lid >= local.Rows {
				panic("alltoall: local feature matrix lacks a row this rank owns")
			}
			copy(out.Row(i), local.Row(lid))
		}
	}
	err := exchangeRows(c, p, f, int64(local.Rows), allAtOnce, nil, func(lid int64, row []float32) {
		copy(row, local.Row(int(lid)))
	}, scatter(p, func(i int, row []float32) { copy(out.Row(i), row) }))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// allAtOnce is the round of an exchange that sends all rows in one call.
var allAtOnce = round{rows: math.MaxInt, count: 1}

// round says how an exchange sends its rows: at most rows rows to each
// requester per Alltoallv call, in count calls. Every rank of the exchange
// must use the same count.
type round struct {
	rows, count int
}

// roundOf returns the rounds of an exchange among parts ranks whose
// largest part has maxPart rows, each rowBytes on the wire, that move at
// most bytes bytes of rows per rank and direction in one call (bytes ≤ 0:
// one call). No rank asks another for more than maxPart distinct rows, so
// the count, a function of values every rank shares, covers every rank's
// requests.
func roundOf(parts int, maxPart int64, rowBytes, bytes int64) round {
	if bytes <= 0 || parts < 2 || maxPart < 1 {
		return allAtOnce
	}
	rows := max(1, bytes/(int64(parts-1)*max(1, rowBytes)))
	if rows >= maxPart {
		return allAtOnce
	}
	return round{rows: int(rows), count: int((maxPart + rows - 1) / rows)}
}

// exchangeRows carries out the communication of p: the request counts,
// the requested local ids (which must lie in [0, held)), and the rows, w
// wire elements each, which serve writes for a local id. The rows go in
// rd.count Alltoallv calls of at most rd.rows rows per requester; buf, if
// not nil, holds the staging buffer between calls (it grows to the largest
// round's rows sent plus received). Each received row is handed to put
// with its index k in the packed requests (it answers p.req[k]); the row
// is valid only during the call. The bytes counted do not depend on the
// rounds. exchangeRows is collective over c.
func exchangeRows[W collective.Elem](c collective.Comm, p *Plan, w int, held int64, rd round, buf *[]W,
	serve func(lid int64, row []W), put func(k int, row []W)) error {
	serveCounts, want, err := requests(c, p, held)
	if err != nil {
		return err
	}
	// Answers: the requested rows, packed in request order, rd.rows per
	// requester and call.
	if buf == nil {
		buf = new([]W)
	}
	q := len(p.counts)
	ns, nr := make([]int, q), make([]int, q) // rows sent to and received from each rank in a call
	sc, rc := make([]int, q), make([]int, q) // the same in elements
	for j := range rd.count {
		lo := j * rd.rows // the first row of each requester's share in this call
		send, recv := 0, 0
		for r := range q {
			ns[r] = min(max(serveCounts[r]-lo, 0), rd.rows)
			nr[r] = min(max(p.counts[r]-lo, 0), rd.rows)
			sc[r], rc[r] = ns[r]*w, nr[r]*w
			send += sc[r]
			recv += rc[r]
		}
		if cap(*buf) < send+recv {
			*buf = make([]W, send+recv) // the first call is the largest
		}
		sbuf, rbuf := (*buf)[:send], (*buf)[send:send+recv]
		x, k0 := 0, 0
		for r := range q {
			for t := range ns[r] {
				serve(want[k0+lo+t], sbuf[x:x+w])
				x += w
			}
			k0 += serveCounts[r]
		}
		if err := c.Alltoallv(collective.BufOf(sbuf), sc, collective.BufOf(rbuf), rc); err != nil {
			return fmt.Errorf("alltoall: exchanging feature rows: %w", err)
		}
		x, k0 = 0, 0
		for r := range q {
			for t := range nr[r] {
				put(k0+lo+t, rbuf[x:x+w])
				x += w
			}
			k0 += p.counts[r]
		}
	}
	return nil
}

// requests exchanges the requests of p: how many rows each rank wants
// from this one (serveCounts, by rank) and which (want, the local ids
// packed by requester), checking that they lie in [0, held). It is
// collective over c: two Alltoallv calls of 8(q−1) and 8·p.Remote() bytes
// sent.
func requests(c collective.Comm, p *Plan, held int64) (serveCounts []int, want []int64, err error) {
	serveCounts, err = collective.AlltoallCounts(c, p.counts)
	if err != nil {
		return nil, nil, fmt.Errorf("alltoall: exchanging request counts: %w", err)
	}
	want, err = collective.AlltoallvFlat(c, p.req, p.counts, serveCounts)
	if err != nil {
		return nil, nil, fmt.Errorf("alltoall: exchanging requested ids: %w", err)
	}
	for k, lid := range want {
		if lid < 0 || lid >= held {
			return nil, nil, fmt.Errorf("alltoall: rank %d asked rank %d for local row %d, which it does not hold (partition books differ?)",
				requester(serveCounts, k), p.rank, lid)
		}
	}
	return serveCounts, want, nil
}

// scatter returns the put of exchangeRows for plan p that hands the row
// answering packed request k to put(i, row) for every position i of the
// result that p fills from it (a remote id may repeat in a fetch).
func scatter[W collective.Elem](p *Plan, put func(i int, row []W)) func(k int, row []W) {
	// at[start[k]:start[k+1]] are the positions of packed request k.
	start := make([]int, len(p.req)+1)
	for _, f := range p.from {
		if f >= 0 {
			start[f+1]++
		}
	}
	for k := range p.req {
		start[k+1] += start[k]
	}
	at := make([]int, start[len(p.req)])
	next := slices.Clone(start[:len(p.req)])
	for i, f := range p.from {
		if f >= 0 {
			at[next[f]] = i
			next[f]++
		}
	}
	return func(k int, row []W) {
		for _, i := range at[start[k]:start[k+1]] {
			put(i, row)
		}
	}
}

// Fetch returns the feature rows of ids, in order, from the ranks that own
// them: NewPlan followed by Exchange, with the traffic counted under the
// phase metrics.PhaseFetch (the previous phase is restored on return).
//
// Fetch is collective over c, under the conditions of Exchange.
// It will panic if an id is out of range or local lacks a row this rank
// owns.
func Fetch(c collective.Comm, ids []int64, book *partition.Book, local *dense.Matrix) (*dense.Matrix, error) {
	return FetchTo(c, nil, ids, book, local)
}

// FetchTo is Fetch writing into dst's storage when it is large enough, as
// ExchangeTo does.
//
// FetchTo is collective over c, under the conditions of Exchange.
func FetchTo(c collective.Comm, dst *dense.Matrix, ids []int64, book *partition.Book, local *dense.Matrix) (*dense.Matrix, error) {
	defer collective.SetPhase(c, metrics.PhaseFetch)()
	return ExchangeTo(c, dst, NewPlan(ids, book, c.Rank()), book, local)
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
