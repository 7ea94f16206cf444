package graph

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// coraDir is the repository's copy of Cora in the OGB raw layout.
const coraDir = "../data/cora"

var (
	coraOnce sync.Once
	cora     *Dataset
	coraErr  error
)

// loadCora reads Cora once per test binary, with dense features. Callers
// must not modify it.
func loadCora(t testing.TB) *Dataset {
	t.Helper()
	coraOnce.Do(func() { cora, coraErr = ReadOGB(coraDir, ReadOptions{FeatureFormat: FeatureDense}) })
	require.NoError(t, coraErr)
	return cora
}

func TestReadOGBCora(t *testing.T) {
	d := loadCora(t)
	require.NoError(t, d.Validate())
	// Published Cora statistics (../shared/data/README.md, PyG Planetoid).
	assert.Equal(t, "cora", d.Name)
	assert.Equal(t, int64(2708), d.NumNodes)
	assert.Equal(t, int64(10556), d.NumEdges())
	assert.Equal(t, 1433, d.NumFeatures())
	assert.Equal(t, 7, d.NumClasses)
	assert.Nil(t, d.Rows)
	require.Contains(t, d.Splits, "planetoid")
	s := d.Splits["planetoid"]
	assert.Len(t, s.Train, 140)
	assert.Len(t, s.Valid, 500)
	assert.Len(t, s.Test, 1000)
	name, _, ok := d.DefaultSplit()
	assert.True(t, ok)
	assert.Equal(t, "planetoid", name)

	// Class counts as in PyG.
	counts := make([]int, d.NumClasses)
	for _, l := range d.Labels {
		counts[l]++
	}
	assert.Equal(t, []int{351, 217, 418, 818, 426, 298, 180}, counts)

	// Cora's features are 0/1 and its edge file is sorted by (src, dst).
	ones := 0
	for _, v := range d.Feat.Data {
		if v != 0 && v != 1 {
			t.Fatalf("feature %v is not 0/1", v)
		}
		if v == 1 {
			ones++
		}
	}
	assert.Equal(t, 49216, ones) // nnz of Planetoid Cora's x, allx and tx
	assert.True(t, d.Adj.RowsSorted())
	// Planetoid train ids are 0..139.
	for i, v := range s.Train {
		if v != int64(i) {
			t.Fatalf("train[%d] = %d", i, v)
		}
	}
}

// TestReadOGBKeep checks that a partial load holds exactly the kept rows
// of a full load, for several selections.
func TestReadOGBKeep(t *testing.T) {
	full := loadCora(t)
	for _, tc := range []struct {
		name string
		keep func(int64) bool
	}{
		{"even", func(g int64) bool { return g%2 == 0 }},
		{"block", func(g int64) bool { return g >= 1000 && g < 1700 }},
		{"none", func(int64) bool { return false }},
		{"all", func(int64) bool { return true }},
		{"last", func(g int64) bool { return g == 2707 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ReadOGB(coraDir, ReadOptions{Keep: tc.keep, FeatureFormat: FeatureDense})
			require.NoError(t, err)
			require.NoError(t, d.Validate())
			checkRowsOf(t, full, d, tc.keep)
		})
	}
}

// checkRowsOf checks that part holds exactly the rows of full selected by
// keep, and everything global unchanged.
func checkRowsOf(t *testing.T, full, part *Dataset, keep func(int64) bool) {
	t.Helper()
	var want []int64
	for g := int64(0); g < full.NumNodes; g++ {
		if keep(g) {
			want = append(want, g)
		}
	}
	require.NotNil(t, part.Rows)
	if len(want) == 0 {
		assert.Empty(t, part.Rows)
	} else {
		assert.Equal(t, want, part.Rows)
	}
	assert.Equal(t, full.NumNodes, part.NumNodes)
	assert.Equal(t, full.NumClasses, part.NumClasses)
	assert.Equal(t, full.Splits, part.Splits)
	assert.Equal(t, full.Adj.NCols, part.Adj.NCols)
	require.Equal(t, int64(len(want)), part.Adj.NRows)
	for k, g := range want {
		assert.Equal(t, full.Adj.Row(g), part.Adj.Row(int64(k)), "row %d", g)
		if full.Feat != nil {
			assert.Equal(t, full.Feat.Row(int(g)), part.Feat.Row(k), "features of %d", g)
		}
		if full.Labels != nil {
			assert.Equal(t, full.Labels[g], part.Labels[k], "label of %d", g)
		}
	}
	if full.Feat != nil {
		assert.Equal(t, len(want), part.Feat.Rows)
		assert.Equal(t, full.Feat.Cols, part.Feat.Cols)
	}
}

