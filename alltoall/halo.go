package alltoall

import (
	"slices"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Halo holds the rows of vertices a Store does not hold (neither its own
// part nor its cache), fetched once by FetchHalo, so that any number of
// row lists among the resident and the halo vertices can then be gathered
// without communication (GatherTo, GatherSparseTo). Layer-wise inference
// uses it to fetch each remote input row once per layer however many
// chunks read it.
//
// A Halo belongs to the Store that fetched it; it is not safe for
// concurrent use.
type Halo struct {
	ids   []int64                 // the halo vertices, ascending and distinct
	dense *dense.Matrix           // their rows, from a store of dense rows
	csr   *sparse.Matrix[float32] // their rows, from a store of sparse rows
}

// Rows returns the number of rows h holds.
func (h *Halo) Rows() int { return len(h.ids) }

// resident returns the resident row of vertex gid and whether the store
// holds it (own part or cache).
func (s *Store) resident(gid int64) (int64, bool) {
	owner, lid := s.book.Locate(gid)
	if owner == s.part {
		return int64(s.local[lid]), true
	}
	return s.lookup(gid)
}

// FetchHalo fetches the rows of the distinct vertices among ids that the
// store does not hold, each once, and returns them as a Halo, reusing
// dst's storage when dst is not nil (the result is dst then). ids may
// repeat and need not be sorted; ids is not modified.
//
// FetchHalo is collective over the store's communicator, like Fetch, and
// makes the same calls: it is FetchTo (or FetchSparseTo on a store of
// sparse rows) of the halo vertices in ascending order, so rank r sends
// 8(q−1) + 8·R + w·F·S bytes and receives 8(q−1) + 8·S + w·F·R (dense
// rows; sparse ones as FetchSparse states), with R = h.Rows() the halo
// rows it asks for and S the rows it serves. It does not set a phase for
// byte accounting; Counts.Remote is R.
// It returns an error if communication fails.
// It will panic if an id is outside [0, n).
func (s *Store) FetchHalo(dst *Halo, ids []int64) (*Halo, Counts, error) {
	h := dst
	if h == nil {
		h = &Halo{}
	}
	n := s.book.NumNodes()
	h.ids = h.ids[:0]
	for _, g := range ids {
		if g < 0 || g >= n {
			panic("alltoall: id out of range")
		}
		if _, ok := s.resident(g); !ok {
			h.ids = append(h.ids, g)
		}
	}
	slices.Sort(h.ids)
	h.ids = slices.Compact(h.ids)
	var cnt Counts
	var err error
	if s.sp != nil {
		h.csr, cnt, err = s.FetchSparseTo(h.csr, h.ids)
	} else {
		h.dense, cnt, err = s.FetchTo(h.dense, h.ids)
	}
	if err != nil {
		return nil, cnt, err
	}
	return h, cnt, nil
}

// sources returns, for every id, where GatherTo reads its row: resident
// row r as ^r, or halo row k as k.
// It will panic if an id is neither resident nor in h.
func (s *Store) sources(h *Halo, ids []int64) []int64 {
	from := make([]int64, len(ids))
	for i, g := range ids {
		if r, ok := s.resident(g); ok {
			from[i] = ^r
			continue
		}
		k, ok := slices.BinarySearch(h.ids, g)
		if !ok {
			panic("alltoall: a vertex neither resident nor in the halo")
		}
		from[i] = int64(k)
	}
	return from
}

// GatherTo returns the feature rows of ids, in order, as float32, copied
// from the store's resident rows and from h, without communication: the
// rows Fetch would return for ids. It writes into dst's storage when it is
// large enough (dst may be nil); the result aliases dst then. On a store
// of sparse rows the rows are scattered into dense ones, as by Fetch.
// It will panic if h was fetched by another store or an id is neither
// resident nor in h.
func (s *Store) GatherTo(dst *dense.Matrix, h *Halo, ids []int64) *dense.Matrix {
	f := s.cols
	out := dense.Reuse(dst, len(ids), f)
	if s.sp != nil {
		m := s.GatherSparseTo(s.sp.scratch, h, ids)
		s.sp.scratch = m
		clear(out.Data[:len(ids)*f])
		for i := range len(ids) {
			row := out.Row(i)
			for e := m.Indptr[i]; e < m.Indptr[i+1]; e++ {
				row[m.Indices[e]] = 1
				if m.Values != nil {
					row[m.Indices[e]] = m.Values[e]
				}
			}
		}
		return out
	}
	if h.dense == nil && len(h.ids) > 0 {
		panic("alltoall: halo fetched by a store of sparse rows")
	}
	for i, src := range s.sources(h, ids) {
		if src < 0 {
			s.read(int(^src), out.Row(i))
		} else {
			copy(out.Row(i), h.dense.Row(int(src)))
		}
	}
	return out
}

// GatherSparseTo returns the feature rows of ids, in order, as sparse rows
// copied from the store's resident rows and from h, without communication:
// the rows FetchSparse would return for ids. It writes into dst's storage
// when it is large enough (dst may be nil): the result aliases dst's
// slices then, and dst itself is not modified.
// It will panic if the store holds dense rows, h was fetched by another
// store, or an id is neither resident nor in h.
func (s *Store) GatherSparseTo(dst *sparse.Matrix[float32], h *Halo, ids []int64) *sparse.Matrix[float32] {
	sp := s.sp
	if sp == nil {
		panic("alltoall: GatherSparseTo of a store of dense rows")
	}
	if h.csr == nil && len(h.ids) > 0 {
		panic("alltoall: halo fetched by a store of dense rows")
	}
	from := s.sources(h, ids)
	out := &sparse.Matrix[float32]{NRows: int64(len(ids)), NCols: int64(s.cols)}
	if dst != nil {
		out.Indptr, out.Indices, out.Values = dst.Indptr[:0], dst.Indices[:0], dst.Values[:0]
	}
	out.Indptr = slices.Grow(out.Indptr, len(ids)+1)[:len(ids)+1]
	out.Indptr[0] = 0
	for i, f := range from {
		var n int64
		if f < 0 {
			n = sp.rowLen(int32(^f))
		} else {
			n = h.csr.Indptr[f+1] - h.csr.Indptr[f]
		}
		out.Indptr[i+1] = out.Indptr[i] + n
	}
	nnz := int(out.Indptr[len(ids)])
	out.Indices = slices.Grow(out.Indices, nnz)[:nnz]
	if sp.valued {
		out.Values = slices.Grow(out.Values, nnz)[:nnz]
	} else {
		out.Values = nil
	}
	for i, f := range from {
		lo := out.Indptr[i]
		if f < 0 {
			sp.copyRow(out, lo, int32(^f))
			continue
		}
		a, b := h.csr.Indptr[f], h.csr.Indptr[f+1]
		copy(out.Indices[lo:], h.csr.Indices[a:b])
		if sp.valued {
			copy(out.Values[lo:], h.csr.Values[a:b])
		}
	}
	return out
}

// ReadResident copies the row of vertex gid into dst (Cols() values, as
// float32) when the store holds it, in its own part or its cache, and
// reports whether it does; dst is not written otherwise. It communicates
// nothing, and concurrent calls are safe while nothing fetches into the
// store.
// It will panic on a store of sparse rows, if gid is outside [0, n) or
// if len(dst) < Cols().
func (s *Store) ReadResident(gid int64, dst []float32) bool {
	if s.sp != nil {
		panic("alltoall: ReadResident of a store of sparse rows")
	}
	if gid < 0 || gid >= s.book.NumNodes() {
		panic("alltoall: id out of range")
	}
	r, ok := s.resident(gid)
	if ok {
		s.read(int(r), dst[:s.cols])
	}
	return ok
}
