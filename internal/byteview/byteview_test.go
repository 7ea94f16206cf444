package byteview

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Of's bytes are the values in the host's byte order, and share s's
// memory.
func TestOf(t *testing.T) {
	s := []float32{1.5, -2, float32(math.Inf(1))}
	b := Of(s)
	require.Len(t, b, 12)
	for i, v := range s {
		require.Equal(t, math.Float32bits(v), binary.NativeEndian.Uint32(b[4*i:]))
	}
	b[0] ^= 1
	require.NotEqual(t, float32(1.5), s[0], "a view, not a copy")
	require.Nil(t, Of([]int64{}))
	require.Len(t, Of([]uint16{1, 2, 3}), 6)
	require.Equal(t, binary.NativeEndian.Uint16([]byte{1, 0}) == 1, LittleEndian)
}
