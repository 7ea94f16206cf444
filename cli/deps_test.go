package cli

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The import graph flows one way (STYLE.md §2). Each package lists the
// gnnmpi packages it must not depend on, directly or indirectly;
// "runtime/cgo" marks a package that must stay pure Go. The packages that
// need only a partition book (alltoall) or none (sampling, spgemm, model,
// pipe) must not reach graph or its METIS binding, so they link no C.
func TestImportDirection(t *testing.T) {
	forbidden := map[string][]string{
		"gnnmpi/sparse":            {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/dense", "gnnmpi/model"},
		"gnnmpi/dense":             {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/sparse"},
		"gnnmpi/collective":        {"gnnmpi/graph", "gnnmpi/sparse", "gnnmpi/dense", "gnnmpi/collective/mpi", "gnnmpi/collective/inproc", "gnnmpi/gpu"},
		"gnnmpi/collective/inproc": {"gnnmpi/collective/mpi", "gnnmpi/graph"},
		"gnnmpi/collective/mpi":    {"gnnmpi/collective/inproc", "gnnmpi/graph"},
		"gnnmpi/gpu":               {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/sparse"},
		"gnnmpi/graph":             {"gnnmpi/collective", "gnnmpi/gpu", "gnnmpi/model"},
		"gnnmpi/partition/metis":       {"gnnmpi/graph", "gnnmpi/sparse", "gnnmpi/partition"},
		// Partitioning is a leaf: the book and its file format are pure
		// Go, and METIS (cgo) is reached only through graph.
		"gnnmpi/partition":           {"gnnmpi/graph", "gnnmpi/partition/metis", "gnnmpi/collective", "gnnmpi/dense", "runtime/cgo"},
		"gnnmpi/model":               {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/partition/metis", "gnnmpi/sampling", "gnnmpi/internal/openblas", "gonum.org/v1/netlib/blas/netlib", "runtime/cgo"},
		"gnnmpi/sampling":            {"gnnmpi/graph", "gnnmpi/partition/metis", "gnnmpi/dense", "gnnmpi/model", "gnnmpi/alltoall", "runtime/cgo"},
		"gnnmpi/alltoall":            {"gnnmpi/sampling", "gnnmpi/model", "gnnmpi/graph", "gnnmpi/partition/metis", "runtime/cgo"},
		"gnnmpi/pipe":                {"gnnmpi/graph", "gnnmpi/partition/metis", "runtime/cgo", "gnnmpi/sampling", "gnnmpi/alltoall", "gnnmpi/train", "gnnmpi/collective/mpi", "gnnmpi/collective/inproc"},
		"gnnmpi/train":               {"gnnmpi/collective/mpi", "gnnmpi/collective/inproc", "gnnmpi/internal/openblas", "gnnmpi/cli"},
		"gnnmpi/internal/openblas":   {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/model"},
		"gnnmpi/internal/rng":        {"gnnmpi/collective", "gnnmpi/graph"},
		"gnnmpi/internal/atomicfile": {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/train", "runtime/cgo"},
		"gnnmpi/internal/textfile":   {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/partition", "gnnmpi/sparse", "runtime/cgo"},
		// The distributed partitioner is pure Go; PT-Scotch is injected.
		"gnnmpi/partition/dist":            {"gnnmpi/graph", "gnnmpi/partition/metis", "gnnmpi/partition/ptscotch", "gnnmpi/collective/mpi", "gnnmpi/collective/inproc", "runtime/cgo"},
		"gnnmpi/collective/collectivetest": {"gnnmpi/collective/mpi", "gnnmpi/collective/inproc"},
		// spgemm → sparse, collective only (STYLE.md §2).
		"gnnmpi/spgemm": {"gnnmpi/graph", "gnnmpi/partition/metis", "runtime/cgo", "gnnmpi/dense", "gnnmpi/model", "gnnmpi/sampling", "gnnmpi/alltoall", "gnnmpi/train", "gnnmpi/collective/mpi", "gnnmpi/collective/inproc", "gnnmpi/gpu"},
		// The CUDA driver's package serves NCCL and cuBLAS/cuSPARSE with
		// its device memory (cuda.Memory) without importing them.
		"gnnmpi/gpu/cuda": {"gnnmpi/nccl", "gnnmpi/gpu/blas", "gnnmpi/gpu/gnn", "gnnmpi/gpu/tier"},
		// NCCL needs no GPU package to build or test.
		"gnnmpi/nccl":              {"gnnmpi/collective/mpi", "gnnmpi/collective/inproc", "gnnmpi/graph", "gnnmpi/gpu", "gnnmpi/gpu/cuda", "gnnmpi/gpu/internal/cudadl", "gnnmpi/model", "gnnmpi/train"},
		"gnnmpi/nccl/nccltest":     {"gnnmpi/collective/mpi", "gnnmpi/nccl", "runtime/cgo"},
		"gnnmpi/spgemm/spgemmtest": {"gnnmpi/collective/mpi", "gnnmpi/collective/inproc", "gnnmpi/graph", "gnnmpi/model", "gnnmpi/train"},
		// The device products sit beside gpu: no host kernels, no
		// communication; only the tests compare with dense and sparse.
		"gnnmpi/gpu/blas": {"gnnmpi/gpu", "gnnmpi/dense", "gnnmpi/sparse", "gnnmpi/model", "gnnmpi/collective", "gnnmpi/graph", "gnnmpi/internal/openblas"},
		// The device training step: model's shapes and dropout, no
		// communication (the trainer stages the gradients).
		"gnnmpi/gpu/gnn": {"gnnmpi/collective", "gnnmpi/graph", "gnnmpi/train", "gnnmpi/sampling", "gnnmpi/alltoall", "gnnmpi/internal/openblas"},
		// The tiered device feature store: the feature store and the CUDA
		// API, nothing of training or of a concrete backend.
		"gnnmpi/gpu/tier": {"gnnmpi/model", "gnnmpi/sampling", "gnnmpi/train", "gnnmpi/graph", "gnnmpi/collective/mpi", "gnnmpi/collective/inproc", "gnnmpi/gpu/blas", "gnnmpi/nccl"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		require.NoError(t, err, pkg)
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[d] = true
		}
		for _, b := range bad {
			require.False(t, deps[b], "%s must not import %s", pkg, b)
		}
	}
}

// Some packages may depend only on a short list (allow-lists, stricter than
// the forbidden lists above): what is not in the standard library must
// start with one of the package's allowed prefixes, and all but those in
// cgo stay pure Go. model has BLAS injected (no netlib); gpu reaches the driver only
// through go-nvml (cgo, dlopen at run time: nothing to link); partition
// needs a few pure-Go leaves, so packages that only need a book link no C.
func TestLeafDependencies(t *testing.T) {
	// These reach C: go-nvml, the cgo leaves (PT-Scotch, the dlopen
	// leaves of the GPU libraries), and what is built on them.
	cgoLeaves := []string{"gnnmpi/gpu", "gnnmpi/partition/ptscotch", "gnnmpi/internal/dl", "gnnmpi/nccl/internal/nccldl",
		"gnnmpi/gpu/internal/cudadl", "gnnmpi/gpu/internal/cublasdl"}
	// These are pure Go over a cgo leaf.
	overLeaves := []string{"gnnmpi/gpu/cuda", "gnnmpi/gpu/blas", "gnnmpi/gpu/gnn", "gnnmpi/nccl", "gnnmpi/gpu/tier"}
	allowed := map[string][]string{
		"gnnmpi/model":     {"gnnmpi/model", "gnnmpi/dense", "gnnmpi/sparse", "gonum.org/v1/gonum/"},
		"gnnmpi/gpu":       {"gnnmpi/gpu", "github.com/NVIDIA/go-nvml/"},
		"gnnmpi/partition": {"gnnmpi/partition", "gnnmpi/sparse", "gnnmpi/internal/rng", "gnnmpi/internal/textfile", "gnnmpi/internal/atomicfile"},
		"gnnmpi/dense":     {"gnnmpi/dense", "gonum.org/v1/gonum/"},
		"gnnmpi/sparse":    {"gnnmpi/sparse"},
		// The performance model is pure: the volume closed forms and gonum.
		"gnnmpi/perfmodel": {"gnnmpi/perfmodel", "gnnmpi/collective", "gonum.org/v1/gonum/"},
		// memlimit reads /proc and /sys for the loaders: nothing else.
		"gnnmpi/internal/memlimit": {"gnnmpi/internal/memlimit"},
		// The PT-Scotch binding is a cgo leaf: slices in, slices out.
		"gnnmpi/partition/ptscotch": {"gnnmpi/partition/ptscotch"},
		// dlopen/dlsym for the GPU libraries: nothing else.
		"gnnmpi/internal/dl": {"gnnmpi/internal/dl"},
		// The NCCL leaf: dl only.
		"gnnmpi/nccl/internal/nccldl": {"gnnmpi/nccl/internal/nccldl", "gnnmpi/internal/dl"},
		// cuBLAS/cuSPARSE: a cgo leaf over dl; the device products over it.
		"gnnmpi/gpu/internal/cublasdl": {"gnnmpi/gpu/internal/cublasdl", "gnnmpi/internal/dl"},
		"gnnmpi/gpu/blas":          {"gnnmpi/gpu/blas", "gnnmpi/gpu/internal/cublasdl", "gnnmpi/internal/dl", "gonum.org/v1/gonum/blas"},
		// The CUDA driver/NVRTC binding: a cgo leaf over internal/dl.
		"gnnmpi/gpu/internal/cudadl": {"gnnmpi/gpu/internal/cudadl", "gnnmpi/internal/dl"},
		// The CUDA API (pure Go over cudadl) and the embedded kernels.
		"gnnmpi/gpu/cuda":    {"gnnmpi/gpu/cuda", "gnnmpi/gpu/internal/cudadl", "gnnmpi/internal/dl"},
		"gnnmpi/gpu/kernels": {"gnnmpi/gpu/kernels"},
		// The device GraphSAGE step: pure Go over the device packages.
		"gnnmpi/gpu/gnn": {"gnnmpi/gpu/gnn", "gnnmpi/gpu/cuda", "gnnmpi/gpu/blas", "gnnmpi/gpu/kernels", "gnnmpi/model", "gnnmpi/dense", "gnnmpi/sparse",
			"gnnmpi/gpu/internal/cudadl", "gnnmpi/gpu/internal/cublasdl", "gnnmpi/internal/dl", "gonum.org/v1/gonum/"},
		"gnnmpi/gpu/tier": {"gnnmpi/gpu/tier", "gnnmpi/gpu/cuda", "gnnmpi/gpu/kernels", "gnnmpi/gpu/internal/cudadl", "gnnmpi/internal/dl",
			"gnnmpi/alltoall", "gnnmpi/collective", "gnnmpi/dense", "gnnmpi/sparse", "gnnmpi/partition", "gnnmpi/internal/", "gonum.org/v1/gonum/"},
	}
	for pkg, ok := range allowed {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		require.NoError(t, err, pkg)
		for _, d := range strings.Fields(string(out)) {
			if !slices.ContainsFunc(ok, func(prefix string) bool { return strings.HasPrefix(d, prefix) }) {
				t.Errorf("%s depends on %s; allowed: the standard library and %v", pkg, d, ok)
			}
		}
		if slices.Contains(cgoLeaves, pkg) {
			continue
		}
		if slices.Contains(overLeaves, pkg) {
			// It links C through a leaf but has no cgo of its own.
			cgo, err := exec.Command("go", "list", "-f", "{{.CgoFiles}}", pkg).Output()
			require.NoError(t, err, pkg)
			require.Equal(t, "[]", strings.TrimSpace(string(cgo)), "%s must have no cgo files", pkg)
			continue
		}
		std, err := exec.Command("go", "list", "-deps", pkg).Output()
		require.NoError(t, err, pkg)
		require.NotContains(t, strings.Fields(string(std)), "runtime/cgo", "%s must stay pure Go", pkg)
	}
}
