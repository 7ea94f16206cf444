package cudadl

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/gputest"
	"gnnmpi/internal/dl"
)

// NVRTC found in a directory by its path gets that directory's builtins
// loaded first: NVRTC dlopens them by soname when it compiles (the real
// one fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE without them), and
// the loader looks for a soname only on its own path, where they are not.
func TestOpenNVRTCLoadsBuiltins(t *testing.T) {
	const builtins = "libnvrtc-builtins.so.12.6"
	if l, err := dl.Open(builtins); err == nil {
		l.Close()
		t.Skip(builtins + " is on the loader's path")
	}
	fakes := t.TempDir()
	if err := gputest.Build(fakes); errors.Is(err, gputest.ErrNoCompiler) {
		t.Skip(err)
	} else if err != nil && !errors.Is(err, gputest.ErrNoOpenBLAS) {
		t.Fatal(err)
	}
	dir := t.TempDir() // laid out like a CUDA 12.6 lib64
	nvrtc, err := os.ReadFile(filepath.Join(fakes, "libnvrtc.so"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "libnvrtc.so.12"), nvrtc, 0o755))
	src := filepath.Join(fakes, "builtins.c")
	require.NoError(t, os.WriteFile(src, []byte("int gnnmpi_builtins;\n"), 0o644))
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-Wl,-soname,"+builtins, "-o", filepath.Join(dir, builtins), src).CombinedOutput()
	require.NoError(t, err, "%s", out)

	t.Setenv(LibDirEnv, dir)
	n, err := OpenNVRTC()
	require.NoError(t, err)
	defer n.Close()
	require.Equal(t, filepath.Join(dir, "libnvrtc.so.12"), n.Name())
	b, err := dl.Open(builtins) // what NVRTC does when it compiles
	require.NoError(t, err, "NVRTC's dlopen of its builtins by soname")
	require.NoError(t, b.Close())
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
