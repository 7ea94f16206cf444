package graph

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

// writeTemp writes content to a new file name in a temporary directory,
// gzip-compressed when name ends in ".gz", and returns its path.
func writeTemp(t testing.TB, name, content string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{name: content})
	return filepath.Join(dir, name)
}

func TestReadEdgeList(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                *sparse.CSR
	}{
		{
			name: "plain", file: "g.txt",
			content: "0 1\n1\t2\n2 0\n0 2\n",
			want:    &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 3, 4}, Indices: []int64{1, 2, 2, 0}},
		},
		{
			name: "comments and blanks", file: "g.txt",
			content: "# a comment\n% another\n\n   \n  0   1  \r\n# between\n1 0",
			want:    &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 2}, Indices: []int64{1, 0}},
		},
		{
			name: "weighted", file: "g.txt",
			content: "0 1 0.5\n1 0 -2\n1 1 1e3\n",
			want: &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 3}, Indices: []int64{1, 0, 1},
				Values: []float64{0.5, -2, 1000}},
		},
		{
			// The SNAP header sets n beyond the largest id.
			name: "snap header", file: "g.txt",
			content: "# Directed graph: x.txt\n# Nodes: 5 Edges: 2\n# FromNodeId\tToNodeId\n0\t1\n1\t0\n",
			want:    &sparse.CSR{NRows: 5, NCols: 5, Indptr: []int64{0, 1, 2, 2, 2, 2}, Indices: []int64{1, 0}},
		},
		{
			name: "gzip", file: "g.txt.gz",
			content: "0 1\n",
			want:    &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 1}, Indices: []int64{1}},
		},
		{
			name: "empty", file: "g.txt",
			content: "# nothing\n",
			want:    &sparse.CSR{NRows: 0, NCols: 0, Indptr: []int64{0}, Indices: []int64{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadEdgeList(writeTemp(t, tc.file, tc.content))
			require.NoError(t, err)
			require.NoError(t, got.Validate())
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadEdgeListErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		wantLine      int
		wantMsg       string
	}{
		{"one field", "0 1\n2\n", 2, "malformed edge"},
		{"four fields", "0 1 1 1\n", 1, "malformed edge"},
		{"mixed weights", "0 1 1.5\n1 0\n", 2, "earlier edges have 3"},
		{"non-numeric", "0 1\na b\n", 2, `malformed vertex id "a"`},
		{"negative", "0 -1\n", 1, "negative vertex id -1"},
		{"float id", "0 1.0\n", 1, "malformed vertex id"},
		{"bad weight", "0 1 x\n", 1, "malformed weight"},
		{"nan weight", "0 1 NaN\n", 1, "malformed weight"},
		{"beyond header", "# Nodes: 3 Edges: 1\n0 3\n", 2, "vertex id 3 out of range [0,3) declared on line 1"},
		{"bad header", "# Nodes: many\n0 1\n", 1, "malformed vertex count"},
		{"huge id", "0 99999999999\n", 0, "refusing to allocate"},
		{"beyond limit", "0 99999999999999\n", 1, "exceeds the limit"},
		{"huge header", "# Nodes: 1000000000000\n0 1\n", 0, "refusing to allocate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "g.txt", tc.content)
			a, err := ReadEdgeList(path)
			require.Error(t, err)
			assert.Nil(t, a)
			checkParseError(t, err, path, tc.wantLine, tc.wantMsg)
		})
	}
	_, err := ReadEdgeList(filepath.Join(t.TempDir(), "missing.txt"))
	checkParseError(t, err, "missing.txt", 0, "missing file")
}

// checkParseError checks that err is a *ParseError at path (a suffix) and
// line whose message contains msg.
func checkParseError(t *testing.T, err error, path string, line int, msg string) {
	t.Helper()
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "got %T: %v", err, err)
	assert.True(t, strings.HasSuffix(pe.Path, path), "got path: %s want: …%s", pe.Path, path)
	assert.Equal(t, line, pe.Line, "error: %v", err)
	assert.Contains(t, err.Error(), msg)
	if line > 0 {
		assert.Contains(t, err.Error(), pe.Path+":"+strconv.Itoa(line)+": ")
	}
}

