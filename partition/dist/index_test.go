package dist

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSortedIndex requires find to agree with a binary search over the
// whole ids for every value near them, on empty, single, dense, sparse
// and clustered id sets.
func TestSortedIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sets := map[string][]int64{"empty": nil, "one": {7}, "dense": {}, "sparse": {}, "clustered": {}}
	for v := int64(100); v < 400; v++ {
		sets["dense"] = append(sets["dense"], v)
	}
	for range 500 {
		sets["sparse"] = append(sets["sparse"], rng.Int64N(1_000_000_000))
		sets["clustered"] = append(sets["clustered"], rng.Int64N(50), 1<<40+rng.Int64N(50))
	}
	for name, ids := range sets {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		s := newSortedIndex(ids)
		probe := []int64{-1, 0, 1 << 62}
		for _, v := range ids {
			probe = append(probe, v-1, v, v+1)
		}
		for _, j := range probe {
			want, wok := slices.BinarySearch(ids, j)
			got, ok := s.find(j)
			if assert.Equal(t, wok, ok, "%s: %d", name, j) && ok {
				assert.Equal(t, want, got, "%s: %d", name, j)
			}
		}
	}
}
