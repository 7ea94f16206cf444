package kernels

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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

// Params agrees with each kernel's CUDA C signature, and covers Names.
func TestParams(t *testing.T) {
	sig := regexp.MustCompile(`extern "C" __global__ void (\w+)\(([^)]*)\)`)
	kind := func(decl string) (Param, bool) {
		decl = strings.Join(strings.Fields(decl), " ")
		switch {
		case strings.Contains(decl, "*"):
			return Ptr, true
		case strings.HasPrefix(decl, "long long "), strings.HasPrefix(decl, "const long long "):
			return Int64, true
		case strings.HasPrefix(decl, "int "), strings.HasPrefix(decl, "const int "):
			return Int32, true
		case strings.HasPrefix(decl, "float "), strings.HasPrefix(decl, "const float "):
			return Float32, true
		}
		return 0, false
	}
	seen := map[string]bool{}
	for _, m := range sig.FindAllStringSubmatch(Source(), -1) {
		name := m[1]
		seen[name] = true
		var got []Param
		for _, d := range strings.Split(m[2], ",") {
			p, ok := kind(d)
			if !ok {
				t.Errorf("%s: parameter %q has a type Params cannot name", name, strings.TrimSpace(d))
			}
			got = append(got, p)
		}
		assert.Equal(t, got, Params[name], "kernel %s", name)
	}
	for _, n := range Names {
		assert.True(t, seen[n], "kernel %s has no signature", n)
	}
	assert.Len(t, Params, len(Names))
}
