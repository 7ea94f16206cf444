package alltoall

import (
	"errors"
)

// ErrNotF16 is returned by ResidentF16 and FetchSlotsF16 for a store whose
// rows are not dense half precision (F32, or NewSparseStore): a device
// feature store of F16 rows reads them in place.
var ErrNotF16 = errors.New("alltoall: the rows are not dense " + string(F16))

// ResidentF16 returns the resident rows of an F16 store, hottest first
// (Resident's order), row-major with Cols() IEEE half-precision words
// each, as a view of the store's table: the caller must not modify it. Its
// first Tiers()[0].Rows rows are the device tier. It returns an error
// wrapping ErrNotF16 for an F32 or sparse store.
func (s *Store) ResidentF16() ([]uint16, error) {
	if err := s.needF16(); err != nil {
		return nil, err
	}
	return s.f16, nil
}

func (s *Store) needF16() error { return s.need(F16, ErrNotF16) }

// FetchSlotsF16 is FetchSlots for an F16 store: the slots are those of
// FetchSlots (r ≥ 0 a row of ResidentF16, ^k the k-th distinct remote
// row), and the remote rows arrive as they travel, in half precision,
// into the buffer remote(m) returns: at least m·Cols() words, row k at
// [k·Cols(), (k+1)·Cols()).
//
// FetchSlotsF16 is collective under the conditions of FetchSlots and
// moves the same bytes as Fetch on the same store. It returns an error
// wrapping ErrNotF16 for an F32 or sparse store (before communicating) or
// if communication fails. It will panic as FetchSlots does.
func (s *Store) FetchSlotsF16(slot []int32, ids []int64, remote func(m int) []uint16) (Counts, error) {
	return fetchSlots(s, "FetchSlotsF16", s.needF16, &s.wire16, s.serve16, slot, ids, remote)
}
