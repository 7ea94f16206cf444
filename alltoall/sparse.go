package alltoall

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// sparseStore holds a Store's resident rows as sparse rows (NewSparseStore):
// resident row r has the ascending columns col[ptr[r]:ptr[r+1]] and, unless
// the store is a pattern, the values val[ptr[r]:ptr[r+1]].
type sparseStore struct {
	ptr    []int64
	col    []int32
	val    []float32 // nil for a pattern store
	valued bool      // values travel and are returned (the same on every rank)
	// wire stages a round's words, recv the received rows of a fetch, and
	// scratch the sparse result of a dense fetch; all are reused.
	wire    []int32
	recv    recvRows
	scratch *sparse.Matrix[float32]
}

// recvRows holds the rows a fetch receives, by packed request: row k is
// the n[k] entries at words[off[k]:], in wire format (pairs, or columns
// for a pattern).
type recvRows struct {
	off   []int
	n     []int64
	words []int32
}

// reset empties r for m requests.
func (r *recvRows) reset(m int) {
	r.off = slices.Grow(r.off[:0], m)[:m]
	r.n = slices.Grow(r.n[:0], m)[:m]
	r.words = r.words[:0]
}

// wordsPer returns the wire words of one entry: a column, and a value
// unless the store is a pattern.
func (sp *sparseStore) wordsPer() int {
	if sp.valued {
		return 2
	}
	return 1
}

// rowLen returns the entries of resident row r.
func (sp *sparseStore) rowLen(r int32) int64 { return sp.ptr[r+1] - sp.ptr[r] }

// copyRow copies resident row r into out at entry lo (out's Indices, and
// Values when the store is valued, sized to hold it).
func (sp *sparseStore) copyRow(out *sparse.Matrix[float32], lo int64, r int32) {
	a, b := sp.ptr[r], sp.ptr[r+1]
	col := sp.col[a:b]
	dst := out.Indices[lo : lo+int64(len(col))] // one bounds check per row, none per entry
	for e, c := range col {
		dst[e] = int64(c)
	}
	if sp.valued {
		copy(out.Values[lo:], sp.val[a:b])
	}
}

// bytes returns the memory of the resident rows.
func (sp *sparseStore) bytes() int64 {
	return int64(len(sp.ptr))*8 + int64(len(sp.col))*4 + int64(len(sp.val))*4
}

// tiers returns the split of the resident rows into the first gpu rows
// and the rest, with their bytes (row pointer, columns and values).
func (sp *sparseStore) tiers(gpu int) []Tier {
	per := int64(4 + 4*len(sp.val)/max(len(sp.col), 1))
	rows := len(sp.ptr) - 1
	at := func(lo, hi int) int64 { return int64(hi-lo)*8 + (sp.ptr[hi]-sp.ptr[lo])*per }
	return []Tier{{Name: "gpu", Rows: gpu, Bytes: at(0, gpu)}, {Name: "host", Rows: rows - gpu, Bytes: at(gpu, rows)}}
}

