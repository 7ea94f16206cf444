package mpitest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/partition/dist"
)

var cutLine = regexp.MustCompile(`edge cut (\d+) of (\d+)`)

// TestPartitionPTScotch partitions Cora with PT-Scotch under mpirun at
// np = 1..4, in both threading modes, and checks that the book is valid
// (every vertex in [0,K), no empty part, vertex balance within PT-Scotch's
// 3% tolerance), that the distributed edge cut printed equals the cut of
// the book on the whole graph, and that a run is repeated exactly for the
// same seed and rank count (and does not depend on the threading mode).
// A 3-vertex graph at np 4 leaves a rank without rows.
func TestPartitionPTScotch(t *testing.T) {
	skipUnlessMPI(t)
	needOpenMPI(t, noPTScotchUnderMPICH)
	dir := t.TempDir()
	cora := filepath.Join(dir, "cora.gnn")
	r := local(t, "convert", "--data", "data/cora", "--out", cora)
	require.Zero(t, r.code, r.stderr)
	d, err := graph.Load(cora, graph.ReadOptions{NoFeatures: true, Keep: func(int64) bool { return true }})
	require.NoError(t, err)
	const k = 4
	for np := 1; np <= 4; np++ {
		var first []byte
		for i, th := range []string{"multiple", "multiple", "funneled"} {
			t.Run(fmt.Sprintf("np=%d/%d-%s", np, i, th), func(t *testing.T) {
				book := filepath.Join(dir, fmt.Sprintf("book-%d-%d.txt", np, i))
				r := mpirun(t, 2*time.Minute, np, bin, "--mpi-thread", th, "partition", "--method", "ptscotch",
					"--parts", fmt.Sprint(k), "--data", cora, "--book", book, "--seed", "3", "--check-graph")
				require.Zero(t, r.code, r.stderr)
				b, err := partition.Read(book)
				require.NoError(t, err)
				require.Equal(t, d.NumNodes, b.NumNodes())
				require.Equal(t, k, b.Parts)
				require.Equal(t, "ptscotch", b.Method)
				for q, s := range b.Sizes() {
					assert.Positive(t, s, "part %d is empty", q)
				}
				// PT-Scotch's tolerance (3%), plus one vertex of granularity.
				assert.LessOrEqual(t, dist.Imbalance(b.Sizes()), 1.03+float64(k)/float64(d.NumNodes), "sizes %v", b.Sizes())
				m := cutLine.FindStringSubmatch(r.stdout)
				require.NotNil(t, m, r.stdout)
				cut, _ := strconv.ParseInt(m[1], 10, 64)
				assert.Equal(t, b.EdgeCut(d.Adj), cut)
				assert.Equal(t, strconv.FormatInt(d.Adj.NNZ(), 10), m[2])
				got, err := os.ReadFile(book)
				require.NoError(t, err)
				if first == nil {
					first = got
				} else {
					assert.Equal(t, first, got, "the book differs between runs of the same seed at np %d", np)
				}
			})
		}
	}

	// A rank without rows.
	tiny := filepath.Join(dir, "tiny.txt")
	require.NoError(t, os.WriteFile(tiny, []byte("0 1\n1 2\n2 0\n"), 0o644))
	r = local(t, "convert", "--data", tiny, "--out", tiny+".gnn", "--symmetrize")
	require.Zero(t, r.code, r.stderr)
	book := filepath.Join(dir, "tiny-book.txt")
	r = mpirun(t, time.Minute, 4, bin, "partition", "--method", "ptscotch", "--parts", "2", "--data", tiny+".gnn", "--book", book, "--check-graph")
	require.Zero(t, r.code, r.stderr)
	b, err := partition.Read(book)
	require.NoError(t, err)
	sizes := b.Sizes()
	slices.Sort(sizes)
	assert.Equal(t, []int64{1, 2}, sizes)
}

// TestPartitionPTScotchBadInput checks that a dataset PT-Scotch cannot read
// in row blocks fails every rank with a message naming it, and that
// in-process ranks refuse the method.
func TestPartitionPTScotchBadInput(t *testing.T) {
	skipUnlessMPI(t)
	needOpenMPI(t, noPTScotchUnderMPICH)
	book := filepath.Join(t.TempDir(), "book.txt")
	r := mpirun(t, time.Minute, 3, bin, "partition", "--method", "ptscotch", "--data", "data/cora", "--book", book)
	require.NotZero(t, r.code)
	assert.Contains(t, r.stderr, "convert data/cora first")
	r = mpirun(t, time.Minute, 2, bin, "partition", "--method", "ptscotch", "--data", "no/such.gnn", "--book", book)
	require.NotZero(t, r.code)
	assert.Contains(t, r.stderr, "no/such.gnn")
	r = local(t, "--ranks", "2", "partition", "--method", "ptscotch", "--data", "data/cora", "--book", book)
	require.NotZero(t, r.code)
	assert.Contains(t, r.stderr, "needs the MPI backend")
	_, err := os.Stat(book)
	assert.True(t, os.IsNotExist(err), "no book is written")
}

