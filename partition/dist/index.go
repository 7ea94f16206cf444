package dist

import (
	"math/bits"
	"slices"
)

// sortedIndex finds values in sorted distinct ids, such as the halo
// columns fetch returns, faster than a binary search over all of them:
// the values' range is cut into buckets of 2^shift ids holding about four
// values each, and a lookup searches its bucket alone. It takes about 2
// bytes for each value.
type sortedIndex struct {
	ids   []int64
	base  int64
	shift uint
	start []int // start[b] is the position of bucket b's first value
}

// newSortedIndex returns an index of ids, which must be sorted and
// distinct.
func newSortedIndex(ids []int64) sortedIndex {
	if len(ids) == 0 {
		return sortedIndex{}
	}
	base, span := ids[0], uint64(ids[len(ids)-1]-ids[0])+1
	buckets := uint64(max(1, len(ids)/4))
	shift := uint(0)
	if span > buckets {
		shift = uint(bits.Len64((span - 1) / buckets))
	}
	s := sortedIndex{ids: ids, base: base, shift: shift, start: make([]int, (span-1)>>shift+2)}
	for _, v := range ids {
		s.start[uint64(v-base)>>shift+1]++
	}
	for b := 1; b < len(s.start); b++ {
		s.start[b] += s.start[b-1]
	}
	return s
}

// find returns the position of j in the ids and whether it is there.
func (s *sortedIndex) find(j int64) (int, bool) {
	if len(s.ids) == 0 || j < s.base {
		return 0, false
	}
	b := uint64(j-s.base) >> s.shift
	if b >= uint64(len(s.start)-1) {
		return 0, false
	}
	lo, hi := s.start[b], s.start[b+1]
	k, ok := slices.BinarySearch(s.ids[lo:hi], j)
	return lo + k, ok
}
