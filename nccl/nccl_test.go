package nccl

import (
	"bytes"
	"errors"
	"testing"

	"gnnmpi/nccl/internal/nccldl"
)

// HostMemory copies in and out of interior addresses of its allocations and
// refuses addresses outside them.
func TestHostMemory(t *testing.T) {
	h := NewHostMemory()
	p, err := h.Alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.CopyHtoDAsync(p+4, []byte{1, 2, 3}, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if err := h.CopyDtoHAsync(got, p+3, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, []byte{0, 1, 2, 3, 0}) {
		t.Fatalf("got %v", got)
	}
	if err := h.CopyHtoDAsync(p+14, []byte{1, 2, 3}, 0); err == nil {
		t.Fatal("copy past the end accepted")
	}
	if err := h.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := h.Free(p); err == nil {
		t.Fatal("double free accepted")
	}
}

// 16-bit words widen to 32 bits and narrow back unchanged.
func TestWiden16(t *testing.T) {
	in := []byte{0x34, 0x12, 0xff, 0xff}
	w := widen16(in)
	if !bytes.Equal(w, []byte{0x34, 0x12, 0, 0, 0xff, 0xff, 0, 0}) {
		t.Fatalf("widened %x", w)
	}
	w[2] = 7 // a carry out of the low 16 bits is dropped, as in 16-bit sums
	out := make([]byte, 4)
	narrow32(out, w)
	if !bytes.Equal(out, in) {
		t.Fatalf("narrowed %x", out)
	}
}

// The real NCCL, where installed: its version and a unique id (neither
// needs a GPU). It skips when libnccl.so.2 is absent.
func TestRealNCCL(t *testing.T) {
	t.Setenv(LibDirEnv, "")
	lib, err := nccldl.Load()
	if errors.Is(err, ErrNoNCCL) {
		t.Skipf("no NCCL: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	v, err := lib.Version()
	if err != nil || v < 20000 {
		t.Fatalf("version %d: %v", v, err)
	}
	id, err := lib.GetUniqueID()
	if err != nil || id == (nccldl.UniqueID{}) {
		t.Fatalf("unique id %x: %v", id[:8], err)
	}
	t.Logf("%s: version %d", lib.Path, v)
}