func TestReadOGBOptions(t *testing.T) {
	d, err := ReadOGB(coraDir, ReadOptions{NoFeatures: true, NoLabels: true})
	require.NoError(t, err)
	assert.Nil(t, d.Feat)
	assert.Nil(t, d.Labels)
	assert.Equal(t, 0, d.NumClasses)
	assert.Equal(t, int64(10556), d.NumEdges())
	require.NoError(t, d.Validate())
}

// TestWriteOGBRoundTrip writes Cora and reads it back.
func TestWriteOGBRoundTrip(t *testing.T) {
	want := loadCora(t)
	dir := filepath.Join(t.TempDir(), "cora")
	require.NoError(t, WriteOGB(dir, want))
	got, err := ReadOGB(dir, ReadOptions{FeatureFormat: FeatureDense})
	require.NoError(t, err)
	assertSameDataset(t, want, got)

	// Files are byte-reproducible: gzip header with mtime 0 and no name.
	b, err := os.ReadFile(filepath.Join(dir, "raw", "edge.csv.gz"))
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	assert.True(t, zr.ModTime.IsZero() || zr.ModTime.Unix() == 0)
	assert.Empty(t, zr.Name)
	// The edge file is identical to the original's content.
	assert.Equal(t, gunzipFile(t, filepath.Join(coraDir, "raw", "edge.csv.gz")), gunzipFile(t, filepath.Join(dir, "raw", "edge.csv.gz")))
}

func gunzipFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	var out bytes.Buffer
	_, err = out.ReadFrom(zr)
	require.NoError(t, err)
	return out.String()
}

// assertSameDataset compares everything but the name.
func assertSameDataset(t *testing.T, want, got *Dataset) {
	t.Helper()
	require.NoError(t, got.Validate())
	assert.Equal(t, want.NumNodes, got.NumNodes)
	assert.Equal(t, want.Rows, got.Rows)
	assert.Equal(t, want.Adj, got.Adj)
	assert.Equal(t, want.Feat, got.Feat)
	assert.Equal(t, want.FeatCSR, got.FeatCSR)
	assert.Equal(t, want.Labels, got.Labels)
	assert.Equal(t, want.NumClasses, got.NumClasses)
	assert.Equal(t, want.Splits, got.Splits)
}

// TestWriteOGBSmall round-trips a small dataset with real-valued features,
// no labels and an unsorted split, and checks that stale tables go away.
func TestWriteOGBSmall(t *testing.T) {
	d := &Dataset{
		Name:     "small",
		NumNodes: 3,
		Adj:      &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 2, 3}, Indices: []int64{2, 1, 0}},
		Feat:     &dense.Matrix{Rows: 3, Cols: 2, Data: []float32{0.1, -2.5e-8, 3, 1e30, -0, 16777217}},
		Splits:   map[string]Split{"a": {Train: []int64{0}, Valid: []int64{}, Test: []int64{1, 2}}},
	}
	dir := t.TempDir()
	// A previous dataset with labels and another split.
	prev := &Dataset{NumNodes: 3, Adj: d.Adj, Labels: []int32{0, 1, 0}, NumClasses: 2,
		Splits: map[string]Split{"old": {Train: []int64{}, Valid: []int64{}, Test: []int64{}}}}
	require.NoError(t, WriteOGB(dir, prev))
	require.NoError(t, WriteOGB(dir, d))
	got, err := ReadOGB(dir, ReadOptions{})
	require.NoError(t, err)
	assertSameDataset(t, d, got)
	assert.NoFileExists(t, filepath.Join(dir, "raw", "node-label.csv.gz"))
	assert.NoDirExists(t, filepath.Join(dir, "split", "old"))

	for _, tc := range []struct {
		name string
		d    *Dataset
	}{
		{"partial", &Dataset{NumNodes: 3, Rows: []int64{1}, Adj: &sparse.CSR{NRows: 1, NCols: 3, Indptr: []int64{0, 0}}}},
		{"weighted", &Dataset{NumNodes: 1, Adj: &sparse.CSR{NRows: 1, NCols: 1, Indptr: []int64{0, 1}, Indices: []int64{0}, Values: []float64{2}}}},
		{"invalid", &Dataset{NumNodes: 2, Adj: &sparse.CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 0}}}},
		{"bad split name", &Dataset{NumNodes: 1, Adj: &sparse.CSR{NRows: 1, NCols: 1, Indptr: []int64{0, 0}}, Splits: map[string]Split{"../x": {}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Error(t, WriteOGB(t.TempDir(), tc.d))
		})
	}
}

