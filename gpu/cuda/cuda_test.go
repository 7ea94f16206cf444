package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"gnnmpi/gpu/kernels"
	"gnnmpi/internal/dl"
)

func open(t *testing.T) *Context {
	t.Helper()
	needFake(t)
	c, err := Open(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

func TestOpenAllocCopy(t *testing.T) {
	c := open(t)
	if os.Getenv(envChild) == "" {
		if c.Name() != "gnnmpi fake device" {
			t.Fatalf("name got: %q want: gnnmpi fake device", c.Name())
		}
		if maj, min := c.Capability(); maj != 8 || min != 0 {
			t.Fatalf("capability got: %d.%d want: 8.0", maj, min)
		}
	}
	if n, err := DeviceCount(); err != nil || n < 1 || os.Getenv(envChild) == "" && n != 1 {
		t.Fatalf("DeviceCount() = %d, %v; want 1 (the fake)", n, err)
	}
	if _, err := Open(1); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("Open(1) on one device: %v", err)
	}
	f := []float32{1, -2.5, float32(math.Inf(1)), 3e-40}
	i := []int32{7, -1, math.MaxInt32}
	b := []byte("gnnmpi")
	p, err := c.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	gotF, gotI, gotB := make([]float32, len(f)), make([]int32, len(i)), make([]byte, len(b))
	for _, step := range []func() error{
		func() error { return CopyHtoD(c, p, f) }, func() error { return CopyDtoH(c, gotF, p) },
		func() error { return CopyHtoD(c, p+16, i) }, func() error { return CopyDtoH(c, gotI, p+16) },
		func() error { return CopyHtoD(c, p+32, b) }, func() error { return CopyDtoH(c, gotB, p+32) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	for k := range f {
		if math.Float32bits(gotF[k]) != math.Float32bits(f[k]) {
			t.Fatalf("float32 round trip got: %v want: %v", gotF, f)
		}
	}
	if string(gotB) != string(b) || gotI[0] != i[0] || gotI[1] != i[1] || gotI[2] != i[2] {
		t.Fatalf("round trip got: %v %q want: %v %q", gotI, gotB, i, b)
	}
}

func TestMappedStreamEvent(t *testing.T) {
	c := open(t)
	m, err := HostMapped[float32](c, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if m.Dev == 0 || len(m.Host) != 5 {
		t.Fatalf("mapped: dev %#x, len %d", m.Dev, len(m.Host))
	}
	for k := range m.Host {
		m.Host[k] = float32(k) + 0.5
	}
	s, err := c.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	start, _ := c.NewEvent()
	end, err := c.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Alloc(20)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Free(p)
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := CopyHtoDAsync(s, p, m); err != nil {
		t.Fatal(err)
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	ms, err := Elapsed(start, end)
	if err != nil || ms < 0 {
		t.Fatalf("elapsed %v ms: %v", ms, err)
	}
	got := make([]float32, 5)
	if err := CopyDtoH(c, got, p); err != nil {
		t.Fatal(err)
	}
	for k := range got {
		if got[k] != m.Host[k] {
			t.Fatalf("async copy got: %v want: %v", got, m.Host)
		}
	}
	for _, err := range []error{start.Destroy(), end.Destroy(), s.Destroy()} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A compile error carries the compiler's log; an unknown kernel is named.
func TestCompileErrors(t *testing.T) {
	c := open(t)
	_, err := c.Compile(`extern "C" __global__ void broken(float *x) { x[0] = undefined_name; }`, "broken.cu")
	if err == nil || !strings.Contains(err.Error(), "undefined_name") || !strings.Contains(err.Error(), "broken.cu") {
		t.Fatalf("compile error: %v", err)
	}
	mod, err := c.Compile(kernels.Source(), "kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Function("no_such_kernel"); err == nil || !strings.Contains(err.Error(), "no_such_kernel") {
		t.Fatalf("missing kernel: %v", err)
	}
	if again, err := c.Compile(kernels.Source(), "kernels.cu"); err != nil || again != mod {
		t.Fatalf("second Compile: %p, %v; want the cached %p", again, err, mod)
	}
}

// Without libcuda, Open's error names the library and wraps ErrNoCUDA.
func TestOpenWithoutCUDA(t *testing.T) {
	if os.Getenv(envChild) == "nocuda" {
		_, err := Open(0)
		if !errors.Is(err, ErrNoCUDA) || !strings.Contains(err.Error(), "libcuda.so.1") {
			t.Fatalf("Open without libcuda: %v", err)
		}
		t.Log(err)
		return
	}
	if os.Getenv(envChild) != "" {
		return
	}
	if l, err := dl.Open("libcuda.so.1"); err == nil {
		l.Close()
		t.Skip("this machine has libcuda.so.1")
	}
	t.Log(child(t, "TestOpenWithoutCUDA", envChild+"=nocuda", envDir+"="+t.TempDir()))
}

// On a machine with a real driver, the tests of this file run again in a
// child process on the real libcuda and NVRTC.
func TestRealCUDA(t *testing.T) {
	if os.Getenv(envChild) != "" {
		return
	}
	l, err := dl.Open("libcuda.so.1")
	if err != nil {
		t.Skip("no libcuda.so.1 on this machine")
	}
	l.Close()
	out := child(t, "TestOpenAllocCopy|TestMappedStreamEvent|TestGatherRows|TestSuiteKernels|TestMemory", envChild+"=real", envDir+"=")
	t.Log(out)
}

// gatherRef is gather_rows in Go.
func gatherRef(out, dev []float32, devStride int, host []float32, hostStride int, remote []float32, remoteStride int,
	tier, slot []int32, width int) {
	for i := range tier {
		src, stride := dev, devStride
		switch tier[i] {
		case 1:
			src, stride = host, hostStride
		case 2:
			src, stride = remote, remoteStride
		}
		copy(out[i*width:(i+1)*width], src[int(slot[i])*stride:][:width])
	}
}

func launchDims(n, perBlock int) (grid, block [3]uint32) {
	g := (n + perBlock - 1) / perBlock
	return [3]uint32{uint32(min(g, 5)), 1, 1}, [3]uint32{128, 1, 1} // a small grid exercises the grid-stride loops
}

// gather_rows is bit-exact on ragged widths, rows of all three tiers, strides
// wider than the rows and tier bases that are not 128-byte aligned.
func TestGatherRows(t *testing.T) {
	c := open(t)
	mod, err := c.Compile(kernels.Source(), "kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := mod.Function("gather_rows")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 22))
	const nDev, nHost, nRemote, n = 7, 11, 4, 50
	for _, width := range []int{1, 31, 32, 33, 100} {
		for _, pad := range []int{0, 3} { // stride = width + pad
			for _, off := range []int{0, 1, 5} { // tier bases off floats past an allocation's start
				stride := width + pad
				dev := make([]float32, off+nDev*stride)
				for k := range dev {
					dev[k] = r.Float32()*2 - 1
				}
				hm, err := HostMapped[float32](c, off+nHost*stride)
				if err != nil {
					t.Fatal(err)
				}
				for k := range hm.Host {
					hm.Host[k] = float32(r.NormFloat64()) * 1e3
				}
				rm, err := HostMapped[float32](c, nRemote*width) // remote rows: stride = width
				if err != nil {
					t.Fatal(err)
				}
				for k := range rm.Host {
					rm.Host[k] = -float32(k)
				}
				tier, slot := make([]int32, n), make([]int32, n)
				for i := range tier {
					tier[i] = int32(r.IntN(3))
					slot[i] = int32(r.IntN([]int{nDev, nHost, nRemote}[tier[i]]))
				}
				want := make([]float32, n*width)
				gatherRef(want, dev[off:], stride, hm.Host[off:], stride, rm.Host, width, tier, slot, width)

				dDev, _ := c.Alloc(int64(4 * len(dev)))
				dOut, _ := c.Alloc(int64(4 * n * width))
				dTier, _ := c.Alloc(4 * n)
				dSlot, err := c.Alloc(4 * n)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range []error{CopyHtoD(c, dDev, dev), CopyHtoD(c, dTier, tier), CopyHtoD(c, dSlot, slot)} {
					if e != nil {
						t.Fatal(e)
					}
				}
				grid, block := launchDims(n, 4)
				if err := fn.Launch(grid, block, 0, nil, dOut, dDev+DevicePtr(4*off), int64(stride),
					hm.Dev+DevicePtr(4*off), int64(stride), rm.Dev, int64(width), dTier, dSlot, int32(n), int32(width)); err != nil {
					t.Fatal(err)
				}
				got := make([]float32, n*width)
				if err := CopyDtoH(c, got, dOut); err != nil {
					t.Fatal(err)
				}
				for k := range got {
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Fatalf("width %d stride %d off %d: out[%d, %d] got: %v want: %v",
							width, stride, off, k/width, k%width, got[k], want[k])
					}
				}
				for _, p := range []DevicePtr{dDev, dOut, dTier, dSlot} {
					c.Free(p)
				}
				hm.Free()
				rm.Free()
			}
		}
	}
}
