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
	const n, f = 200, 5
	x := globalFeatures(n, f)
	for _, q := range []int{1, 3} {
		book := unevenBook(t, rand.New(rand.NewPCG(uint64(q), 5)), n, q, false)
		storeRun(t, q, 1, book, x, func(rank int) StoreOptions {
			return StoreOptions{Score: vecOf(scores(CacheVIP, n, rank)), CacheRows: 10, GPUFrac: 0.5}
		}, func(rank int, _ collective.Comm, s *Store) error {
			res, err := s.ResidentF32()
			if err != nil {
				return err
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
				var remote []float32
				cnt, err := s.FetchSlots(slot, ids, func(m int) []float32 {
					remote = make([]float32, m*f)
					return remote
				})
				if err != nil {
					return err
				}
				if cnt != wantCnt || int64(len(remote)) != int64(f)*cnt.Remote {
					return fmt.Errorf("counts %+v (remote buffer %d floats), want %+v", cnt, len(remote), wantCnt)
				}
				for i, sl := range slot {
					src := res
					if sl < 0 {
						src, sl = remote, ^sl
					}
					for j := range f {
						if math.Float32bits(src[int(sl)*f+j]) != math.Float32bits(want.Row(i)[j]) {
							return fmt.Errorf("position %d (vertex %d, slot %d): got %v want %v", i, ids[i], slot[i], src[int(sl)*f:int(sl+1)*f], want.Row(i))
						}
					}
				}
			}
			return nil
		})
	}
	storeRun(t, 2, 1, unevenBook(t, rand.New(rand.NewPCG(2, 5)), n, 2, false), x, func(int) StoreOptions {
		return StoreOptions{DType: F16}
	}, func(_ int, _ collective.Comm, s *Store) error {
		if _, err := s.ResidentF32(); !errors.Is(err, ErrNotF32) {
			return fmt.Errorf("ResidentF32 of f16: %v", err)
		}
		if _, err := s.FetchSlots(nil, nil, nil); !errors.Is(err, ErrNotF32) {
			return fmt.Errorf("FetchSlots of f16: %v", err)
		}
		return nil
	})
}
