package cuda

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"gnnmpi/gpu/internal/cudadl"
)

// Memory allocates, copies both ways through page-locked memory on a
// non-blocking stream and synchronously on the default stream (0), waits
// and frees; an empty allocation still gets an address.
func TestMemory(t *testing.T) {
	m := Memory{Ctx: open(t)}
	s, err := m.NewStream()
	if err != nil || s == 0 {
		t.Fatalf("NewStream() = %#x, %v; want a stream", s, err)
	}
	for _, stream := range []uintptr{s, 0} {
		src, err := m.AllocHost(28)
		if err != nil {
			t.Fatal(err)
		}
		copy(src, "zero-copy tiers, one adapter")
		p, err := m.Alloc(len(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.CopyHtoDAsync(p, src, stream); err != nil {
			t.Fatal(err)
		}
		got, err := m.AllocHost(len(src))
		if err != nil {
			t.Fatal(err)
		}
		if err := m.CopyDtoHAsync(got, p, stream); err != nil {
			t.Fatal(err)
		}
		if err := m.Wait(stream, time.Minute); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("stream %#x: round trip got: %q want: %q", stream, got, src)
		}
		if err := errors.Join(m.Free(p), m.FreeHost(src), m.FreeHost(got)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.DestroyStream(s); err != nil {
		t.Fatal(err)
	}
	q, err := m.Alloc(0)
	if err != nil || q == 0 {
		t.Fatalf("Alloc(0) = %#x, %v; want an address", q, err)
	}
	if err := m.Free(q); err != nil {
		t.Fatal(err)
	}
	id, err := m.DeviceID()
	if err != nil || id == "" {
		t.Fatalf("DeviceID() = %q, %v", id, err)
	}
}

// A context is current only inside Do: afterwards the thread has the
// context it had before (none, here), also after a nested Do, so that a
// library taking the calling thread's context outside Do does not get a
// stale one.
func TestDoRestoresContext(t *testing.T) {
	c := open(t)
	runtime.LockOSThread() // Do's own lock nests in this one
	defer runtime.UnlockOSThread()
	current := func() cudadl.Context {
		cur, err := c.d.CtxGetCurrent()
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	err := c.Do(func() error {
		if err := c.Do(func() error { return nil }); err != nil {
			return err
		}
		if current() != c.ctx {
			t.Error("after a nested Do, the outer Do's context is not current")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if current() != (cudadl.Context{}) {
		t.Error("after Do, its context is still current")
	}
}

// MemInfo reports the device's size and what is free of it (the fake's
// GNNMPI_FAKE_CUDA_MEMORY bytes): an allocation takes its bytes until it
// is freed, and one beyond what is free is the driver's out-of-memory
// error.
func TestMemInfo(t *testing.T) {
	t.Setenv("GNNMPI_FAKE_CUDA_MEMORY", "1048576")
	c := open(t)
	free0, total, err := c.MemInfo()
	if err != nil || total != 1<<20 || free0 <= 0 || free0 > total {
		t.Fatalf("MemInfo() = %d, %d, %v; want free in (0, %d] of %d", free0, total, err, 1<<20, 1<<20)
	}
	p, err := c.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	if free, _, err := c.MemInfo(); err != nil || free != free0-4096 {
		t.Fatalf("after Alloc(4096): free %d, %v; want %d", free, err, free0-4096)
	}
	if q, err := c.Alloc(2 << 20); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Fatalf("Alloc(2 MiB) of a 1 MiB device = %#x, %v; want CUDA_ERROR_OUT_OF_MEMORY", q, err)
	}
	if err := c.Free(p); err != nil {
		t.Fatal(err)
	}
	if free, _, err := c.MemInfo(); err != nil || free != free0 {
		t.Fatalf("after Free: free %d, %v; want %d", free, err, free0)
	}
}
