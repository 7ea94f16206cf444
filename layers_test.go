package main

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// layers is the layer table of the house (docs/architecture.md, "Layers"):
// every package's layer, counted from the leaves. A package may import
// only packages of lower layers, and its layer is one more than the
// highest it imports (0 for a package that imports no gnnmpi package), so
// the table is exactly `go list`'s import depth and an import that runs up
// or sideways across a layer changes it. When a package is added or its
// imports change, update this table and the one in architecture.md.
var layers = map[string]int{
	// Layer 0: local storage and kernels, the metrics format, leaves.
	"gnnmpi/sparse":              0,
	"gnnmpi/dense":               0,
	"gnnmpi/metrics":             0,
	"gnnmpi/gpu":                 0,
	"gnnmpi/gpu/kernels":         0,
	"gnnmpi/gpu/gputest":         0,
	"gnnmpi/partition/metis":     0,
	"gnnmpi/partition/ptscotch":  0,
	"gnnmpi/nccl/nccltest":       0,
	"gnnmpi/internal/atomicfile": 0,
	"gnnmpi/internal/byteview":   0,
	"gnnmpi/internal/cores":      0,
	"gnnmpi/internal/dl":         0,
	"gnnmpi/internal/enum":       0,
	"gnnmpi/internal/f16":        0,
	"gnnmpi/internal/memlimit":   0,
	"gnnmpi/internal/openblas":   0,
	"gnnmpi/internal/prefetch":   0,
	"gnnmpi/internal/rng":        0,
	"gnnmpi/internal/sat":        0,
	"gnnmpi/internal/testutil":   0,
	"gnnmpi/safetensors":         0,
	"gnnmpi/cli/mpitest":         0,
	"gnnmpi/bench/golden":        0,
	"gnnmpi/bench/plot":          0,
	"gnnmpi/bench/gpu/abicheck":  0,
	// Layer 1: the Comm interface, cgo bindings over dl, pure kernels and
	// models.
	"gnnmpi/collective":            1,
	"gnnmpi/gpu/internal/cublasdl": 1,
	"gnnmpi/gpu/internal/cudadl":   1,
	"gnnmpi/nccl/internal/nccldl":  1,
	"gnnmpi/internal/textfile":     1,
	"gnnmpi/bench/gpu/fakes":       1,
	"gnnmpi/model":                 1,
	"gnnmpi/npy":                   1,
	"gnnmpi/spgemm/spgemmtest":     1,
	// Layer 2: backends, algorithms over a Comm or a book; device APIs.
	"gnnmpi/collective/collectivetest": 2,
	"gnnmpi/collective/inproc":         2,
	"gnnmpi/collective/mpi":            2,
	"gnnmpi/partition/dist":            2,
	"gnnmpi/spgemm":                    2,
	"gnnmpi/gpu/blas":                  2,
	"gnnmpi/gpu/cuda":                  2,
	"gnnmpi/nccl":                      2,
	"gnnmpi/partition":                 2,
	"gnnmpi/perfmodel":                 2,
	"gnnmpi/pipe":                      2,
	// Layer 3: datasets, the feature store, the device model.
	"gnnmpi/alltoall":            3,
	"gnnmpi/sampling":            3,
	"gnnmpi/gpu/gnn":             3,
	"gnnmpi/gpu/gpucheck":        3,
	"gnnmpi/graph":               3,
	"gnnmpi/perfmodel/calibrate": 3,
	// Layer 4: the device feature store (tiers over the host store); the
	// distributed dataset writer.
	"gnnmpi/gpu/tier":           4,
	"gnnmpi/partition/distpart": 4,
	// Layer 5: the application.
	"gnnmpi/train": 5,
	// Layer 6: the commands; 7: main, which picks the backends.
	"gnnmpi/cli": 6,
	"gnnmpi":     7,
}

// pureGo are the packages that must link no C, directly or through what
// they import: the algorithms and the formats, so that packages needing
// only a partition book, a model or a sampler build without METIS, MPI or
// the GPU leaves.
var pureGo = []string{
	"gnnmpi/sparse", "gnnmpi/dense", "gnnmpi/collective", "gnnmpi/model", "gnnmpi/spgemm", "gnnmpi/sampling",
	"gnnmpi/pipe", "gnnmpi/alltoall", "gnnmpi/partition", "gnnmpi/partition/dist", "gnnmpi/perfmodel",
	"gnnmpi/internal/rng", "gnnmpi/internal/sat", "gnnmpi/internal/enum", "gnnmpi/internal/textfile", "gnnmpi/internal/atomicfile", "gnnmpi/internal/memlimit",
	"gnnmpi/internal/cores", "gnnmpi/internal/byteview",
}

// cgoLeaves are the only packages with cgo files (STYLE.md §5): thin
// leaves, each importing only layer-0 packages (the dlopen leaf) or
// backendInterfaces.
var cgoLeaves = []string{
	"gnnmpi/collective/mpi", "gnnmpi/partition/metis", "gnnmpi/partition/ptscotch", "gnnmpi/internal/openblas",
	"gnnmpi/internal/dl", "gnnmpi/gpu/internal/cudadl", "gnnmpi/gpu/internal/cublasdl", "gnnmpi/nccl/internal/nccldl",
}

