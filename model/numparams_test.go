package model

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/rng"
)

// TestConfigNumParams checks the count computed from a Config against the
// weights New allocates for it.
func TestConfigNumParams(t *testing.T) {
	for _, c := range []Config{
		{Kind: KindSAGE, In: 7, Hidden: 5, Out: 3, Layers: 2},
		{Kind: KindSAGE, In: 7, Out: 3, Layers: 1},
		{Kind: KindGCN, In: 9, Hidden: 4, Out: 2, Layers: 3},
		{Kind: KindGAT, In: 6, Hidden: 3, Out: 4, Layers: 2, Heads: 5, OutHeads: 2},
		{Kind: KindGAT, In: 6, Hidden: 3, Out: 4, Layers: 3},
	} {
		m, err := New(c, rng.New(1, 0), nil)
		require.NoError(t, err, "%+v", c)
		n, err := c.NumParams()
		require.NoError(t, err, "%+v", c)
		require.Equal(t, int64(m.NumParams()), n, "%+v", c)
	}
}

// TestConfigNumParamsLarge checks that a model too large to allocate is
// counted, saturating at math.MaxInt64, and that an invalid Config is an
// error.
func TestConfigNumParamsLarge(t *testing.T) {
	n, err := Config{Kind: KindSAGE, In: 8415, Hidden: 100_000_000, Out: 5, Layers: 2}.NumParams()
	require.NoError(t, err)
	require.Equal(t, int64(2*8415*100_000_000+100_000_000+2*100_000_000*5+5), n)
	n, err = Config{Kind: KindGAT, In: 1 << 40, Hidden: 1 << 40, Out: 5, Layers: 3, Heads: 1 << 30}.NumParams()
	require.NoError(t, err)
	require.Equal(t, int64(math.MaxInt64), n)
	_, err = Config{Kind: KindSAGE, In: 8, Out: 2, Layers: 0}.NumParams()
	require.ErrorIs(t, err, ErrConfig)
}

// TestDeepConfigNumParams checks the count of a deep model against the
// Linears and Convs a full-graph trainer builds from it.
func TestDeepConfigNumParams(t *testing.T) {
	for _, kind := range DeepKinds {
		c := DefaultDeep(kind)
		c.In, c.Hidden, c.Out, c.Layers = 11, 6, 3, 4
		want := 0
		for _, p := range NewLinear(c.In, c.Hidden, rng.New(1, 0), nil).Params() {
			want += len(p.W)
		}
		for l := 1; l <= c.Layers; l++ {
			for _, p := range NewConv(c, l, rng.New(1, uint64(l)), nil).Params() {
				want += len(p.W)
			}
		}
		for _, p := range NewLinear(c.Hidden, c.Out, rng.New(1, 9), nil).Params() {
			want += len(p.W)
		}
		n, err := c.NumParams()
		require.NoError(t, err, kind)
		require.Equal(t, int64(want), n, kind)
	}
	c := DefaultDeep(ConvGCNII)
	c.In, c.Hidden, c.Out = 500, 100_000_000, 3
	n, err := c.NumParams()
	require.NoError(t, err)
	require.Equal(t, int64(500*100_000_000+100_000_000+100_000_000*3+3+32*100_000_000*100_000_000), n)
}
