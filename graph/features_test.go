package graph

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

var (
	coraCSROnce sync.Once
	coraCSR     *Dataset
	coraCSRErr  error
)

// loadCoraCSR reads Cora once per test binary with the default feature
// format (auto: sparse). Callers must not modify it.
func loadCoraCSR(t testing.TB) *Dataset {
	t.Helper()
	coraCSROnce.Do(func() { coraCSR, coraCSRErr = ReadOGB(coraDir, ReadOptions{}) })
	require.NoError(t, coraCSRErr)
	return coraCSR
}

func TestParseFeatureFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want FeatureFormat
	}{{"", FeatureAuto}, {"auto", FeatureAuto}, {"dense", FeatureDense}, {"csr", FeatureCSR}} {
		got, err := ParseFeatureFormat(tc.in)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
	_, err := ParseFeatureFormat("coo")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "auto dense csr")
	_, err = ReadOGB(coraDir, ReadOptions{FeatureFormat: "coo"})
	assert.ErrorContains(t, err, `unknown feature format "coo"`)
}

// TestReadOGBCoraCSR checks that auto holds Cora's 0/1 features as a
// pattern matrix with exactly the dense reader's nonzeros, as csr does.
func TestReadOGBCoraCSR(t *testing.T) {
	want := loadCora(t)
	for _, f := range []FeatureFormat{FeatureAuto, FeatureCSR} {
		t.Run(string(f), func(t *testing.T) {
			d := loadCoraCSR(t)
			if f == FeatureCSR {
				var err error
				d, err = ReadOGB(coraDir, ReadOptions{FeatureFormat: f})
				require.NoError(t, err)
			}
			require.NoError(t, d.Validate())
			assert.Nil(t, d.Feat)
			require.NotNil(t, d.FeatCSR)
			assert.Equal(t, FeatureCSR, d.FeatureFormat())
			assert.Nil(t, d.FeatCSR.Values, "0/1 features are a pattern")
			assert.Equal(t, int64(49216), d.FeatCSR.NNZ()) // nnz of Planetoid Cora's x, allx and tx
			assert.Equal(t, 1433, d.NumFeatures())
			assert.InDelta(t, 49216.0/(2708*1433), d.Density(), 1e-12)
			assert.Equal(t, SparseRows(want.Feat), d.FeatCSR)
			assert.Equal(t, want.Feat, DenseRows(d.FeatCSR))
		})
	}
}

// TestReadOGBKeepCSR checks that a partial sparse load holds exactly the
// kept rows of the full one.
func TestReadOGBKeepCSR(t *testing.T) {
	full := loadCoraCSR(t)
	for _, keep := range []func(int64) bool{
		func(g int64) bool { return g%3 == 0 },
		func(g int64) bool { return g >= 2000 },
		func(int64) bool { return false },
	} {
		d, err := ReadOGB(coraDir, ReadOptions{Keep: keep})
		require.NoError(t, err)
		require.NoError(t, d.Validate())
		checkSparseRowsOf(t, full.FeatCSR, d)
	}
}

// checkSparseRowsOf checks that part's sparse features are the rows
// part.Rows of full.
func checkSparseRowsOf(t *testing.T, full *sparse.Matrix[float32], part *Dataset) {
	t.Helper()
	require.NotNil(t, part.FeatCSR)
	assert.Equal(t, sparse.SelectRows(full, part.Rows), part.FeatCSR)
}

// featFiles returns an OGB dataset of n vertices on a ring whose feature
// file holds lines.
func featFiles(lines []string) map[string]string {
	n := len(lines)
	var edges strings.Builder
	for i := range n {
		fmt.Fprintf(&edges, "%d,%d\n", i, (i+1)%n)
	}
	return map[string]string{
		"raw/num-node-list.csv.gz": fmt.Sprintf("%d\n", n),
		"raw/edge.csv.gz":          edges.String(),
		"raw/node-feat.csv.gz":     strings.Join(lines, "\n") + "\n",
	}
}

