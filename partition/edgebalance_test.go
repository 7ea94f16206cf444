package partition

import (
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

func TestEdgeBalance(t *testing.T) {
	// A star on 4 vertices stored both ways: vertex 0 has degree 3, the
	// others 1, so the 6 edges split 3+1 | 1+1 over blocks {0,1} and {2,3}.
	star, err := sparse.FromCOO(4, 4, []int64{0, 0, 0, 1, 2, 3}, []int64{1, 2, 3, 0, 0, 0}, nil)
	require.NoError(t, err)
	empty, err := sparse.FromCOO(4, 4, nil, nil, nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		adj  *sparse.CSR
		want float64
	}{
		{"star", star, 4.0 / 3}, // heaviest part 4 edges, mean 3
		{"empty", empty, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.InDelta(t, tc.want, Block(4, 2).EdgeBalance(tc.adj), 1e-12)
		})
	}
}

func TestMask(t *testing.T) {
	require.Equal(t, []bool{false, true, false, true}, Mask(4, []int64{3, 1}))
	require.Panics(t, func() { Mask(2, []int64{2}) })
}