func TestReadMatrixMarket(t *testing.T) {
	for _, tc := range []struct {
		name, file, content string
		want                *sparse.CSR
	}{
		{
			name: "pattern general", file: "a.mtx",
			content: "%%MatrixMarket matrix coordinate pattern general\n% comment\n\n2 3 3\n1 2\n2 3\n1 1\n",
			want:    &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 2, 3}, Indices: []int64{1, 0, 2}},
		},
		{
			name: "real general", file: "a.mtx",
			content: "%%MatrixMarket matrix coordinate real general\n2 2 2\n2 1 -1.5\n1 2 2e-3\n",
			want: &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 2}, Indices: []int64{1, 0},
				Values: []float64{2e-3, -1.5}},
		},
		{
			// Symmetric: off-diagonal entries go to both triangles, the
			// diagonal once. Keywords are case-insensitive.
			name: "integer symmetric", file: "a.mtx",
			content: "%%MatrixMarket MATRIX Coordinate integer Symmetric\n3 3 3\n2 1 5\n3 3 7\n3 1 -2\n",
			want: &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 3, 5}, Indices: []int64{1, 2, 0, 2, 0},
				Values: []float64{5, -2, 5, 7, -2}},
		},
		{
			name: "pattern symmetric gzip", file: "a.mtx.gz",
			content: "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 1\n2 1\n",
			want:    &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 2}, Indices: []int64{1, 0}},
		},
		{
			name: "empty", file: "a.mtx",
			content: "%%MatrixMarket matrix coordinate real general\n0 0 0\n",
			want:    &sparse.CSR{NRows: 0, NCols: 0, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadMatrixMarket(writeTemp(t, tc.file, tc.content))
			require.NoError(t, err)
			require.NoError(t, got.Validate())
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReadMatrixMarketErrors(t *testing.T) {
	const hdr = "%%MatrixMarket matrix coordinate pattern general\n"
	for _, tc := range []struct {
		name, content string
		wantLine      int
		wantMsg       string
	}{
		{"empty file", "", 0, "empty file"},
		{"no header", "2 2 1\n1 1\n", 1, "malformed header"},
		{"short header", "%%MatrixMarket matrix coordinate real\n", 1, "malformed header"},
		{"array", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "array format is not supported"},
		{"complex", "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex matrices are not supported"},
		{"hermitian", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1, "hermitian matrices are not supported"},
		{"skew", "%%MatrixMarket matrix coordinate real skew-symmetric\n1 1 0\n", 1, "skew-symmetric matrices are not supported"},
		{"vector", "%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "unsupported object"},
		{"unknown field", "%%MatrixMarket matrix coordinate quaternion general\n", 1, "unknown field"},
		{"missing size", hdr + "% only comments\n", 0, "missing size line"},
		{"bad size", hdr + "2 2\n", 2, "malformed size line"},
		{"negative size", hdr + "2 -2 1\n", 2, "malformed size line"},
		{"too few entries", hdr + "2 2 3\n1 1\n2 2\n", 0, "2 entries, but line 2 declares 3"},
		{"too many entries", hdr + "2 2 1\n1 1\n2 2\n", 4, "more entries than the 1 declared on line 2"},
		{"zero index", hdr + "2 2 1\n0 1\n", 3, "outside the 2×2 matrix"},
		{"row out of range", hdr + "2 2 1\n3 1\n", 3, "outside the 2×2 matrix"},
		{"col out of range", hdr + "2 2 1\n1 3\n", 3, "outside the 2×2 matrix"},
		{"missing value", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n", 3, "want 3 fields"},
		{"extra value", hdr + "2 2 1\n1 1 1\n", 3, "want 2 fields"},
		{"bad value", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 x\n", 3, "malformed value"},
		{"float for integer", "%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 1.5\n", 3, "malformed integer value"},
		{"bad index", hdr + "2 2 1\n1 b\n", 3, "integer indices"},
		{"symmetric not square", "%%MatrixMarket matrix coordinate pattern symmetric\n2 3 0\n", 2, "not square"},
		{"implausible rows", hdr + "1000000000000 2 0\n", 2, "refusing to allocate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "a.mtx", tc.content)
			a, err := ReadMatrixMarket(path)
			require.Error(t, err)
			assert.Nil(t, a)
			checkParseError(t, err, path, tc.wantLine, tc.wantMsg)
		})
	}
}

func TestWriteMatrixMarket(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		a          *sparse.CSR
		wantText   string // expected file content, if not gzip
	}{
		{
			name: "pattern", file: "p.mtx",
			a:        &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 2, 3}, Indices: []int64{2, 0, 1}},
			wantText: "%%MatrixMarket matrix coordinate pattern general\n2 3 3\n1 3\n1 1\n2 2\n",
		},
		{
			name: "real", file: "r.mtx",
			a: &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 2}, Indices: []int64{1, 0},
				Values: []float64{0.1, -3e300}},
			wantText: "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 0.1\n2 1 -3e+300\n",
		},
		{
			name: "gzip", file: "g.mtx.gz",
			a: &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 0, 1, 1}, Indices: []int64{2}, Values: []float64{1}},
		},
		{
			name: "empty", file: "e.mtx",
			a:        &sparse.CSR{NRows: 0, NCols: 0, Indptr: []int64{0}, Indices: []int64{}},
			wantText: "%%MatrixMarket matrix coordinate pattern general\n0 0 0\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			require.NoError(t, WriteMatrixMarket(path, tc.a))
			if tc.wantText != "" {
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, tc.wantText, string(b))
			}
			got, err := ReadMatrixMarket(path)
			require.NoError(t, err)
			assert.Equal(t, tc.a, got)
			// No temporary files are left behind.
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, ents, 1)
		})
	}

	// Invalid input writes nothing.
	dir := t.TempDir()
	bad := &sparse.CSR{NRows: 1, NCols: 1, Indptr: []int64{0, 1}, Indices: []int64{5}}
	assert.Error(t, WriteMatrixMarket(filepath.Join(dir, "bad.mtx"), bad))
	nan := &sparse.CSR{NRows: 1, NCols: 1, Indptr: []int64{0, 1}, Indices: []int64{0}, Values: []float64{nan()}}
	assert.Error(t, WriteMatrixMarket(filepath.Join(dir, "nan.mtx"), nan))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, ents)
}

func nan() float64 {
	v, _ := strconv.ParseFloat("NaN", 64)
	return v
}

// TestMatrixMarketCora round-trips Cora's adjacency.
func TestMatrixMarketCora(t *testing.T) {
	d := loadCora(t)
	path := filepath.Join(t.TempDir(), "cora.mtx.gz")
	require.NoError(t, WriteMatrixMarket(path, d.Adj))
	got, err := ReadMatrixMarket(path)
	require.NoError(t, err)
	assert.Equal(t, d.Adj, got)
}