// backendInterfaces are the interfaces a cgo leaf may implement although
// they are above layer 0: collective (layer 1), whose only gnnmpi import
// is the metrics format its byte counts are kept in.
var backendInterfaces = []string{"gnnmpi/collective"}

type listed struct {
	path    string
	imports []string
	cgo     bool
}

// goList lists the module's packages with their gnnmpi imports (tests
// excluded: a test may reach up to drive what it tests).
func goList(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{len .CgoFiles}}", "./...").Output()
	require.NoError(t, err)
	var pkgs []listed
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		require.Len(t, f, 3, line)
		p := listed{path: f[0], cgo: f[2] != "0"}
		for _, imp := range strings.Fields(f[1]) {
			if imp == "gnnmpi" || strings.HasPrefix(imp, "gnnmpi/") {
				p.imports = append(p.imports, imp)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestLayers checks that every package is in the layer table, imports only
// lower layers, and sits exactly one above the highest layer it imports.
func TestLayers(t *testing.T) {
	pkgs := goList(t)
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.path] = true
		l, ok := layers[p.path]
		if !ok {
			t.Errorf("%s is not in the layer table (layers_test.go and docs/architecture.md)", p.path)
			continue
		}
		depth := 0
		for _, imp := range p.imports {
			li, ok := layers[imp]
			if !ok {
				continue // reported as the imported package itself
			}
			if li >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports must run down the layers", p.path, l, imp, li)
			}
			depth = max(depth, li+1)
		}
		if depth != l {
			t.Errorf("%s is in layer %d but its import depth is %d: move it to layer %d", p.path, l, depth, depth)
		}
	}
	for p := range layers {
		if !seen[p] {
			t.Errorf("layer table names %s, which is no package", p)
		}
	}
}

// TestInternalIsLeaves checks that internal/ holds only small leaves: no
// package under internal/ imports a gnnmpi package outside internal/.
func TestInternalIsLeaves(t *testing.T) {
	for _, p := range goList(t) {
		if !strings.HasPrefix(p.path, "gnnmpi/internal/") {
			continue
		}
		for _, imp := range p.imports {
			require.True(t, strings.HasPrefix(imp, "gnnmpi/internal/"), "%s imports %s: internal/ holds only leaves", p.path, imp)
		}
	}
}

// TestCgoLeaves checks that cgo appears only in the declared thin leaves,
// that a leaf imports only leaves and backendInterfaces (which import only
// leaves), and that the algorithm and format packages link no C at all.
func TestCgoLeaves(t *testing.T) {
	for _, p := range goList(t) {
		if slices.Contains(backendInterfaces, p.path) {
			for _, imp := range p.imports {
				require.Zero(t, layers[imp], "backend interface %s imports %s, which is not a leaf", p.path, imp)
			}
		}
		if p.cgo {
			require.Contains(t, cgoLeaves, p.path, "%s has cgo files but is not a declared cgo leaf", p.path)
			for _, imp := range p.imports {
				if !slices.Contains(backendInterfaces, imp) {
					require.Zero(t, layers[imp], "cgo leaf %s imports %s, which is neither a leaf nor a backend interface", p.path, imp)
				}
			}
		}
	}
	for _, pkg := range pureGo {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		require.NoError(t, err, pkg)
		require.NotContains(t, strings.Fields(string(out)), "runtime/cgo", "%s must stay pure Go", pkg)
	}
}

// TestArchitectureLayerTable checks that docs/architecture.md's layer table
// ("| layer | packages |" rows, packages in backquotes) is this table.
func TestArchitectureLayerTable(t *testing.T) {
	f, err := os.Open("docs/architecture.md")
	require.NoError(t, err)
	defer f.Close()
	row := regexp.MustCompile(`^\| *([0-9]+) *\|(.*)\|`)
	name := regexp.MustCompile("`([a-z0-9/]+)`")
	doc := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		l, _ := strconv.Atoi(m[1])
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			p := "gnnmpi/" + n[1]
			if n[1] == "main" {
				p = "gnnmpi"
			}
			doc[p] = l
		}
	}
	require.NoError(t, sc.Err())
	var missing, wrong []string
	for p, l := range layers {
		dl, ok := doc[p]
		switch {
		case !ok:
			missing = append(missing, p)
		case dl != l:
			wrong = append(wrong, p+" (doc "+strconv.Itoa(dl)+", table "+strconv.Itoa(l)+")")
		}
	}
	for p := range doc {
		if _, ok := layers[p]; !ok {
			wrong = append(wrong, p+" (in the doc, no package)")
		}
	}
	slices.Sort(missing)
	slices.Sort(wrong)
	require.Empty(t, missing, "packages missing from architecture.md's layer table")
	require.Empty(t, wrong, "architecture.md's layer table disagrees")
}