// TestReadOGBFeatureFormats covers the choice of auto by density over the
// whole file, values versus pattern, and that every rank of a partial
// load decides alike.
func TestReadOGBFeatureFormats(t *testing.T) {
	zeros := strings.Repeat("0,", 19) + "0" // 20 columns
	row := func(j int, v string) string {
		f := strings.Split(zeros, ",")
		f[j] = v
		return strings.Join(f, ",")
	}
	for _, tc := range []struct {
		name      string
		lines     []string
		auto      FeatureFormat
		pattern   bool
		wantDense []float32 // row 1
	}{
		// 3 nonzeros of 80 entries (3.75%): sparse; a 2 means values.
		{"sparse values", []string{row(3, "2"), row(0, "1"), row(19, "1e0"), zeros}, FeatureCSR, false, nil},
		// All nonzeros 1, spelt variously: a pattern.
		{"sparse pattern", []string{row(3, "1"), row(0, "1.0"), row(19, "+1"), zeros}, FeatureCSR, true, nil},
		// Zeros spelt variously, one -0.5.
		{"odd zeros", []string{row(3, "0.000"), row(0, "-0"), row(19, "0e5"), row(1, "-0.5")}, FeatureCSR, false, nil},
		// 8 of 80 (10%): dense; the switch happens at the last row.
		{"threshold", []string{row(1, "1") + "", row(2, "1"), row(3, "1"),
			strings.Join([]string{"1", "1", "1", "1", "1"}, ",") + strings.Repeat(",0", 15)}, FeatureDense, true, nil},
		// Nonzeros first: the switch happens at row 0.
		{"dense early", []string{strings.TrimSuffix(strings.Repeat("3,", 20), ","), zeros, zeros, zeros}, FeatureDense, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, featFiles(tc.lines))
			dd, err := ReadOGB(dir, ReadOptions{FeatureFormat: FeatureDense})
			require.NoError(t, err)
			require.NotNil(t, dd.Feat)
			auto, err := ReadOGB(dir, ReadOptions{})
			require.NoError(t, err)
			require.NoError(t, auto.Validate())
			assert.Equal(t, tc.auto, auto.FeatureFormat())
			csr, err := ReadOGB(dir, ReadOptions{FeatureFormat: FeatureCSR})
			require.NoError(t, err)
			require.NoError(t, csr.Validate())
			assert.Equal(t, tc.pattern, csr.FeatCSR.Values == nil)
			assert.Equal(t, dd.Feat, DenseRows(csr.FeatCSR))
			if tc.auto == FeatureDense {
				assert.Equal(t, dd.Feat, auto.Feat)
			}
			// Each single-row load decides as the whole file does.
			for g := range int64(len(tc.lines)) {
				for _, f := range []FeatureFormat{FeatureAuto, FeatureCSR} {
					part, err := ReadOGB(dir, ReadOptions{FeatureFormat: f, Keep: func(x int64) bool { return x == g }})
					require.NoError(t, err)
					require.NoError(t, part.Validate())
					if f == FeatureAuto && tc.auto == FeatureDense {
						assert.Equal(t, dd.Feat.Row(int(g)), part.Feat.Row(0))
						continue
					}
					assert.Equal(t, tc.pattern, part.FeatCSR.Values == nil, "row %d", g)
					assert.Equal(t, dd.Feat.Row(int(g)), DenseRows(part.FeatCSR).Row(0), "row %d", g)
				}
			}
		})
	}
}

// TestReadOGBSparseErrors checks that the rows a rank does not hold are
// checked for ragged and malformed lines when scanned for nonzeros.
func TestReadOGBSparseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"ragged", []string{"0,0,1", "0,1"}, "ragged row: 2 columns"},
		{"malformed", []string{"0,0,1", "0,x1,0"}, "column 2: malformed number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, featFiles(tc.lines))
			_, err := ReadOGB(dir, ReadOptions{FeatureFormat: FeatureCSR, Keep: func(g int64) bool { return g == 0 }})
			checkParseError(t, err, "node-feat.csv.gz", 2, tc.want)
		})
	}
}

