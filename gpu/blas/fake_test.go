package blas

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"gnnmpi/gpu/gputest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	gputest.Remove()
	os.Exit(code)
}

// useFakes points $GNNMPI_CUDA_LIBDIR at the fake libraries for the rest
// of the test and returns their directory, skipping it without gcc or
// OpenBLAS.
func useFakes(t *testing.T) string { return gputest.Use(t) }

// dev returns the address of s as a "device pointer" for the fakes,
// pinned until the test ends (0 for an empty s).
func dev[T any](t *testing.T, s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	var p runtime.Pinner
	p.Pin(&s[0])
	t.Cleanup(p.Unpin)
	return uintptr(unsafe.Pointer(&s[0]))
}

// canary follows every block hostAlloc hands out; a write past the
// requested size overwrites it.
const canary = "gnnmpi-canary-16"

// hostAlloc is an Allocator over pinned Go memory that checks that every
// block is freed once and was not overrun.
type hostAlloc struct {
	t      *testing.T
	blocks map[uintptr]hostBlock
	allocs int
}

type hostBlock struct {
	buf  []byte // size bytes, then the canary
	size int
	pin  *runtime.Pinner
}

func newHostAlloc(t *testing.T) *hostAlloc {
	return &hostAlloc{t: t, blocks: map[uintptr]hostBlock{}}
}

func (a *hostAlloc) Alloc(bytes int) (uintptr, error) {
	if bytes <= 0 {
		a.t.Errorf("Alloc(%d): want a positive size", bytes)
	}
	buf := make([]byte, bytes+len(canary))
	copy(buf[bytes:], canary)
	pin := new(runtime.Pinner)
	pin.Pin(&buf[0])
	p := uintptr(unsafe.Pointer(&buf[0]))
	a.blocks[p] = hostBlock{buf, bytes, pin}
	a.allocs++
	return p, nil
}

func (a *hostAlloc) Free(p uintptr) error {
	b, ok := a.blocks[p]
	if !ok {
		a.t.Errorf("Free(%#x): not allocated or freed twice", p)
		return fmt.Errorf("Free(%#x): not allocated", p)
	}
	if got := string(b.buf[b.size:]); got != canary {
		a.t.Errorf("block of %d bytes overrun: canary %q", b.size, got)
	}
	b.pin.Unpin()
	delete(a.blocks, p)
	return nil
}

// checkFreed fails the test if a block was not freed.
func (a *hostAlloc) checkFreed() {
	if len(a.blocks) != 0 {
		a.t.Errorf("%d workspace blocks not freed", len(a.blocks))
	}
}