// validFiles is a small valid dataset in the OGB raw layout, 4 vertices.
func validFiles() map[string]string {
	return map[string]string{
		"raw/num-node-list.csv.gz":  "4\n",
		"raw/num-edge-list.csv.gz":  "4\n",
		"raw/edge.csv.gz":           "0,1\n1,0\n2,3\n3,2\n",
		"raw/node-feat.csv.gz":      "1,0\n0,1\n0.5,2\n-1,3e2\n",
		"raw/node-label.csv.gz":     "0\n1\n2\n1\n",
		"split/s/train.csv.gz":      "0\n1\n",
		"split/s/valid.csv.gz":      "2\n",
		"split/s/test.csv.gz":       "3\n",
		"split/other/train.csv":     "3\n1\n", // plain and unsorted
		"split/other/valid.csv":     "",
		"split/other/test.csv.gz":   "0\n",
		"split/README-not-a-split":  "x",
		"raw/unrelated-file.txt.gz": "ignored",
	}
}

// writeFiles writes files (gzip-compressed when the name ends in .gz) under
// dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		b := []byte(content)
		if strings.HasSuffix(name, ".gz") {
			b = gzipBytes(t, b)
		}
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
}

func gzipBytes(t testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestReadOGBSmall(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, validFiles())
	d, err := ReadOGB(dir, ReadOptions{})
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	assert.Equal(t, int64(4), d.NumNodes)
	assert.Equal(t, []int64{0, 1, 2, 3, 4}, d.Adj.Indptr)
	assert.Equal(t, []int64{1, 0, 3, 2}, d.Adj.Indices)
	assert.Equal(t, []float32{1, 0, 0, 1, 0.5, 2, -1, 300}, d.Feat.Data)
	assert.Equal(t, []int32{0, 1, 2, 1}, d.Labels)
	assert.Equal(t, 3, d.NumClasses)
	assert.Equal(t, map[string]Split{
		"s":     {Train: []int64{0, 1}, Valid: []int64{2}, Test: []int64{3}},
		"other": {Train: []int64{1, 3}, Valid: []int64{}, Test: []int64{0}},
	}, d.Splits)

	// Keep only vertex 2: NumClasses still counts the whole file.
	d, err = ReadOGB(dir, ReadOptions{Keep: func(g int64) bool { return g == 2 }})
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	assert.Equal(t, []int64{2}, d.Rows)
	assert.Equal(t, []int64{3}, d.Adj.Indices)
	assert.Equal(t, []int32{2}, d.Labels)
	assert.Equal(t, []float32{0.5, 2}, d.Feat.Data)
	assert.Equal(t, 3, d.NumClasses)
}

// TestReadOGBUnsortedEdges checks that unsorted edge files give the same
// matrix as the stable counting sort, with and without Keep.
func TestReadOGBUnsortedEdges(t *testing.T) {
	files := validFiles()
	files["raw/edge.csv.gz"] = "3,0\n0,1\n3,2\n1,0\n0,3\n"
	files["raw/num-edge-list.csv.gz"] = "5\n"
	dir := t.TempDir()
	writeFiles(t, dir, files)
	d, err := ReadOGB(dir, ReadOptions{})
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	assert.Equal(t, []int64{0, 2, 3, 3, 5}, d.Adj.Indptr)
	assert.Equal(t, []int64{1, 3, 0, 0, 2}, d.Adj.Indices)

	d, err = ReadOGB(dir, ReadOptions{Keep: func(g int64) bool { return g != 1 }})
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	assert.Equal(t, []int64{0, 2, 3}, d.Rows)
	assert.Equal(t, []int64{0, 2, 2, 4}, d.Adj.Indptr)
	assert.Equal(t, []int64{1, 3, 0, 2}, d.Adj.Indices)
}

