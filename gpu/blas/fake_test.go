package blas

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"gnnmpi/internal/cublasdl"
)

// errNoOpenBLAS marks a fake cuBLAS that could not be linked for want of
// OpenBLAS.
var errNoOpenBLAS = errors.New("OpenBLAS not found")

// The fake libraries are built once per test binary into fakeDir, which
// TestMain removes.
var (
	fakeOnce sync.Once
	fakeDir  string
	fakeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

// openblasLibs returns the link flags of OpenBLAS: pkg-config's, or
// -lopenblas.
func openblasLibs() []string {
	if out, err := exec.Command("pkg-config", "--libs", "openblas").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) > 0 {
			return f
		}
	}
	return []string{"-lopenblas"}
}

// buildFakes compiles testdata/fake_cublas.c and testdata/fake_cusparse.c
// into fakeDir as libcublas.so.12 and libcusparse.so.12.
func buildFakes() {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		fakeErr = err
		return
	}
	if fakeDir, fakeErr = os.MkdirTemp("", "gnnmpi-fake-cublas-"); fakeErr != nil {
		return
	}
	for _, b := range []struct {
		src, lib string
		libs     []string
	}{
		{"fake_cublas.c", "libcublas.so.12", openblasLibs()},
		{"fake_cusparse.c", "libcusparse.so.12", nil},
	} {
		args := append([]string{"-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", filepath.Join(fakeDir, b.lib), filepath.Join("testdata", b.src)}, b.libs...)
		if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			fakeErr = fmt.Errorf("gcc %s: %v\n%s", b.src, err, out)
			if strings.Contains(string(out), "-lopenblas") {
				fakeErr = fmt.Errorf("%w: %w", errNoOpenBLAS, fakeErr)
			}
			return
		}
	}
}

// useFakes points $GNNMPI_CUDA_LIBDIR at the fake libraries for the rest
// of the test, skipping it without gcc.
func useFakes(t *testing.T) {
	t.Helper()
	fakeOnce.Do(buildFakes)
	if errors.Is(fakeErr, exec.ErrNotFound) {
		t.Skipf("no gcc to build the fake cuBLAS/cuSPARSE: %v", fakeErr)
	}
	if errors.Is(fakeErr, errNoOpenBLAS) {
		t.Skipf("no OpenBLAS (libopenblas-dev) to link the fake cuBLAS: %v", fakeErr)
	}
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	t.Setenv(cublasdl.LibDirEnv, fakeDir)
}

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

func (a *hostAlloc) Free(p uintptr) {
	b, ok := a.blocks[p]
	if !ok {
		a.t.Errorf("Free(%#x): not allocated or freed twice", p)
		return
	}
	if got := string(b.buf[b.size:]); got != canary {
		a.t.Errorf("block of %d bytes overrun: canary %q", b.size, got)
	}
	b.pin.Unpin()
	delete(a.blocks, p)
}

// checkFreed fails the test if a block was not freed.
func (a *hostAlloc) checkFreed() {
	if len(a.blocks) != 0 {
		a.t.Errorf("%d workspace blocks not freed", len(a.blocks))
	}
}
