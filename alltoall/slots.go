package alltoall

import (
	"errors"
	"fmt"
)

// ErrNotF32 is returned by ResidentF32 and FetchSlots for a store whose
// rows are not dense float32 (F16, or NewSparseStore): a device feature
// store reads float32 rows in place.
var ErrNotF32 = errors.New("alltoall: the rows are not dense float32")

// ResidentF32 returns the resident rows, hottest first (Resident's order),
// row-major with Cols() floats each, as a view of the store's table: the
// caller must not modify it. Its first Tiers()[0].Rows rows are the device
// tier. It returns an error wrapping ErrNotF32 for an F16 or sparse store.
func (s *Store) ResidentF32() ([]float32, error) {
	if err := s.needF32(); err != nil {
		return nil, err
	}
	return s.f32, nil
}

func (s *Store) needF32() error { return s.need(F32, ErrNotF32) }

// need returns nil when the store holds dense rows of dtype, else an
// error wrapping notErr that says what it holds.
func (s *Store) need(dtype DType, notErr error) error {
	switch {
	case s.sp != nil:
		return fmt.Errorf("%w: the store holds sparse rows", notErr)
	case s.half != (dtype == F16):
		held := F32
		if s.half {
			held = F16
		}
		return fmt.Errorf("%w: the store holds %s rows", notErr, held)
	}
	return nil
}

// FetchSlots is Fetch without the gather, for a caller that gathers the
// rows elsewhere (gnnmpi/gpu/tier, on the device). For each position i of
// ids it sets slot[i] to the row's resident row r ≥ 0 (own or cached; a
// row of ResidentF32) or to ^k, row k of the distinct remote rows, which
// it receives from their owners into the buffer remote(m) returns: at
// least m·Cols() floats, row k at [k·Cols(), (k+1)·Cols()). remote is
// called once, before any row arrives, also with m = 0.
//
// FetchSlots is collective over the store's communicator under the
// conditions of Fetch (ranks may mix Fetch and FetchSlots call by call),
// and moves the same bytes. It returns an error wrapping ErrNotF32 for an
// F16 or sparse store (before communicating: every rank's store has the
// same kind) or if communication fails. It will panic if len(slot) !=
// len(ids), if an id is outside [0, n), or if remote returns a short
// buffer.
func (s *Store) FetchSlots(slot []int32, ids []int64, remote func(m int) []float32) (Counts, error) {
	return fetchSlots(s, "FetchSlots", s.needF32, &s.wire32, s.serve32, slot, ids, remote)
}

// fetchSlots is FetchSlots and FetchSlotsF16 (name, in panics) over rows
// of W: need checks that the store holds them, and wire and serve are
// exchangeRows's staging buffer and server for them.
func fetchSlots[W float32 | uint16](s *Store, name string, need func() error, wire *[]W, serve func(lid int64, row []W),
	slot []int32, ids []int64, remote func(m int) []W) (Counts, error) {
	if len(slot) != len(ids) {
		panic("alltoall: " + name + " with len(slot) != len(ids)")
	}
	if err := need(); err != nil {
		return Counts{}, err
	}
	p, cnt := s.plan(ids)
	for i, src := range p.from {
		if src < 0 {
			slot[i] = int32(^src)
		} else {
			slot[i] = ^int32(src)
		}
	}
	f := s.cols
	buf := remote(p.Remote())
	if len(buf) < p.Remote()*f {
		panic("alltoall: " + name + " remote buffer too short")
	}
	err := exchangeRows(s.c, p, f, int64(len(s.local)), s.round, wire, serve, func(k int, row []W) {
		copy(buf[k*f:(k+1)*f], row)
	})
	return cnt, err
}