// TestReadOGBOptionalFiles checks that features, labels, splits and
// num-edge-list may be absent.
func TestReadOGBOptionalFiles(t *testing.T) {
	files := validFiles()
	for _, k := range []string{"raw/node-feat.csv.gz", "raw/node-label.csv.gz", "raw/num-edge-list.csv.gz"} {
		delete(files, k)
	}
	for k := range files {
		if strings.HasPrefix(k, "split/") {
			delete(files, k)
		}
	}
	dir := t.TempDir()
	writeFiles(t, dir, files)
	d, err := ReadOGB(dir, ReadOptions{})
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	assert.Nil(t, d.Feat)
	assert.Nil(t, d.Labels)
	assert.Equal(t, 0, d.NumClasses)
	assert.Empty(t, d.Splits)
	assert.Equal(t, int64(4), d.NumEdges())

	// Without per-vertex tables, the vertex count is bounded by the edges.
	writeFiles(t, dir, map[string]string{"raw/num-node-list.csv.gz": "999999999999\n"})
	_, err = ReadOGB(dir, ReadOptions{Keep: func(int64) bool { return true }})
	checkParseError(t, err, "num-node-list.csv.gz", 1, "implausible")
}

// TestReadOGBErrors writes one malformed file into an otherwise valid
// dataset and checks that the error names the file and line.
func TestReadOGBErrors(t *testing.T) {
	const absent = "\x00absent"
	for _, tc := range []struct {
		name     string
		file     string // file to replace (absent: delete)
		content  string
		corrupt  func([]byte) []byte // applied to the file's bytes, if set
		wantFile string              // path suffix the error must name
		wantLine int
		wantMsg  string
	}{
		{name: "edge malformed", file: "raw/edge.csv.gz", content: "0,1\n1;0\n", wantLine: 2, wantMsg: "malformed edge"},
		{name: "edge non-numeric", file: "raw/edge.csv.gz", content: "0,1\nx,0\n", wantLine: 2, wantMsg: "malformed edge"},
		{name: "edge out of range", file: "raw/edge.csv.gz", content: "0,1\n1,0\n2,99999\n", wantLine: 3, wantMsg: "vertex id 99999 out of range [0,4)"},
		{name: "edge src out of range", file: "raw/edge.csv.gz", content: "4,0\n", wantLine: 1, wantMsg: "vertex id 4 out of range"},
		{name: "edge negative", file: "raw/edge.csv.gz", content: "0,-1\n", wantLine: 1, wantMsg: "negative vertex id -1"},
		{name: "edge three fields", file: "raw/edge.csv.gz", content: "0,1\n0,1,2\n", wantLine: 2, wantMsg: "malformed edge"},
		{name: "edge blank line", file: "raw/edge.csv.gz", content: "0,1\n\n1,0\n", wantLine: 2, wantMsg: "malformed edge"},
		{name: "edge overflow", file: "raw/edge.csv.gz", content: "0,99999999999999999999\n", wantLine: 1, wantMsg: "malformed edge"},
		{name: "edge count mismatch", file: "raw/num-edge-list.csv.gz", content: "5\n", wantFile: "raw/edge.csv.gz", wantLine: 0, wantMsg: "4 edge lines"},
		{name: "edge missing", file: "raw/edge.csv.gz", content: absent, wantLine: 0, wantMsg: "missing file"},
		{name: "edge truncated gzip", file: "raw/edge.csv.gz", content: "0,1\n1,0\n2,3\n3,2\n",
			corrupt: func(b []byte) []byte { return b[:len(b)-6] }, wantLine: 5, wantMsg: "truncated gzip"},
		{name: "edge gzip checksum", file: "raw/edge.csv.gz", content: "0,1\n1,0\n2,3\n3,2\n",
			corrupt: func(b []byte) []byte { b[len(b)-6] ^= 0xff; return b }, wantLine: 5, wantMsg: "corrupt gzip"},
		{name: "edge not gzip", file: "raw/edge.csv.gz", content: "0,1\n",
			corrupt: func([]byte) []byte { return []byte("0,1\n") }, wantLine: 0, wantMsg: "bad gzip header"},
		{name: "edge empty gzip", file: "raw/edge.csv.gz",
			corrupt: func([]byte) []byte { return nil }, wantLine: 0, wantMsg: "empty file"},
		{name: "nodes missing", file: "raw/num-node-list.csv.gz", content: absent, wantLine: 0, wantMsg: "missing file"},
		{name: "nodes empty", file: "raw/num-node-list.csv.gz", content: "", wantLine: 0, wantMsg: "empty file"},
		{name: "nodes non-numeric", file: "raw/num-node-list.csv.gz", content: "four\n", wantLine: 1, wantMsg: "malformed number of nodes"},
		{name: "nodes negative", file: "raw/num-node-list.csv.gz", content: "-4\n", wantLine: 1, wantMsg: "negative"},
		{name: "nodes two values", file: "raw/num-node-list.csv.gz", content: "4\n5\n", wantLine: 2, wantMsg: "second value"},
		{name: "nodes implausible", file: "raw/num-node-list.csv.gz", content: "99999999999\n", wantFile: "raw/node-label.csv.gz", wantLine: 0, wantMsg: "too small"},
		{name: "edges count empty", file: "raw/num-edge-list.csv.gz", content: "\n", wantLine: 0, wantMsg: "empty file"},
		{name: "feature ragged", file: "raw/node-feat.csv.gz", content: "1,0\n0,1,1\n0,0\n0,0\n", wantLine: 2, wantMsg: "ragged row: 3 columns, but the first row has 2"},
		{name: "feature short row", file: "raw/node-feat.csv.gz", content: "1,0\n0,1\n0\n0,0\n", wantLine: 3, wantMsg: "ragged row"},
		{name: "feature non-numeric", file: "raw/node-feat.csv.gz", content: "1,0\n0,abc\n0,0\n0,0\n", wantLine: 2, wantMsg: `column 2: malformed number "abc"`},
		{name: "feature empty field", file: "raw/node-feat.csv.gz", content: "1,0\n0,1\n0,\n0,0\n", wantLine: 3, wantMsg: "malformed number"},
		{name: "feature NaN", file: "raw/node-feat.csv.gz", content: "1,0\n0,1\n0,NaN\n0,0\n", wantLine: 3, wantMsg: "malformed number"},
		{name: "feature overflow", file: "raw/node-feat.csv.gz", content: "1,0\n0,1\n0,1e39\n0,0\n", wantLine: 3, wantMsg: "malformed number"},
		{name: "feature empty line", file: "raw/node-feat.csv.gz", content: "1,0\n\n0,0\n0,0\n", wantLine: 2, wantMsg: "empty line"},
		{name: "feature too few rows", file: "raw/node-feat.csv.gz", content: "1,0\n0,1\n", wantLine: 0, wantMsg: "2 feature rows, but num-node-list declares 4"},
		{name: "feature too many rows", file: "raw/node-feat.csv.gz", content: "1\n2\n3\n4\n5\n", wantLine: 5, wantMsg: "more feature rows"},
		{name: "feature truncated gzip", file: "raw/node-feat.csv.gz", content: strings.Repeat("1,0\n", 4),
			corrupt: func(b []byte) []byte { return b[:len(b)-4] }, wantMsg: "truncated gzip", wantLine: 5},
		{name: "label too few", file: "raw/node-label.csv.gz", content: "0\n1\n", wantLine: 0, wantMsg: "2 labels, but num-node-list declares 4"},
		{name: "label too many", file: "raw/node-label.csv.gz", content: "0\n1\n2\n1\n0\n", wantLine: 5, wantMsg: "more labels"},
		{name: "label negative", file: "raw/node-label.csv.gz", content: "0\n-1\n2\n1\n", wantLine: 2, wantMsg: "negative label -1"},
		{name: "label non-numeric", file: "raw/node-label.csv.gz", content: "0\n1\n2.0\n1\n", wantLine: 3, wantMsg: "malformed label"},
		{name: "label huge", file: "raw/node-label.csv.gz", content: "0\n1\n99999999999\n1\n", wantLine: 3, wantMsg: "implausibly large"},
		// A label near 2³¹ used to pass and make the trainer ask for a
		// 1 TiB output layer.
		{name: "label near 2^31", file: "raw/node-label.csv.gz", content: "0\n1\n2\n2147483646\n", wantLine: 4, wantMsg: "label 2147483646 is implausibly large: class ids must be below 1048576"},
		{name: "label at MaxClasses", file: "raw/node-label.csv.gz", content: "0\n1048576\n2\n1\n", wantLine: 2, wantMsg: "implausibly large"},
		{name: "split missing file", file: "split/s/valid.csv.gz", content: absent, wantLine: 0, wantMsg: "missing file of split s"},
		{name: "split out of range", file: "split/s/train.csv.gz", content: "0\n9\n", wantLine: 2, wantMsg: "vertex id 9 out of range [0,4)"},
		{name: "split negative", file: "split/s/train.csv.gz", content: "-3\n", wantLine: 1, wantMsg: "negative vertex id -3"},
		{name: "split repeated", file: "split/s/train.csv.gz", content: "0\n0\n", wantLine: 2, wantMsg: "repeated vertex id 0"},
		{name: "split repeated unsorted", file: "split/s/train.csv.gz", content: "2\n0\n2\n", wantLine: 0, wantMsg: "repeated vertex id 2"},
		{name: "split malformed", file: "split/s/test.csv.gz", content: "3 \n", wantLine: 1, wantMsg: "malformed vertex id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := validFiles()
			if tc.content == absent {
				delete(files, tc.file)
			} else {
				files[tc.file] = tc.content
			}
			dir := t.TempDir()
			writeFiles(t, dir, files)
			if tc.corrupt != nil {
				p := filepath.Join(dir, tc.file)
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(p, tc.corrupt(b), 0o644))
			}
			d, err := ReadOGB(dir, ReadOptions{})
			require.Error(t, err)
			assert.Nil(t, d)
			var pe *ParseError
			require.True(t, errors.As(err, &pe), "got %T: %v", err, err)
			wantFile := tc.wantFile
			if wantFile == "" {
				wantFile = tc.file
			}
			assert.True(t, strings.HasSuffix(pe.Path, filepath.FromSlash(wantFile)), "got path: %s want: …%s", pe.Path, wantFile)
			assert.Equal(t, tc.wantLine, pe.Line, "error: %v", err)
			assert.Contains(t, err.Error(), tc.wantMsg)
			if tc.wantLine > 0 {
				assert.Contains(t, err.Error(), pe.Path+":"+strconv.Itoa(tc.wantLine)+": ")
			} else {
				assert.True(t, strings.HasPrefix(err.Error(), pe.Path+": "), "error: %v", err)
			}
			if tc.content == absent {
				assert.ErrorIs(t, err, fs.ErrNotExist)
			}
		})
	}
}

