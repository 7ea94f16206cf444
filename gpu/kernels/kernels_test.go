package kernels

import (
	"strings"
	"testing"
)

// Every kernel in Names is an extern "C" __global__ function registered
// with GNNMPI_KERNEL, and none uses what the test shim cannot run.
func TestSource(t *testing.T) {
	src := Source()
	for _, name := range Names {
		if !strings.Contains(src, "__global__ void "+name+"(") || !strings.Contains(src, "GNNMPI_KERNEL("+name+")") {
			t.Errorf("kernel %s is not defined and registered", name)
		}
	}
	if got, want := strings.Count(src, `extern "C" __global__`), len(Names); got != want {
		t.Errorf("kernels got: %d want: %d (Names is out of date)", got, want)
	}
	var code strings.Builder // src without its // comments
	for line := range strings.Lines(src) {
		code.WriteString(strings.SplitN(line, "//", 2)[0])
	}
	for _, bad := range []string{"__syncthreads", "__shared__", "__shfl", "atomic"} {
		if strings.Contains(code.String(), bad) {
			t.Errorf("the kernels use %s, which the fake CUDA cannot run", bad)
		}
	}
}
