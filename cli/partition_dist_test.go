package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// distInputs writes the binary datasets of the distributed partition
// tests: Cora (sparse features, symmetric) and an SBM graph made directed,
// weighted and with repeated edges (dense features).
func distInputs(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	cora, err := graph.Load(filepath.Join("..", "data", "cora"), graph.ReadOptions{FeatureFormat: graph.FeatureCSR})
	require.NoError(t, err)
	sbm, err := graph.SBM(graph.DefaultSBM(400))
	require.NoError(t, err)
	var r, c []int64
	var w []float64
	for i := range sbm.Adj.NRows {
		for k, j := range sbm.Adj.Row(i) {
			if (i+j+int64(k))%3 == 0 {
				continue
			}
			r, c, w = append(r, i), append(c, j), append(w, float64(i-j))
			if j%7 == 0 {
				r, c, w = append(r, i), append(c, j), append(w, 0.5)
			}
		}
	}
	sbm.Adj, err = sparse.FromCOO(sbm.NumNodes, sbm.NumNodes, r, c, w)
	require.NoError(t, err)
	out := map[string]string{"cora": filepath.Join(dir, "cora.gnn"), "sbm": filepath.Join(dir, "sbm.gnn")}
	require.NoError(t, graph.WriteBinary(out["cora"], cora))
	require.NoError(t, graph.WriteBinary(out["sbm"], sbm))
	return out
}

// assertSameParts checks that the partitioned datasets got and want hold
// the same part files, byte for byte, and the same manifest apart from the
// method and directory.
func assertSameParts(t *testing.T, got, want string) {
	t.Helper()
	mg, err := graph.ReadPartManifest(got)
	require.NoError(t, err)
	mw, err := graph.ReadPartManifest(want)
	require.NoError(t, err)
	mg.Method, mg.Dir, mw.Method, mw.Dir = "", "", "", ""
	assert.Equal(t, mw, mg)
	for q := range mw.Parts {
		name := graph.PartFileName(q)
		a, err := os.ReadFile(filepath.Join(got, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(want, name))
		require.NoError(t, err)
		assert.True(t, string(a) == string(b), "%s differs", name)
	}
	_, err = graph.LoadParts(got, mg, 0, mg.Parts, graph.PartReadOptions{})
	require.NoError(t, err)
}

// TestPartitionBlockDistributed partitions Cora and a weighted directed
// SBM graph with --method block on 2 to 4 in-process ranks, which read and
// write from their row blocks, and checks that the partitioned dataset
// equals the one the single-rank writer makes from the book of the same
// run (part files byte for byte), for every feature format and for more
// parts than ranks (a rank writes several parts) and fewer (some write
// none).
func TestPartitionBlockDistributed(t *testing.T) {
	for name, data := range distInputs(t) {
		for _, tc := range []struct {
			p, k   int
			format string
		}{{2, 2, "auto"}, {3, 7, "auto"}, {4, 4, "dense"}, {4, 2, "csr"}} {
			t.Run(fmt.Sprintf("%s/p=%d/k=%d/%s", name, tc.p, tc.k, tc.format), func(t *testing.T) {
				dir := t.TempDir()
				out, book, ref := filepath.Join(dir, "dist"), filepath.Join(dir, "book.txt"), filepath.Join(dir, "ref")
				_, se, err := runCmdErr(t, tc.p, "partition", "--method", "block", "--parts", fmt.Sprint(tc.k), "--data", data,
					"--out", out, "--book", book, "--feature-format", tc.format)
				require.NoError(t, err)
				assert.Contains(t, se, "partition: rank 0 holds rows [0,", "the distributed path ran")
				b, err := partition.Read(book)
				require.NoError(t, err)
				assert.Equal(t, partition.Block(b.NumNodes(), tc.k).Sizes(), b.Sizes())
				_, _, err = runCmdErr(t, 1, "partition", "--method", book, "--parts", fmt.Sprint(tc.k), "--data", data,
					"--out", ref, "--feature-format", tc.format)
				require.NoError(t, err)
				assertSameParts(t, out, ref)
			})
		}
	}
}

// TestPartitionDistributedErrors checks that an unwritable output
// directory and a damaged input fail every rank with a message naming the
// path, and leave no manifest.
func TestPartitionDistributedErrors(t *testing.T) {
	data := distInputs(t)["cora"]
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, _, err := runCmdErr(t, 3, "partition", "--method", "block", "--parts", "3", "--data", data, "--out", filepath.Join(file, "parts"))
	require.ErrorContains(t, err, filepath.Join(file, "parts"))

	// More parts than vertices, refused on every rank before anything is
	// read, as the serial path refuses them.
	n, err := graph.OpenBinaryRows(data)
	require.NoError(t, err)
	nodes := n.NumNodes()
	require.NoError(t, n.Close())
	_, _, err = runCmdErr(t, 3, "partition", "--method", "block", "--parts", fmt.Sprint(nodes+1), "--data", data, "--out", filepath.Join(dir, "many"))
	require.EqualError(t, err, fmt.Sprintf("partition: --parts %d is more than the %d vertices of %s: every part needs one", nodes+1, nodes, data))
	assert.False(t, graph.IsPartDir(filepath.Join(dir, "many")))

	// A label out of range, found by the rank that reads it.
	b, err := os.ReadFile(data)
	require.NoError(t, err)
	bad := filepath.Join(dir, "bad.gnn")
	r, err := graph.OpenBinaryRows(data)
	require.NoError(t, err)
	labels, err := r.Labels(0, r.NumNodes())
	require.NoError(t, err)
	require.NoError(t, r.Close())
	// Find the labels section by its content: the last vertex's label
	// is damaged, so only the last rank sees it.
	at := -1
	for k := 0; k+4*len(labels) <= len(b); k += 4096 {
		if string(b[k:k+4*len(labels)]) == string(int32Bytes(labels)) {
			at = k
		}
	}
	require.GreaterOrEqual(t, at, 0)
	copy(b[at+4*(len(labels)-1):], []byte{0x7f, 0x7f, 0x7f, 0x7f})
	require.NoError(t, os.WriteFile(bad, b, 0o644))
	out := filepath.Join(dir, "out")
	_, _, err = runCmdErr(t, 3, "partition", "--method", "block", "--parts", "3", "--data", bad, "--out", out)
	require.ErrorContains(t, err, bad)
	assert.False(t, graph.IsPartDir(out), "a failed run leaves no manifest")
}

// int32Bytes returns the little-endian bytes of s.
func int32Bytes(s []int32) []byte {
	b := make([]byte, 0, 4*len(s))
	for _, v := range s {
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return b
}
