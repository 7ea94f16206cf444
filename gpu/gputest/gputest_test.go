package gputest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gnnmpi/internal/dl"
)

// Build leaves the four fake libraries in the directory, each loadable
// with the entry points gnnmpi looks up; without OpenBLAS, the three that
// need none.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	err := Build(dir)
	if errors.Is(err, ErrNoCompiler) {
		t.Skip(err)
	}
	libs := map[string]string{
		"libcuda.so.1": "cuLaunchKernel", "libnvrtc.so": "nvrtcCompileProgram",
		"libcublas.so.12": "cublasSgemm_v2", "libcusparse.so.12": "cusparseSpMM",
	}
	if errors.Is(err, ErrNoOpenBLAS) {
		t.Logf("without the fake cuBLAS: %v", err)
		delete(libs, "libcublas.so.12")
	} else if err != nil {
		t.Fatal(err)
	}
	for lib, sym := range libs {
		p := filepath.Join(dir, lib)
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
		l, err := dl.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Sym(sym); err != nil {
			t.Error(err)
		}
		l.Close()
	}
}

// Use builds the fakes once and points GNNMPI_CUDA_LIBDIR at them.
func TestUse(t *testing.T) {
	dir := UseCUDA(t)
	if got := os.Getenv("GNNMPI_CUDA_LIBDIR"); got != dir {
		t.Fatalf("GNNMPI_CUDA_LIBDIR = %q, want %q", got, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "libcuda.so.1")); err != nil {
		t.Fatal(err)
	}
	if again := UseCUDA(t); again != dir {
		t.Fatalf("a second call built again into %s (first %s)", again, dir)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	Remove()
	os.Exit(code)
}
