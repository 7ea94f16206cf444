package alltoall

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gnnmpi/collective"
)

// FetchSlots names, per position, the resident row or the received remote
// row that Fetch would copy: both give the same matrix, the same counts and
// (remote rows once each) a remote buffer of the distinct misses. An F16
// store is refused before communicating.
func TestFetchSlots(t *testing.T) {
	checkFetchSlots(t, 5, F32, F16, ErrNotF32, (*Store).ResidentF32, (*Store).FetchSlots, func(v float32) float32 { return v })
}

// checkFetchSlots checks FetchSlots (rows of float32) or FetchSlotsF16
// (rows of half-precision words) on stores of dtype and width f, at 1 and 3
// ranks: resident and fetch are the store's methods for W, and toF32
// decodes a value, which must equal Fetch's bit for bit. A store of the
// other dtype is refused with an error wrapping notErr.
func checkFetchSlots[W float32 | uint16](t *testing.T, f int, dtype, other DType, notErr error,
	resident func(*Store) ([]W, error), fetch func(*Store, []int32, []int64, func(int) []W) (Counts, error), toF32 func(W) float32) {
	t.Helper()
	const n = 200
	x := globalFeatures(n, f)
	for _, q := range []int{1, 3} {
		book := unevenBook(t, rand.New(rand.NewPCG(uint64(q), 5)), n, q, false)
		storeRun(t, q, 1, book, x, func(rank int) StoreOptions {
			return StoreOptions{DType: dtype, Score: vecOf(scores(CacheVIP, n, rank)), CacheRows: 10, GPUFrac: 0.5}
		}, func(rank int, _ collective.Comm, s *Store) error {
			res, err := resident(s)
			if err != nil {
				return err
			}
			if len(res) != (s.OwnRows()+s.CachedRows())*f {
				return fmt.Errorf("the resident rows hold %d values, want %d rows of %d", len(res), s.OwnRows()+s.CachedRows(), f)
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
				var remote []W
				cnt, err := fetch(s, slot, ids, func(m int) []W {
					remote = make([]W, m*f)
					return remote
				})
				if err != nil {
					return err
				}
				if cnt != wantCnt || int64(len(remote)) != int64(f)*cnt.Remote {
					return fmt.Errorf("counts %+v (remote buffer %d values), want %+v", cnt, len(remote), wantCnt)
				}
				for i, sl := range slot {
					src := res
					if sl < 0 {
						src, sl = remote, ^sl
					}
					for j := range f {
						if got := toF32(src[int(sl)*f+j]); math.Float32bits(got) != math.Float32bits(want.Row(i)[j]) {
							return fmt.Errorf("position %d (vertex %d, slot %d) column %d: got %v want %v", i, ids[i], slot[i], j, got, want.Row(i)[j])
						}
					}
				}
			}
			return nil
		})
	}
	storeRun(t, 2, 1, unevenBook(t, rand.New(rand.NewPCG(2, 5)), n, 2, false), x, func(int) StoreOptions {
		return StoreOptions{DType: other}
	}, func(_ int, _ collective.Comm, s *Store) error {
		if _, err := resident(s); !errors.Is(err, notErr) {
			return fmt.Errorf("resident rows of %s: %v", other, err)
		}
		if _, err := fetch(s, nil, nil, nil); !errors.Is(err, notErr) {
			return fmt.Errorf("fetching slots of %s: %v", other, err)
		}
		return nil
	})
}
