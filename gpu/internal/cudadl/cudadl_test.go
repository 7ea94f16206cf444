package cudadl

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gnnmpi/internal/dl"
)

// GNNMPI_CUDA_LIBDIR is searched first, then the loader's path, then the
// extra directories. (gpu/cuda's tests run this package on fake libraries.)
func TestCandidates(t *testing.T) {
	t.Setenv(LibDirEnv, "/fake")
	got := candidates([]string{"a.so", "b.so"}, []string{"", "/extra"})
	want := []string{"/fake/a.so", "/fake/b.so", "a.so", "b.so", "/extra/a.so", "/extra/b.so"}
	if !slices.Equal(got, want) {
		t.Fatalf("got: %v want: %v", got, want)
	}
	t.Setenv(LibDirEnv, "")
	if got := candidates([]string{"a.so"}, nil); !slices.Equal(got, []string{"a.so"}) {
		t.Fatalf("without the variable got: %v", got)
	}
}

// With an empty directory and no system library, the loaders fail with an
// error that names the library and wraps dl.ErrNotFound.
func TestOpenMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(LibDirEnv, dir)
	if _, err := dl.Open("libcuda.so.1"); err == nil {
		t.Skip("this machine has libcuda.so.1")
	}
	_, err := OpenDriver()
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), filepath.Join(dir, "libcuda.so.1")) {
		t.Fatalf("OpenDriver: %v", err)
	}
	if _, err := dl.Open("libnvrtc.so"); err == nil { // a system NVRTC would be found
		return
	}
	if _, err := OpenNVRTC(); !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "libnvrtc.so.12") {
		t.Fatalf("OpenNVRTC: %v", err)
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Lib: "libcuda.so.1", Func: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"},
			"libcuda.so.1: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"},
		{Error{Lib: "libnvrtc.so", Func: "nvrtcCompileProgram", Code: 6}, "libnvrtc.so: nvrtcCompileProgram: error 6"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got: %q want: %q", got, tc.want)
		}
	}
}
