// Package nccltest builds the fake NCCL over MPI (nccl/testdata/fakenccl.c)
// for the tests of package nccl and of the MPI suite.
package nccltest

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildFake compiles the fake NCCL with gcc into dir/libnccl.so.2 against
// the MPI whose pkg-config name is pkg ("ompi-c" for Open MPI, "mpich" for
// an MPICH build) and returns dir, to be set as nccl.LibDirEnv. The error
// names gcc or pkg-config when either is missing.
func BuildFake(dir, pkg string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "..", "testdata", "fakenccl.c")
	if _, err := exec.LookPath("gcc"); err != nil {
		return "", fmt.Errorf("nccltest: gcc is needed to build the fake NCCL: %w", err)
	}
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("nccltest: pkg-config %s: %w", pkg, err)
	}
	args := append([]string{"-shared", "-fPIC", "-O1", "-o", filepath.Join(dir, "libnccl.so.2"), src, "-ldl"}, strings.Fields(string(flags))...)
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("nccltest: gcc %v: %w\n%s", args, err, out)
	}
	return dir, nil
}
