package train

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEvenSplit(t *testing.T) {
	for _, tc := range []struct{ n, k int }{{10, 3}, {0, 4}, {3, 5}, {140, 4}, {7, 1}} {
		s := evenSplit(tc.n, tc.k)
		require.Len(t, s, tc.k)
		sum := 0
		for _, v := range s {
			sum += v
			require.LessOrEqual(t, s[0]-v, 1)
		}
		require.Equal(t, tc.n, sum)
	}
}

// Every training vertex is a seed exactly once per epoch over all ranks,
// every rank takes the same number of minibatches, and their sizes add up
// to the step's global batch size.
func TestScheduleCoversEveryVertexOnce(t *testing.T) {
	all := make([]int64, 103)
	for i := range all {
		all[i] = int64(3 * i)
	}
	owner := func(g int64) int { return int(g*7%11) % 4 } // uneven ownership
	const p, batch = 4, 8
	for _, mode := range []Shuffle{ShuffleLocal, ShuffleGlobal} {
		t.Run(string(mode), func(t *testing.T) {
			owned := make([][]int64, p)
			for _, g := range all {
				owned[owner(g)] = append(owned[owner(g)], g)
			}
			counts := make([]int, p)
			for r := range p {
				counts[r] = len(owned[r])
			}
			for epoch := 1; epoch <= 3; epoch++ {
				var seen []int64
				var nb int
				steps := make([]int, 0)
				for r := range p {
					s := newSchedule(mode, owned[r], all, counts, r, batch, 0)
					bs := s.batches(7, epoch, r)
					if r == 0 {
						nb = len(bs)
						steps = make([]int, nb)
					}
					require.Len(t, bs, nb, "rank %d", r)
					for i, b := range bs {
						require.LessOrEqual(t, len(b), batch)
						require.True(t, slices.IsSorted(b))
						steps[i] += len(b)
						seen = append(seen, b...)
						if mode == ShuffleLocal {
							for _, g := range b {
								require.Equal(t, r, owner(g), "local mode draws owned vertices only")
							}
						}
					}
					if r == p-1 {
						require.Equal(t, s.sizes, steps)
					}
				}
				slices.Sort(seen)
				require.Equal(t, all, seen)
			}
		})
	}
}

func TestScheduleShuffleIsSeededAndChangesPerEpoch(t *testing.T) {
	all := make([]int64, 64)
	for i := range all {
		all[i] = int64(i)
	}
	s := newSchedule(ShuffleLocal, all, all, []int{64}, 0, 8, 0)
	require.Equal(t, s.batches(1, 1, 0), s.batches(1, 1, 0))
	require.NotEqual(t, s.batches(1, 1, 0), s.batches(1, 2, 0))
	require.NotEqual(t, s.batches(1, 1, 0), s.batches(2, 1, 0))
}
