package gpu

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps checks that gpu stays a leaf (STYLE.md §2): besides the standard
// library it may import only go-nvml.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "gnnmpi/gpu").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "gnnmpi/gpu" && !strings.HasPrefix(p, "github.com/NVIDIA/go-nvml/") {
			t.Errorf("gnnmpi/gpu imports %s; allowed: the standard library and github.com/NVIDIA/go-nvml", p)
		}
	}
}
