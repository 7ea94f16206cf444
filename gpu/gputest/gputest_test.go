package gputest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gnnmpi/internal/dl"
)

// Build leaves the four fake libraries in the directory, each loadable
// with the entry points gnnmpi looks up.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	err := Build(dir)
	if errors.Is(err, ErrNoCompiler) || errors.Is(err, ErrNoOpenBLAS) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for lib, sym := range map[string]string{
		"libcuda.so.1": "cuLaunchKernel", "libnvrtc.so": "nvrtcCompileProgram",
		"libcublas.so.12": "cublasSgemm_v2", "libcusparse.so.12": "cusparseSpMM",
	} {
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
