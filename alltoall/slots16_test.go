package alltoall

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gnnmpi/collective"
	"gnnmpi/internal/f16"
)

// FetchSlotsF16 names the same rows as Fetch on an F16 store, with the
// resident and received rows in half precision: decoded, they are Fetch's
// matrix bit for bit, with the same counts. An F32 store is refused
// before communicating.
func TestFetchSlotsF16(t *testing.T) {
	const n, f = 200, 7
	x := globalFeatures(n, f)
	for _, q := range []int{1, 3} {
		book := unevenBook(t, rand.New(rand.NewPCG(uint64(q), 5)), n, q, false)
		storeRun(t, q, 1, book, x, func(rank int) StoreOptions {
			return StoreOptions{DType: F16, Score: vecOf(scores(CacheVIP, n, rank)), CacheRows: 10, GPUFrac: 0.5}
		}, func(rank int, _ collective.Comm, s *Store) error {
			res, err := s.ResidentF16()
			if err != nil {
				return err
			}
			if len(res) != (s.OwnRows()+s.CachedRows())*f {
				return fmt.Errorf("ResidentF16 holds %d halves, want %d rows of %d", len(res), s.OwnRows()+s.CachedRows(), f)
			}
			r := rand.New(rand.NewPCG(uint64(rank), 3))
			for _, size := range []int{0, 50, 120} {
				ids := make([]int64, size)
				for i := range ids {
					ids[i] = r.Int64N(n)
				}
				want, wantCnt, err := s.Fetch(ids)
				if err != nil {
					return err
				}
				slot := make([]int32, size)
				var remote []uint16
				cnt, err := s.FetchSlotsF16(slot, ids, func(m int) []uint16 {
					remote = make([]uint16, m*f)
					return remote
				})
				if err != nil {
					return err
				}
				if cnt != wantCnt || int64(len(remote)) != int64(f)*cnt.Remote {
					return fmt.Errorf("counts %+v (remote buffer %d halves), want %+v", cnt, len(remote), wantCnt)
				}
				for i, sl := range slot {
					src := res
					if sl < 0 {
						src, sl = remote, ^sl
					}
					for j := range f {
						if got := f16.ToFloat32(src[int(sl)*f+j]); math.Float32bits(got) != math.Float32bits(want.Row(i)[j]) {
							return fmt.Errorf("position %d (vertex %d, slot %d) column %d: got %v want %v", i, ids[i], slot[i], j, got, want.Row(i)[j])
						}
					}
				}
			}
			return nil
		})
	}
	storeRun(t, 2, 1, unevenBook(t, rand.New(rand.NewPCG(2, 5)), n, 2, false), x, func(int) StoreOptions {
		return StoreOptions{}
	}, func(_ int, _ collective.Comm, s *Store) error {
		if _, err := s.ResidentF16(); !errors.Is(err, ErrNotF16) {
			return fmt.Errorf("ResidentF16 of f32: %v", err)
		}
		if _, err := s.FetchSlotsF16(nil, nil, nil); !errors.Is(err, ErrNotF16) {
			return fmt.Errorf("FetchSlotsF16 of f32: %v", err)
		}
		return nil
	})
}