func TestFeatureConversions(t *testing.T) {
	m := &dense.Matrix{Rows: 3, Cols: 4, Data: []float32{0, 1, 0, 2, 0, 0, 0, 0, -1, 0, 0, 0}}
	a := SparseRows(m)
	assert.Equal(t, []int64{0, 2, 2, 3}, a.Indptr)
	assert.Equal(t, []int64{1, 3, 0}, a.Indices)
	assert.Equal(t, []float32{1, 2, -1}, a.Values)
	assert.Equal(t, m, DenseRows(a))
	p := SparseRows(&dense.Matrix{Rows: 2, Cols: 2, Data: []float32{0, 1, 1, 1}})
	assert.Nil(t, p.Values)
	assert.Equal(t, []float32{0, 1, 1, 1}, DenseRows(p).Data)
}

// TestValidateSparseFeatures checks what Validate finds in sparse rows.
func TestValidateSparseFeatures(t *testing.T) {
	ok := func() *Dataset {
		return &Dataset{NumNodes: 2, FeatCSR: &sparse.Matrix[float32]{NRows: 2, NCols: 3,
			Indptr: []int64{0, 2, 3}, Indices: []int64{0, 2, 1}, Values: []float32{1, 2, 3}}}
	}
	require.NoError(t, ok().Validate())
	for _, tc := range []struct {
		name   string
		break_ func(d *Dataset)
		want   string
	}{
		{"unsorted", func(d *Dataset) { d.FeatCSR.Indices = []int64{2, 0, 1} }, "row 0: column 0 after 2"},
		{"repeated", func(d *Dataset) { d.FeatCSR.Indices = []int64{1, 1, 1} }, "row 0: column 1 after 1"},
		{"out of range", func(d *Dataset) { d.FeatCSR.Indices[2] = 3 }, "column 3 outside [0,3)"},
		{"rows", func(d *Dataset) { d.NumNodes = 3 }, "2 sparse feature rows, want 3"},
		{"indptr", func(d *Dataset) { d.FeatCSR.Indptr[1] = 4 }, "Indptr decreases"},
		{"values", func(d *Dataset) { d.FeatCSR.Values = d.FeatCSR.Values[:2] }, "len(Values)=2"},
		{"both", func(d *Dataset) { d.Feat = dense.New(2, 3) }, "both dense and sparse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := ok()
			tc.break_(d)
			assert.ErrorContains(t, d.Validate(), tc.want)
		})
	}
}

// TestBinarySparseRoundTrip writes sparse features (Cora's pattern and a
// small valued matrix) and reads them back in every format, whole and
// partially.
func TestBinarySparseRoundTrip(t *testing.T) {
	small := v1Fixture()
	small.FeatCSR, small.Feat = SparseRows(small.Feat), nil
	for _, tc := range []struct {
		name string
		d    *Dataset
	}{{"cora", loadCoraCSR(t)}, {"valued", small}} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.d
			path := filepath.Join(t.TempDir(), "d.gnn")
			require.NoError(t, WriteBinary(path, want))
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, uint32(2), binary.LittleEndian.Uint32(b[8:]), "version")
			meta := readMeta(t, b)
			assert.Equal(t, "csr", meta.FeatureFormat)
			assert.Equal(t, want.FeatCSR.NNZ(), meta.FeatureNNZ)
			assert.Equal(t, want.FeatCSR.Values == nil, meta.FeaturePattern)
			assert.Equal(t, "int32", meta.FeatureIndex)

			// Whole, mapped: sparse (auto for both: Cora is 1.3%, the
			// small one 40% so auto gives dense there).
			got, m, err := OpenBinary(path, ReadOptions{FeatureFormat: FeatureCSR})
			require.NoError(t, err)
			require.NoError(t, got.Validate())
			assert.Equal(t, want.FeatCSR, got.FeatCSR)
			require.NoError(t, m.Close())
			got, m, err = OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense})
			require.NoError(t, err)
			assert.Nil(t, got.FeatCSR)
			assert.Equal(t, DenseRows(want.FeatCSR), got.Feat)
			require.NoError(t, m.Close())
			got, m, err = OpenBinary(path, ReadOptions{})
			require.NoError(t, err)
			wantAuto := FeatureCSR
			if tc.name == "valued" {
				wantAuto = FeatureDense
			}
			assert.Equal(t, wantAuto, got.FeatureFormat())
			require.NoError(t, m.Close())

			// Partial: only the kept rows, copied.
			keep := func(g int64) bool { return g%2 == 1 }
			got, m, err = OpenBinary(path, ReadOptions{FeatureFormat: FeatureCSR, Keep: keep})
			require.NoError(t, err)
			assert.Nil(t, m)
			require.NoError(t, got.Validate())
			checkSparseRowsOf(t, want.FeatCSR, got)
			got, _, err = OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense, Keep: keep})
			require.NoError(t, err)
			assert.Equal(t, DenseRows(sparse.SelectRows(want.FeatCSR, got.Rows)), got.Feat)

			// No features.
			got, m, err = OpenBinary(path, ReadOptions{NoFeatures: true})
			require.NoError(t, err)
			assert.False(t, got.HasFeatures())
			require.NoError(t, m.Close())
		})
	}
}

