package rng

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSameSeedSameStream(t *testing.T) {
	a, b := New(7, 1, 2), New(7, 1, 2)
	for i := 0; i < 100; i++ {
		require.Equal(t, a.Uint64(), b.Uint64())
	}
}

func TestStreamsDiffer(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []uint64
	}{
		{"rank", []uint64{1, 0}, []uint64{1, 1}},
		{"order", []uint64{1, 2}, []uint64{2, 1}},
		{"length", []uint64{1}, []uint64{1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NotEqual(t, Mix(tc.x...), Mix(tc.y...))
			require.NotEqual(t, New(3, tc.x...).Uint64(), New(3, tc.y...).Uint64())
		})
	}
}

// PCG draws rand.PCG's numbers, for seeds with high bits, zero and all ones.
func TestPCGMatchesRandPCG(t *testing.T) {
	for _, seed := range [][2]uint64{{0, 0}, {1, 2}, {^uint64(0), ^uint64(0)}, {0x9e3779b97f4a7c15, Mix(3, 4)}} {
		ref := rand.NewPCG(seed[0], seed[1])
		p := PCG{seed[0], seed[1]}
		for i := range 1000 {
			var x uint64
			p, x = p.Next()
			require.Equal(t, ref.Uint64(), x, "seed %v draw %d", seed, i)
		}
	}
}

// Fill draws Next's numbers and leaves the same state, for lengths below,
// at and around the four side-by-side states' blocks.
func TestPCGFill(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 7, 8, 9, 12, 31, 32, 33, 100} {
		start := PCG{0x9e3779b97f4a7c15, Mix(uint64(n))}
		want := make([]uint64, n)
		p := start
		for i := range want {
			p, want[i] = p.Next()
		}
		got := make([]uint64, n)
		q := start.Fill(got)
		require.Equal(t, want, got, "n %d", n)
		require.Equal(t, p, q, "n %d: state after", n)
	}
}