// TestPartitionPTScotchOut partitions Cora with PT-Scotch under mpirun at
// np 2 and 4 and writes the partitioned dataset from the ranks' row blocks
// (--out), and the book (--book); the part files must equal, byte for
// byte, those the single-rank writer makes from that book, and the
// manifest must match apart from the method. --method block at np 3 does
// the same without PT-Scotch.
func TestPartitionPTScotchOut(t *testing.T) {
	skipUnlessMPI(t)
	dir := t.TempDir()
	cora := filepath.Join(dir, "cora.gnn")
	r := local(t, "convert", "--data", "data/cora", "--out", cora)
	require.Zero(t, r.code, r.stderr)
	for _, tc := range []struct {
		method string
		np, k  int
	}{{"ptscotch", 2, 4}, {"ptscotch", 4, 4}, {"ptscotch", 4, 6}, {"block", 3, 4}} {
		t.Run(fmt.Sprintf("%s/np=%d/k=%d", tc.method, tc.np, tc.k), func(t *testing.T) {
			if tc.method == "ptscotch" {
				needOpenMPI(t, noPTScotchUnderMPICH)
			}
			out := filepath.Join(dir, fmt.Sprintf("%s-%d-%d", tc.method, tc.np, tc.k))
			book, ref := out+".book", out+".ref"
			r := mpirun(t, 2*time.Minute, tc.np, bin, "partition", "--method", tc.method, "--parts", fmt.Sprint(tc.k),
				"--data", cora, "--out", out, "--book", book)
			require.Zero(t, r.code, r.stderr)
			r = local(t, "partition", "--method", book, "--parts", fmt.Sprint(tc.k), "--data", cora, "--out", ref)
			require.Zero(t, r.code, r.stderr)
			mg, err := graph.ReadPartManifest(out)
			require.NoError(t, err)
			mw, err := graph.ReadPartManifest(ref)
			require.NoError(t, err)
			assert.Equal(t, tc.method, mg.Method)
			mg.Method, mg.Dir, mw.Method, mw.Dir = "", "", "", ""
			assert.Equal(t, mw, mg)
			for q := range tc.k {
				a, err := os.ReadFile(filepath.Join(out, graph.PartFileName(q)))
				require.NoError(t, err)
				b, err := os.ReadFile(filepath.Join(ref, graph.PartFileName(q)))
				require.NoError(t, err)
				assert.True(t, string(a) == string(b), "part %d differs", q)
			}
		})
	}

	// An unwritable directory fails every rank, naming it.
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	method := "ptscotch"
	if impl.name != "openmpi" {
		method = "block" // noPTScotchUnderMPICH
	}
	r = mpirun(t, time.Minute, 2, bin, "partition", "--method", method, "--parts", "2", "--data", cora, "--out", filepath.Join(file, "parts"))
	require.NotZero(t, r.code)
	assert.Contains(t, r.stderr, filepath.Join(file, "parts"))
}

// TestPartitionPTScotchMPICH checks that a binary built for MPICH, which has
// no PT-Scotch (noPTScotchUnderMPICH), refuses --method ptscotch on every
// rank with a message that names the reason and the alternatives.
func TestPartitionPTScotchMPICH(t *testing.T) {
	skipUnlessMPI(t)
	if impl.name != "mpich" {
		t.Skipf("checks the MPICH build; the MPI under test is %s (GNNMPI_MPI=mpich)", impl.name)
	}
	dir := t.TempDir()
	cora := filepath.Join(dir, "cora.gnn")
	r := local(t, "convert", "--data", "data/cora", "--out", cora)
	require.Zero(t, r.code, r.stderr)
	book := filepath.Join(dir, "book.txt")
	r = mpirun(t, time.Minute, 2, bin, "partition", "--method", "ptscotch", "--parts", "2", "--data", cora, "--book", book)
	require.NotZero(t, r.code)
	assert.Contains(t, r.stderr, "built against MPICH")
	assert.Contains(t, r.stderr, "--method block or metis")
	_, err := os.Stat(book)
	assert.True(t, os.IsNotExist(err), "no book is written")
}