// TestReadOGBKeepErrors checks that rows a rank does not keep are still
// checked for their shape, so that every rank fails on a ragged file.
func TestReadOGBKeepErrors(t *testing.T) {
	files := validFiles()
	files["raw/node-feat.csv.gz"] = "1,0\n0,1\n0,1,2\n0,0\n"
	dir := t.TempDir()
	writeFiles(t, dir, files)
	_, err := ReadOGB(dir, ReadOptions{Keep: func(g int64) bool { return g == 0 }})
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 3, pe.Line)
}

func TestParseErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		err  *ParseError
		want string
	}{
		{&ParseError{Path: "data/x/raw/edge.csv.gz", Line: 17, Msg: "vertex id 99999 out of range [0,2708)"}, "data/x/raw/edge.csv.gz:17: vertex id 99999 out of range [0,2708)"},
		{&ParseError{Path: "a.bin", Msg: "section features", Err: ErrChecksum}, "a.bin: section features: checksum mismatch"},
		{&ParseError{Path: "a.bin", Err: ErrNotBinary}, "a.bin: " + ErrNotBinary.Error()},
	} {
		assert.Equal(t, tc.want, tc.err.Error())
	}
}

func TestParseRow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []float32
		ok   bool
	}{
		{"1,0,3", []float32{1, 0, 3}, true},
		{"-1,0.25,1e-3", []float32{-1, 0.25, 1e-3}, true},
		{"16777217", []float32{16777216}, true}, // rounds to nearest float32
		{"123456789012345678901", []float32{1.2345679e20}, true},
		{"1,,2", nil, false}, {"1,", nil, false}, {"inf", nil, false}, {"x", nil, false},
	} {
		dst := make([]float32, 3)
		nf, _, ok := parseRow([]byte(tc.in), dst)
		assert.Equal(t, tc.ok, ok, "parseRow(%q)", tc.in)
		if ok {
			assert.Equal(t, tc.want, dst[:nf], "parseRow(%q)", tc.in)
		}
	}
}
