package partition

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps checks that partition stays a pure-Go leaf (STYLE.md §2, §5):
// among gnnmpi packages it may import only sparse and the internal leaves
// rng, textfile and atomicfile, and
// nothing it imports uses cgo, so that packages needing only a book do not
// link METIS.
func TestDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "gnnmpi/partition").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{"gnnmpi/partition": true, "gnnmpi/sparse": true, "gnnmpi/internal/rng": true,
		"gnnmpi/internal/textfile": true, "gnnmpi/internal/atomicfile": true}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "gnnmpi/") && !allowed[p] {
			t.Errorf("gnnmpi/partition imports %s; allowed: gnnmpi/sparse, gnnmpi/internal/{rng,textfile,atomicfile} and the standard library", p)
		}
		if p == "runtime/cgo" {
			t.Error("gnnmpi/partition reaches runtime/cgo; it must stay pure Go")
		}
	}
}
