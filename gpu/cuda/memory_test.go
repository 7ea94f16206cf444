package cuda

import (
	"bytes"
	"testing"
)

// Memory allocates, copies both ways, waits for the default stream and
// frees; an empty allocation still gets an address.
func TestMemory(t *testing.T) {
	m := Memory{Ctx: open(t)}
	if m.Stream() != 0 {
		t.Fatalf("Stream() = %#x, want the default stream", m.Stream())
	}
	src := []byte("zero-copy tiers, one adapter")
	p, err := m.Alloc(len(src))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CopyHtoD(p, src); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if err := m.CopyDtoH(got, p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("round trip got: %q want: %q", got, src)
	}
	if err := m.Free(p); err != nil {
		t.Fatal(err)
	}
	q, err := m.Alloc(0)
	if err != nil || q == 0 {
		t.Fatalf("Alloc(0) = %#x, %v; want an address", q, err)
	}
	if err := m.Free(q); err != nil {
		t.Fatal(err)
	}
}
