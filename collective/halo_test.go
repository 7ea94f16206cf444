package collective_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// BlockOf finds the block holding an id, skipping empty blocks.
func TestBlockOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bounds []int64
		x      int64
		want   int
	}{
		{"one block", []int64{0, 5}, 3, 0},
		{"first row", []int64{0, 3, 7}, 0, 0},
		{"last row of a block", []int64{0, 3, 7}, 2, 0},
		{"first row of a block", []int64{0, 3, 7}, 3, 1},
		{"last row", []int64{0, 3, 7}, 6, 1},
		{"empty blocks skipped", []int64{0, 2, 2, 2, 5}, 2, 3},
		{"two empty blocks, first after", []int64{0, 2, 2, 5, 5, 6}, 2, 2},
		{"two empty blocks, second after", []int64{0, 2, 2, 5, 5, 6}, 5, 4},
		{"leading empty block", []int64{0, 0, 4}, 0, 1},
		{"offset start", []int64{10, 12, 20}, 12, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := collective.BlockOf(tc.bounds, tc.x)
			assert.Equal(t, tc.want, got, "got: %v want: %v", got, tc.want)
		})
	}
	for _, tc := range []struct {
		name   string
		bounds []int64
		x      int64
	}{
		{"below", []int64{1, 3}, 0},
		{"at the end", []int64{0, 3}, 3},
		{"no block", []int64{0}, 0},
	} {
		t.Run("panics/"+tc.name, func(t *testing.T) {
			assert.Panics(t, func() { collective.BlockOf(tc.bounds, tc.x) })
		})
	}
}

// Halo returns, for every id asked, the value its owner answers, in the
// order asked, with repeats and unsorted ids, over uneven and empty blocks.
func TestHalo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bounds []int64 // p+1 row bounds
		asks   int     // ids each rank asks
	}{
		{"p=1", []int64{0, 7}, 10},
		{"p=2 uneven", []int64{0, 2, 9}, 12},
		{"p=3 empty block", []int64{0, 4, 4, 11}, 15},
		{"p=4 nothing asked", []int64{0, 1, 5, 6, 13}, 0},
		{"p=4", []int64{0, 1, 5, 6, 13}, 20},
		{"p=9", []int64{0, 3, 3, 5, 9, 10, 14, 15, 20, 23}, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, n := len(tc.bounds)-1, tc.bounds[len(tc.bounds)-1]
			owner := func(x int64) int { return collective.BlockOf(tc.bounds, x) }
			// The value of id x, answered only by its owner: 1000·owner + x.
			value := func(x int64) float64 { return float64(1000*owner(x)) + float64(x) }
			err := inproc.Run(p, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
				me := c.Rank()
				r := rand.New(rand.NewPCG(1, uint64(me)))
				ids := make([]int64, tc.asks)
				for i := range ids {
					ids[i] = r.Int64N(n)
				}
				got, err := collective.Halo(c, ids, owner, func(x int64) (float64, bool) {
					if owner(x) != me {
						return 0, false
					}
					return value(x), true
				})
				if err != nil {
					return err
				}
				if len(got) != len(ids) {
					return fmt.Errorf("rank %d: got: %d values want: %d", me, len(got), len(ids))
				}
				for i, x := range ids {
					if got[i] != value(x) {
						return fmt.Errorf("rank %d: id %d: got: %v want: %v", me, x, got[i], value(x))
					}
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}

// Halo counts its bytes as documented: 8 bytes per other rank for the
// counts, 8 per id asked of another rank and sizeof(V) per value answered
// to one, in three Alltoallv calls (no second exchange of counts).
func TestHaloBytes(t *testing.T) {
	const p = 3
	// Rank r asks for all six ids; rank 0 holds 2 of them, rank 1 3,
	// rank 2 1, so rank r sends 16 bytes of counts, 8·(6−own) of ids and
	// 4·2·own of int32 values, 64 bytes on every rank, and receives 16 of
	// counts, 8·2·own of ids and 4·(6−own) of values.
	bounds := []int64{0, 2, 5, 6}
	stats := make([]*collective.Stats, p)
	err := inproc.Run(p, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
		s := collective.NewStats()
		stats[c.Rank()] = s
		_, err := collective.Halo(collective.WithStats(c, s), []int64{0, 1, 2, 3, 4, 5},
			func(x int64) int { return collective.BlockOf(bounds, x) },
			func(x int64) (int32, bool) { return int32(x), true })
		return err
	})
	require.NoError(t, err)
	recv := []int64{16 + 32 + 16, 16 + 48 + 12, 16 + 16 + 20}
	for r, s := range stats {
		got := s.Snapshot()[collective.DefaultPhase]["alltoallv"]
		assert.Equal(t, int64(3), got.Calls, "rank %d calls", r)
		assert.Equal(t, int64(64), got.SentBytes, "rank %d sent", r)
		assert.Equal(t, recv[r], got.RecvBytes, "rank %d received", r)
	}
}

// A rank asked for an id it does not hold fails instead of answering.
func TestHaloNotHeld(t *testing.T) {
	err := inproc.Run(2, inproc.Options{Timeout: 2 * time.Second}, func(c collective.Comm) error {
		_, err := collective.Halo(c, []int64{1}, func(int64) int { return 1 - c.Rank() },
			func(int64) (int64, bool) { return 0, false })
		return err
	})
	require.ErrorContains(t, err, "which it does not hold")
}