// TestBinaryDenseToCSR reads a dense (version 1) file as sparse rows.
func TestBinaryDenseToCSR(t *testing.T) {
	path, full := writeCoraBinary(t)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), binary.LittleEndian.Uint32(b[8:]), "dense features keep version 1")
	want := SparseRows(full.Feat)
	for _, opt := range []ReadOptions{{}, {FeatureFormat: FeatureCSR}} {
		got, m, err := OpenBinary(path, opt)
		require.NoError(t, err)
		assert.Equal(t, want, got.FeatCSR)
		require.NoError(t, m.Close())
	}
	keep := func(g int64) bool { return g < 100 }
	got, _, err := OpenBinary(path, ReadOptions{Keep: keep})
	require.NoError(t, err)
	checkSparseRowsOf(t, want, got)
}

// TestBinaryVersion1Fixture loads testdata/v1.gnn, written by the writer
// of format version 1 before sparse features existed.
func TestBinaryVersion1Fixture(t *testing.T) {
	want := v1Fixture()
	got, m, err := OpenBinary("testdata/v1.gnn", ReadOptions{FeatureFormat: FeatureDense})
	require.NoError(t, err)
	defer m.Close()
	assertSameDataset(t, want, got)
	assert.Equal(t, "v1", got.Name)
	// The same file as sparse rows, and partially.
	sp, _, err := OpenBinary("testdata/v1.gnn", ReadOptions{FeatureFormat: FeatureCSR, Keep: func(g int64) bool { return g != 2 }})
	require.NoError(t, err)
	require.NoError(t, sp.Validate())
	checkSparseRowsOf(t, SparseRows(want.Feat), sp)
	// Written again, the dataset gives the same bytes.
	path := filepath.Join(t.TempDir(), "v1.gnn")
	require.NoError(t, WriteBinary(path, want))
	a, err := os.ReadFile(path)
	require.NoError(t, err)
	b, err := os.ReadFile("testdata/v1.gnn")
	require.NoError(t, err)
	assert.Equal(t, b, a)
}

// TestBinarySparseCorruption checks that damage to the sparse feature
// sections is found, and that corrupt columns are rejected when copied.
func TestBinarySparseCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.gnn")
	require.NoError(t, WriteBinary(path, loadCoraCSR(t)))
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	meta := readMeta(t, orig)
	for _, s := range meta.Sections {
		if !strings.HasPrefix(s.Name, "feat/") {
			continue
		}
		t.Run(s.Name, func(t *testing.T) {
			b := append([]byte(nil), orig...)
			b[s.Offset+s.Length/2] ^= 0x40
			p := filepath.Join(t.TempDir(), "bad.gnn")
			require.NoError(t, os.WriteFile(p, b, 0o644))
			_, _, err := OpenBinary(p, ReadOptions{})
			assert.ErrorIs(t, err, ErrChecksum)
			assert.ErrorContains(t, err, "section "+s.Name)
		})
	}
	// A column out of range, unverified: found when the rows are copied.
	idx := meta.section(secFeatIndices)
	b := append([]byte(nil), orig...)
	binary.LittleEndian.PutUint32(b[idx.Offset:], 5000)
	p := filepath.Join(t.TempDir(), "bad.gnn")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	_, _, err = OpenBinary(p, ReadOptions{NoVerify: true, Keep: func(g int64) bool { return g == 0 }})
	assert.ErrorContains(t, err, "column 5000 of entry 0 outside [0,1433)")
}
