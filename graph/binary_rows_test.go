package graph

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

// TestBinaryRowsMatchWhole reads Cora and a small weighted graph in row
// blocks and compares each block with the rows of the whole adjacency.
func TestBinaryRowsMatchWhole(t *testing.T) {
	cora, d := writeCoraBinary(t)
	weighted := filepath.Join(t.TempDir(), "w.gnn")
	w := &Dataset{Name: "w", NumNodes: 3, Splits: map[string]Split{},
		Adj: &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 2, 3}, Indices: []int64{2, 1, 0}, Values: []float64{0.5, -1, 3}}}
	require.NoError(t, WriteBinary(weighted, w))
	for _, tc := range []struct {
		path string
		adj  *sparse.CSR
	}{{cora, d.Adj}, {weighted, w.Adj}} {
		r, err := OpenBinaryRows(tc.path)
		require.NoError(t, err)
		n := r.NumNodes()
		require.Equal(t, tc.adj.NRows, n)
		require.Equal(t, tc.adj.NNZ(), r.NumEdges())
		for _, p := range []int64{1, 2, 3, 7} {
			for q := range p {
				lo, hi := q*n/p, (q+1)*n/p
				got, err := r.Rows(lo, hi)
				require.NoError(t, err)
				rows := make([]int64, 0, hi-lo)
				for g := lo; g < hi; g++ {
					rows = append(rows, g)
				}
				want := sparse.SelectRows(tc.adj, rows)
				assert.Equal(t, want, got, "%s rows [%d,%d)", tc.path, lo, hi)
			}
		}
		require.NoError(t, r.Close())
	}
}

// TestBinaryRowsCorrupt damages a column and a row pointer, which a block
// read cannot checksum, and checks that the damage is found and the file
// named.
func TestBinaryRowsCorrupt(t *testing.T) {
	path, d := writeCoraBinary(t)
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	meta := readMeta(t, orig)
	sec := map[string]binSection{}
	for _, s := range meta.Sections {
		sec[s.Name] = s
	}
	n := d.NumNodes
	for _, tc := range []struct {
		name    string
		section string
		elem    int64
		value   int64
		want    string
	}{
		{"column", "indices", 5, n + 3, "section indices: column"},
		{"negative column", "indices", 0, -1, "section indices: column"},
		{"row pointer", "indptr", 10, 1 << 40, "section indptr: corrupt row pointer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), orig...)
			binary.LittleEndian.PutUint64(b[sec[tc.section].Offset+8*tc.elem:], uint64(tc.value))
			p := filepath.Join(t.TempDir(), "bad.gnn")
			require.NoError(t, os.WriteFile(p, b, 0o644))
			r, err := OpenBinaryRows(p)
			require.NoError(t, err, "the header and metadata are intact")
			defer r.Close()
			_, err = r.Rows(0, n)
			require.Error(t, err)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// A file that is not a binary dataset, or is missing, is named.
	_, err = OpenBinaryRows(filepath.Join("testdata", "no-such.gnn"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such.gnn")
	p := filepath.Join(t.TempDir(), "text.gnn")
	require.NoError(t, os.WriteFile(p, []byte("not binary"), 0o644))
	_, err = OpenBinaryRows(p)
	assert.ErrorIs(t, err, ErrNotBinary)
	assert.Contains(t, err.Error(), p)
}
