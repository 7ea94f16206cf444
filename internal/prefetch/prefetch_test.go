package prefetch

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// Lines reads nothing back and writes nothing: the bytes around and under
// the prefetched ranges are unchanged, for ranges shorter than a line,
// unaligned and ending at the last byte of their buffer.
func TestLinesChangesNothing(t *testing.T) {
	if !Enabled {
		assert.Panics(t, func() { Lines(nil, 1) })
		return
	}
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := append([]byte(nil), buf...)
	for _, r := range []struct{ off, n int }{{0, 1}, {0, 64}, {3, 61}, {5, 1000}, {4000, 96}, {0, 4096}} {
		Lines(unsafe.Pointer(&buf[r.off]), r.n)
		assert.Equal(t, want, buf, "offset %d, %d bytes", r.off, r.n)
	}
}
