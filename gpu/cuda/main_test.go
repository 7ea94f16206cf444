package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"gnnmpi/gpu/gputest"
)

// The tests run on fake libraries built from testdata/ with gcc
// (gputest.Build) into a temporary directory, which GNNMPI_CUDA_LIBDIR then names (see
// gpu/internal/cudadl). Tests that need the real driver run the test binary
// again in a child process without it.

var fakeErr error // why the fakes could not be built; nil when they were

const (
	envChild = "GNNMPI_CUDA_TEST_CHILD" // set in child processes: which check to run
	envDir   = "GNNMPI_CUDA_LIBDIR"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "gnnmpi-fakecuda-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeErr = buildFakes(dir)
	if fakeErr == nil {
		os.Setenv(envDir, dir)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildFakes builds the fake libraries with gputest.Build. These tests
// need only the fake driver and NVRTC: a fake cuBLAS that cannot be linked
// for want of OpenBLAS is not an error here.
func buildFakes(dir string) error {
	err := gputest.Build(dir)
	if errors.Is(err, gputest.ErrNoOpenBLAS) {
		return nil
	}
	return err
}

// needFake skips t when the fakes could not be built (no gcc) and fails it
// when they did not compile.
func needFake(t *testing.T) {
	t.Helper()
	if os.Getenv(envChild) != "" {
		return
	}
	if errors.Is(fakeErr, gputest.ErrNoCompiler) {
		t.Skipf("cannot build the fake CUDA libraries: %v", fakeErr)
	}
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
}

// child runs the test named run of this binary again with env added, and
// returns its output; it fails t when the child fails.
func child(t *testing.T, run string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+run+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", run, err, out)
	}
	return string(out)
}
