package cublasdl

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/dl"
)

// $GNNMPI_CUDA_LIBDIR is searched first, then the Python wheels of the
// virtual environment (CUDA 13's nvidia/cu13/lib, then the library's own
// package), then the loader's path, then /usr/local/cuda/lib64; in each,
// the sonames of CUDA 13, 12 and 11, newest first.
func TestNames(t *testing.T) {
	venv := t.TempDir()
	site := filepath.Join(venv, "lib", "python3.12", "site-packages")
	require.NoError(t, os.MkdirAll(site, 0o755))
	for _, e := range []string{"CUDA_HOME", "CUDA_PATH", "GNNMPI_PYTHON_SITE"} {
		t.Setenv(e, "")
	}
	under := func(dir string, names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	cublas := []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}
	cusparse := []string{"libcusparse.so.12", "libcusparse.so.11", "libcusparse.so"}
	for _, tc := range []struct {
		name, dir, venv, base string
		want                  [][]string
	}{
		{"unset", "", "", "libcublas", [][]string{cublas, under("/usr/local/cuda/lib64", cublas...)}},
		{"dir", "/opt/fake", "", "libcublas", [][]string{under("/opt/fake", cublas...), cublas, under("/usr/local/cuda/lib64", cublas...)}},
		{"venv", "/opt/fake", venv, "libcublas", [][]string{under("/opt/fake", cublas...),
			under(filepath.Join(site, "nvidia/cu13/lib"), cublas...), under(filepath.Join(site, "nvidia/cublas/lib"), cublas...),
			cublas, under("/usr/local/cuda/lib64", cublas...)}},
		{"cusparse", "", venv, "libcusparse", [][]string{under(filepath.Join(site, "nvidia/cu13/lib"), cusparse...),
			under(filepath.Join(site, "nvidia/cusparse/lib"), cusparse...), cusparse, under("/usr/local/cuda/lib64", cusparse...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(LibDirEnv, tc.dir)
			t.Setenv("VIRTUAL_ENV", tc.venv)
			require.Equal(t, slices.Concat(tc.want...), Names(tc.base))
		})
	}
}

// A status becomes an error naming the library, function and status.
func TestError(t *testing.T) {
	l := library{name: "cuSPARSE", status: cusparseStatus}
	if err := l.statusError("cusparseSpMM", 0); err != nil {
		t.Fatalf("success: got: %v", err)
	}
	for _, tc := range []struct {
		st   int
		want string
	}{
		{3, "cuSPARSE: cusparseSpMM: CUSPARSE_STATUS_INVALID_VALUE (3)"},
		{99, "cuSPARSE: cusparseSpMM: status 99"},
	} {
		if got := l.statusError("cusparseSpMM", tc.st).Error(); got != tc.want {
			t.Errorf("got: %q want: %q", got, tc.want)
		}
	}
}

// A missing library is an error naming every name tried and wrapping
// dl.ErrNotFound.
func TestOpenMissing(t *testing.T) {
	_, err := OpenCUSPARSE("libgnnmpi-no-cusparse.so.12")
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "cuSPARSE") || !strings.Contains(err.Error(), "libgnnmpi-no-cusparse.so.12") {
		t.Errorf("got: %v", err)
	}
}