// NewSparseStore is NewStore for sparse feature rows: local holds the
// rank's part as sparse rows (row k is the vertex with local id k; columns
// ascending within a row; Values nil for a pattern matrix whose entries
// are all 1). The store keeps its own rows and its cache (chosen and laid
// out as NewStore does) as sparse rows, and fetches move only their
// nonzeros: on the wire a row is its length (int32) followed by its
// (column int32, value float32) pairs, or its columns only when every rank
// of c holds a pattern matrix. If any rank has values, every rank's store
// has values (1 for a pattern's entries). FetchSparse returns sparse rows;
// Fetch returns the same rows dense.
//
// NewSparseStore is collective over c, under the conditions of NewStore;
// besides the cache fill it makes one Allreduce of 2 int64 (whether any
// rank has values, the longest row, which sizes the rounds). Half
// precision (F16) is not supported for sparse rows: it returns an error.
func NewSparseStore(c collective.Comm, book *partition.Book, local *sparse.Matrix[float32], o StoreOptions) (*Store, error) {
	if o.DType == F16 {
		return nil, errors.New("alltoall: half-precision (f16) storage is for dense feature rows; sparse rows are stored and sent as f32 values")
	}
	if local.NCols > math.MaxInt32 {
		return nil, fmt.Errorf("alltoall: %d feature columns exceed the int32 columns of the wire format", local.NCols)
	}
	if err := local.Validate(); err != nil {
		return nil, fmt.Errorf("alltoall: sparse feature rows: %w", err)
	}
	s, cache, err := newLayout(c, book, int(local.NRows), int(local.NCols), o)
	if err != nil {
		return nil, err
	}
	var longest int64
	for i := range local.NRows {
		longest = max(longest, local.Degree(i))
	}
	agree := []int64{0, longest}
	if local.Values != nil {
		agree[0] = 1
	}
	if err := collective.AllreduceSlice(c, agree, collective.Max); err != nil {
		return nil, fmt.Errorf("alltoall: agreeing on the sparse row format: %w", err)
	}
	sp := &sparseStore{valued: agree[0] == 1}
	s.sp = sp
	rowBytes := 4 * (1 + int64(sp.wordsPer())*agree[1])
	s.round = roundOf(book.Parts, slices.Max(book.Sizes()), rowBytes, s.roundBytes)

	// Receive the cached rows, then lay out every resident row.
	p := newPlan(cache, book, s.part, func(int64, int, int64) (int64, bool) { return 0, false })
	recv := &sp.recv
	recv.reset(p.Remote())
	if err := s.exchangeSparse(p, localSource{local, sp.valued}, recv.put); err != nil {
		return nil, err
	}
	// src[r] is the source of resident row r: local row src[r] when ≥ 0,
	// received row ^src[r] otherwise.
	src := make([]int64, len(s.order))
	for lid, r := range s.local {
		src[r] = int64(lid)
	}
	for i, gid := range cache {
		r, _ := s.lookup(gid)
		src[r] = ^p.from[i]
	}
	sp.ptr = make([]int64, len(s.order)+1)
	for r, x := range src {
		n := recv.nAt(x)
		if x >= 0 {
			n = local.Degree(x)
		}
		sp.ptr[r+1] = sp.ptr[r] + n
	}
	nnz := sp.ptr[len(s.order)]
	sp.col = make([]int32, nnz)
	if sp.valued {
		sp.val = make([]float32, nnz)
	}
	for r, x := range src {
		lo := sp.ptr[r]
		if x >= 0 {
			a, b := local.Indptr[x], local.Indptr[x+1]
			for e := a; e < b; e++ {
				sp.col[lo+e-a] = int32(local.Indices[e])
				if sp.valued {
					sp.val[lo+e-a] = 1
					if local.Values != nil {
						sp.val[lo+e-a] = local.Values[e]
					}
				}
			}
			continue
		}
		recv.copyTo(^x, sp.col[lo:], sp.val, lo, sp.valued)
	}
	return s, nil
}

// put stores the received row of packed request k.
func (r *recvRows) put(k int, n int64, words []int32) {
	r.off[k], r.n[k] = len(r.words), n
	r.words = append(r.words, words...)
}

// nAt returns the entries of the received row ^x (x < 0), 0 for x ≥ 0.
func (r *recvRows) nAt(x int64) int64 {
	if x >= 0 {
		return 0
	}
	return r.n[^x]
}

// copyTo writes the columns of received row k to col and, when valued,
// its values to val[at:].
func (r *recvRows) copyTo(k int64, col []int32, val []float32, at int64, valued bool) {
	w := r.words[r.off[k]:]
	for e := range r.n[k] {
		if valued {
			col[e] = w[2*e]
			val[at+e] = math.Float32frombits(uint32(w[2*e+1]))
		} else {
			col[e] = w[e]
		}
	}
}

