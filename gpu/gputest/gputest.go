// Package gputest builds the fake GPU libraries that gnnmpi's tests run
// the GPU path on, on machines without a GPU: a fake libcuda.so.1 and
// libnvrtc.so (gpu/cuda/testdata: device memory is host memory, kernels
// are compiled by gcc through a shim and run thread by thread), and a fake
// libcublas.so.12 over OpenBLAS and libcusparse.so.12 (gpu/blas/testdata).
// Point GNNMPI_CUDA_LIBDIR at the directory Build fills. The fake NCCL is
// built by gnnmpi/nccl/nccltest.
package gputest

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
)

// ErrNoCompiler is wrapped by Build's error when gcc is missing, and
// ErrNoOpenBLAS when OpenBLAS cannot be linked: callers skip on them.
var (
	ErrNoCompiler = errors.New("gputest: gcc not found")
	ErrNoOpenBLAS = errors.New("gputest: OpenBLAS not found (libopenblas-dev)")
)

// repoDir returns the repository's root, from this file's path.
func repoDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
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

// Build compiles the fake libcuda.so.1, libnvrtc.so, libcublas.so.12 and
// libcusparse.so.12 into dir. The fake NVRTC writes the kernels it
// compiles into dir too. When OpenBLAS cannot be linked it still builds
// the other three and returns an error wrapping ErrNoOpenBLAS: callers
// that need no cuBLAS (the CUDA driver's tests) go on.
func Build(dir string) error {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoCompiler, err)
	}
	root := repoDir()
	cudaData := filepath.Join(root, "gpu", "cuda", "testdata")
	blasData := filepath.Join(root, "gpu", "blas", "testdata")
	shim := filepath.Join(cudaData, "shim.h")
	var noBLAS error // set when the fake cuBLAS could not be linked
	for _, b := range []struct {
		src, out string
		flags    []string
	}{
		{filepath.Join(cudaData, "fakecuda.c"), "libcuda.so.1", []string{"-ldl", "-lpthread"}},
		{filepath.Join(cudaData, "fakenvrtc.c"), "libnvrtc.so", []string{"-ldl"}},
		{filepath.Join(blasData, "fake_cublas.c"), "libcublas.so.12", openblasLibs()},
		{filepath.Join(blasData, "fake_cusparse.c"), "libcusparse.so.12", nil},
	} {
		args := []string{"-shared", "-fPIC", "-O1", "-Wall", "-Werror",
			fmt.Sprintf("-DGNNMPI_SHIM=%q", shim), fmt.Sprintf("-DGNNMPI_FAKE_DIR=%q", dir),
			"-o", filepath.Join(dir, b.out), b.src}
		args = append(args, b.flags...)
		if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
			err = fmt.Errorf("gputest: building %s: %v\n%s", b.out, err, out)
			if strings.Contains(string(out), "openblas") {
				noBLAS = fmt.Errorf("%w: %w", ErrNoOpenBLAS, err)
				continue
			}
			return err
		}
	}
	return noBLAS
}

// The fakes of Use and UseCUDA, built once per process.
var (
	once     sync.Once
	fakeDir  string
	buildErr error
)

// Use points GNNMPI_CUDA_LIBDIR at the four fake libraries for the rest
// of t and returns their directory, building them on the first call of
// the process into a temporary directory (Remove deletes it). It skips t
// without gcc or OpenBLAS and fails it when they do not build.
func Use(t testing.TB) string { return use(t, true) }

// UseCUDA is Use for tests that need only the fake libcuda and libnvrtc:
// it does not skip without OpenBLAS (Build makes those two first).
func UseCUDA(t testing.TB) string { return use(t, false) }

func use(t testing.TB, blas bool) string {
	t.Helper()
	once.Do(func() {
		if fakeDir, buildErr = os.MkdirTemp("", "gnnmpi-fakes-"); buildErr == nil {
			buildErr = Build(fakeDir)
		}
	})
	err := buildErr
	if !blas && errors.Is(err, ErrNoOpenBLAS) {
		err = nil
	}
	if errors.Is(err, ErrNoCompiler) || errors.Is(err, ErrNoOpenBLAS) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GNNMPI_CUDA_LIBDIR", fakeDir)
	return fakeDir
}

// Remove deletes the fakes Use built, if any: call it from TestMain
// after the tests ran.
func Remove() {
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
}
