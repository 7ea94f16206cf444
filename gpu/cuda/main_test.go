package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The tests run on fake libraries built from testdata/ with gcc into a
// temporary directory, which GNNMPI_CUDA_LIBDIR then names (see
// internal/cudadl). Tests that need the real driver run the test binary
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

func buildFakes(dir string) error {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return fmt.Errorf("gcc not found: %w", err)
	}
	shim, err := filepath.Abs("testdata/shim.h")
	if err != nil {
		return err
	}
	for _, b := range []struct{ src, out string }{
		{"testdata/fakecuda.c", "libcuda.so.1"},
		{"testdata/fakenvrtc.c", "libnvrtc.so"},
	} {
		cmd := exec.Command(gcc, "-shared", "-fPIC", "-O1", "-Wall", "-Werror",
			fmt.Sprintf("-DGNNMPI_SHIM=%q", shim), fmt.Sprintf("-DGNNMPI_FAKE_DIR=%q", dir),
			"-o", filepath.Join(dir, b.out), b.src, "-ldl")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", b.out, err, out)
		}
	}
	return nil
}

// needFake skips t when the fakes could not be built (no gcc) and fails it
// when they did not compile.
func needFake(t *testing.T) {
	t.Helper()
	if os.Getenv(envChild) != "" {
		return
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not found: cannot build the fake CUDA libraries")
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
