package cublasdl

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"gnnmpi/internal/dl"
)

// $GNNMPI_CUDA_LIBDIR is searched first, then the loader's path, newest
// soname first.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name, dir string
		want      []string
	}{
		{"unset", "", []string{"libcublas.so.12", "libcublas.so.11", "libcublas.so"}},
		{"dir", "/opt/fake", []string{"/opt/fake/libcublas.so.12", "/opt/fake/libcublas.so.11", "/opt/fake/libcublas.so",
			"libcublas.so.12", "libcublas.so.11", "libcublas.so"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(LibDirEnv, tc.dir)
			if got := Names("libcublas"); !slices.Equal(got, tc.want) {
				t.Errorf("got: %v want: %v", got, tc.want)
			}
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