// exchangeSparse carries out the communication of p for a sparse store:
// the requests, then in each of the store's rounds the words each rank
// sends to each other (one AlltoallCounts) and the rows themselves (one
// Alltoallv of int32 words: per row its length and its pairs or columns).
// Each received row goes to put with its packed request index k and entry
// count n; words is valid only during the call. It is collective over the
// store's communicator.
func (s *Store) exchangeSparse(p *Plan, src rowSource, put func(k int, n int64, words []int32)) error {
	sp := s.sp
	serveCounts, want, err := requests(s.c, p, int64(len(s.local)))
	if err != nil {
		return err
	}
	w := int64(sp.wordsPer())
	rd := s.round
	q := len(p.counts)
	sc := make([]int, q)
	for j := range rd.count {
		lo := j * rd.rows
		send := 0
		for r, k0 := 0, 0; r < q; r++ {
			sc[r] = 0
			for t := range min(max(serveCounts[r]-lo, 0), rd.rows) {
				sc[r] += int(1 + w*src.rowLen(want[k0+lo+t]))
			}
			send += sc[r]
			k0 += serveCounts[r]
		}
		rc, err := collective.AlltoallCounts(s.c, sc)
		if err != nil {
			return fmt.Errorf("alltoall: exchanging sparse row sizes: %w", err)
		}
		recv := 0
		for _, n := range rc {
			recv += n
		}
		if cap(sp.wire) < send+recv {
			sp.wire = make([]int32, send+recv)
		}
		sbuf, rbuf := sp.wire[:send], sp.wire[send:send+recv]
		x := 0
		for r, k0 := 0, 0; r < q; r++ {
			for t := range min(max(serveCounts[r]-lo, 0), rd.rows) {
				x = src.pack(sbuf, x, want[k0+lo+t])
			}
			k0 += serveCounts[r]
		}
		if err := s.c.Alltoallv(collective.BufOf(sbuf), sc, collective.BufOf(rbuf), rc); err != nil {
			return fmt.Errorf("alltoall: exchanging sparse feature rows: %w", err)
		}
		x = 0
		for r, k0 := 0, 0; r < q; r++ {
			for t := range min(max(p.counts[r]-lo, 0), rd.rows) {
				n := int64(rbuf[x])
				put(k0+lo+t, n, rbuf[x+1:x+1+int(w*n)])
				x += int(1 + w*n)
			}
			k0 += p.counts[r]
		}
	}
	return nil
}

// rowSource is where an exchange of sparse rows reads the rows this rank
// serves, by local id: the store's resident rows, or the rows the store
// is built from while it fills its cache.
type rowSource interface {
	// rowLen returns the entries of the row of local id lid.
	rowLen(lid int64) int64
	// pack writes the row of local id lid in wire format at buf[x:] and
	// returns the position after it.
	pack(buf []int32, x int, lid int64) int
}

// residentSource serves a store's own rows from its resident table.
type residentSource struct{ s *Store }

func (r residentSource) rowLen(lid int64) int64 { return r.s.sp.rowLen(r.s.local[lid]) }

func (r residentSource) pack(buf []int32, x int, lid int64) int {
	return r.s.sp.pack(buf, x, r.s.local[lid])
}

// localSource serves the rows a sparse store is built from (row lid of
// the rank's part), with values when valued (1 for a pattern's entries).
type localSource struct {
	a      *sparse.Matrix[float32]
	valued bool
}

func (l localSource) rowLen(lid int64) int64 { return l.a.Degree(lid) }

func (l localSource) pack(buf []int32, x int, lid int64) int {
	lo, hi := l.a.Indptr[lid], l.a.Indptr[lid+1]
	buf[x] = int32(hi - lo)
	x++
	for e := lo; e < hi; e++ {
		buf[x] = int32(l.a.Indices[e])
		x++
		if l.valued {
			v := float32(1)
			if l.a.Values != nil {
				v = l.a.Values[e]
			}
			buf[x] = int32(math.Float32bits(v))
			x++
		}
	}
	return x
}

// pack writes resident row r in wire format at buf[x:] and returns the
// position after it.
func (sp *sparseStore) pack(buf []int32, x int, r int32) int {
	lo, hi := sp.ptr[r], sp.ptr[r+1]
	buf[x] = int32(hi - lo)
	x++
	if !sp.valued {
		return x + copy(buf[x:], sp.col[lo:hi])
	}
	for e := lo; e < hi; e++ {
		buf[x], buf[x+1] = sp.col[e], int32(math.Float32bits(sp.val[e]))
		x += 2
	}
	return x
}

