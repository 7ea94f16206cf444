package sampling

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every sampler kind and layout parses from its name; an unknown name is
// an error listing the names, and Set leaves the value alone then.
func TestKindAndLayoutParse(t *testing.T) {
	for _, k := range Kinds {
		var got Kind
		require.NoError(t, got.Set(k.String()))
		require.Equal(t, k, got)
	}
	for _, l := range Layouts {
		var got Layout
		require.NoError(t, got.Set(l.String()))
		require.Equal(t, l, got)
	}
	k := KindSAGE
	require.EqualError(t, k.Set("fastgcn"), `sampling: unknown sampler "fastgcn" (want sage, ladies or plain)`)
	_, err := ParseLayout("3d")
	require.EqualError(t, err, `sampling: unknown topology "3d" (want replicated, 1.5d or 2d)`)
}
