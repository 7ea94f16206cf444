package nccl

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
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

// stuckMemory is a HostMemory whose stream never completes: Wait fails
// after the timeout it is given, as gpu/cuda's Memory does.
type stuckMemory struct {
	*HostMemory
	got time.Duration // the timeout of the last Wait
}

func (s *stuckMemory) Wait(stream uintptr, timeout time.Duration) error {
	s.got = timeout
	if timeout <= 0 {
		return errors.New("test: a wait without timeout on a stuck stream would hang")
	}
	return fmt.Errorf("test: stream not done after %s", timeout)
}

// The timeout SetWaitTimeout sets (package main: --comm-timeout) bounds
// a Comm's waits for its stream, and the error names the call, the rank
// and the flag.
func TestWaitTimeout(t *testing.T) {
	defer SetWaitTimeout(0)
	SetWaitTimeout(3 * time.Second)
	m := &stuckMemory{HostMemory: NewHostMemory()}
	c := &Comm{dev: m, stream: 7, rank: 1, size: 2}
	err := c.Sync()
	if m.got != 3*time.Second {
		t.Fatalf("Wait got timeout %s, want 3s", m.got)
	}
	if err == nil || !strings.Contains(err.Error(), "nccl: Sync on rank 1 of 2") || !strings.Contains(err.Error(), "--comm-timeout 3s") {
		t.Fatalf("error %v", err)
	}
}

// idMemory is a HostMemory whose device has the name id.
type idMemory struct {
	*HostMemory
	id string
}

func (m idMemory) DeviceID() (string, error) { return m.id, nil }

// checkDevices refuses, on every rank alike, two ranks on one device, and
// accepts distinct devices and devices without a name (host memory).
func TestCheckDevices(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want string // "" for no error
	}{
		{[]string{"h/0000:01:00.0", "h/0000:02:00.0", "g/0000:01:00.0"}, ""},
		{[]string{"", "", ""}, ""},
		{[]string{"h/0000:01:00.0", "h/0000:02:00.0", "h/0000:01:00.0"}, "ranks 0 and 2 both use h/0000:01:00.0"},
	} {
		errs := make([]error, len(tc.ids))
		err := inproc.Run(len(tc.ids), inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			errs[c.Rank()] = checkDevices(c, idMemory{NewHostMemory(), tc.ids[c.Rank()]})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for r, err := range errs {
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%v: rank %d: %v", tc.ids, r, err)
			case tc.want != "" && (!errors.Is(err, ErrSharedDevice) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("%v: rank %d: got %v, want ErrSharedDevice naming %q", tc.ids, r, err, tc.want)
			}
		}
	}
}
