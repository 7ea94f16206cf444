package partition

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every method parses from its name; an unknown name is an error listing
// them. Block and Random record their methods' names.
func TestMethodParse(t *testing.T) {
	for _, m := range Methods {
		var got Method
		require.NoError(t, got.Set(m.String()))
		require.Equal(t, m, got)
	}
	_, err := ParseMethod("kahip")
	require.EqualError(t, err, `partition: unknown method "kahip" (want block, random, metis or ptscotch)`)
	require.Equal(t, string(MethodBlock), Block(10, 2).Method)
	require.Equal(t, string(MethodRandom), Random(10, 2, 1).Method)
}
