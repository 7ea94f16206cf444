package rng

import (
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