// Sparse reports whether the store holds sparse rows (NewSparseStore).
func (s *Store) Sparse() bool { return s.sp != nil }

// FetchSparse returns the feature rows of ids, in order, as sparse rows
// (columns ascending; Values nil when the store is a pattern): own and
// cached rows from the resident table, the others from the ranks of the
// store's group that own them. It is FetchSparseTo with a fresh result.
//
// FetchSparse is collective over the store's communicator, like Fetch. It
// does not set a phase for byte accounting. Rank r sends
// 8(q−1)(1+k) + 8·R + Σ (4 + 4w·nnz) bytes, the sum over the rows it
// serves, with R the distinct remote rows it asks for, w = 2 (pairs) or 1
// (a pattern: columns only) and k the rounds (see Fetch; the rows per
// round are those of the store's longest row); it receives the same with
// the roles swapped. The bytes of the rows are counted by the collective
// layer as for every Alltoallv.
// It returns an error if the store is dense or communication fails.
// It will panic if an id is outside [0, n).
func (s *Store) FetchSparse(ids []int64) (*sparse.Matrix[float32], Counts, error) {
	return s.FetchSparseTo(nil, ids)
}

// FetchSparseTo is FetchSparse writing into dst's storage when it is large
// enough (dst may be nil): the result aliases dst's slices then, and dst
// itself is not modified.
func (s *Store) FetchSparseTo(dst *sparse.Matrix[float32], ids []int64) (*sparse.Matrix[float32], Counts, error) {
	sp := s.sp
	if sp == nil {
		return nil, Counts{}, errors.New("alltoall: FetchSparse of a store of dense rows (build it with NewSparseStore)")
	}
	p, cnt := s.plan(ids)
	recv := &sp.recv
	recv.reset(p.Remote())
	if err := s.exchangeSparse(p, residentSource{s}, recv.put); err != nil {
		return nil, cnt, err
	}
	out := &sparse.Matrix[float32]{NRows: int64(len(ids)), NCols: int64(s.cols)}
	if dst != nil {
		out.Indptr, out.Indices, out.Values = dst.Indptr[:0], dst.Indices[:0], dst.Values[:0]
	}
	out.Indptr = slices.Grow(out.Indptr, len(ids)+1)[:len(ids)+1]
	out.Indptr[0] = 0
	for i, f := range p.from {
		n := int64(0)
		if f < 0 {
			n = sp.rowLen(int32(^f))
		} else {
			n = recv.n[f]
		}
		out.Indptr[i+1] = out.Indptr[i] + n
	}
	nnz := int(out.Indptr[len(ids)])
	out.Indices = slices.Grow(out.Indices, nnz)[:nnz]
	var val []float32
	if sp.valued {
		out.Values = slices.Grow(out.Values, nnz)[:nnz]
		val = out.Values
	} else {
		out.Values = nil
	}
	col := make([]int32, 0, 64)
	for i, f := range p.from {
		lo := out.Indptr[i]
		if f < 0 {
			sp.copyRow(out, lo, int32(^f))
			continue
		}
		col = slices.Grow(col[:0], int(recv.n[f]))[:recv.n[f]]
		recv.copyTo(f, col, val, lo, sp.valued)
		dst := out.Indices[lo : lo+int64(len(col))]
		for e, j := range col {
			dst[e] = int64(j)
		}
	}
	return out, cnt, nil
}

// fetchDense is FetchTo for a sparse store: the sparse fetch, scattered
// into dense rows.
func (s *Store) fetchDense(dst *dense.Matrix, ids []int64) (*dense.Matrix, Counts, error) {
	m, cnt, err := s.FetchSparseTo(s.sp.scratch, ids)
	if err != nil {
		return nil, cnt, err
	}
	s.sp.scratch = m
	out := dense.Reuse(dst, len(ids), s.cols)
	clear(out.Data[:len(ids)*s.cols])
	for i := range len(ids) {
		row := out.Row(i)
		for e := m.Indptr[i]; e < m.Indptr[i+1]; e++ {
			row[m.Indices[e]] = 1
			if m.Values != nil {
				row[m.Indices[e]] = m.Values[e]
			}
		}
	}
	return out, cnt, nil
}
