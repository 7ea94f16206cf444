package graph

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// writeCoraBinary writes Cora to a binary file in a temporary directory.
func writeCoraBinary(t testing.TB) (string, *Dataset) {
	t.Helper()
	d := loadCora(t)
	path := filepath.Join(t.TempDir(), "cora.gnnb")
	require.NoError(t, WriteBinary(path, d))
	return path, d
}

func TestBinaryRoundTripCora(t *testing.T) {
	path, want := writeCoraBinary(t)
	got, m, err := OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense})
	require.NoError(t, err)
	require.NotNil(t, m)
	assert.Equal(t, "cora", got.Name)
	assertSameDataset(t, want, got)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "Close is idempotent")

	// Without features and labels.
	got, m, err = OpenBinary(path, ReadOptions{NoFeatures: true, NoLabels: true})
	require.NoError(t, err)
	defer m.Close()
	assert.Nil(t, got.Feat)
	assert.Nil(t, got.Labels)
	assert.Equal(t, 0, got.NumClasses)
	assert.Equal(t, want.Adj, got.Adj)
	require.NoError(t, got.Validate())

	// No temporary files are left next to the output.
	ents, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, ents, 1)
}

// TestBinaryRoundTripSmall covers weighted adjacency, no features, empty
// splits and an empty graph.
func TestBinaryRoundTripSmall(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *Dataset
	}{
		{"weighted", &Dataset{
			Name: "w", NumNodes: 3,
			Adj:    &sparse.CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 2, 3}, Indices: []int64{2, 1, 0}, Values: []float64{0.5, -1, 3}},
			Labels: []int32{0, 4, 1}, NumClasses: 5,
			Splits: map[string]Split{"x": {Train: []int64{0}, Valid: []int64{}, Test: []int64{1, 2}}, "y": {Train: []int64{}, Valid: []int64{}, Test: []int64{}}},
		}},
		{"features only", &Dataset{
			Name: "f", NumNodes: 2,
			Adj:    &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 0, 0}, Indices: []int64{}},
			Feat:   &dense.Matrix{Rows: 2, Cols: 3, Data: []float32{1, 2, 3, 4, 5, 6}},
			Splits: map[string]Split{},
		}},
		{"empty", &Dataset{
			Name: "", NumNodes: 0,
			Adj:    &sparse.CSR{NRows: 0, NCols: 0, Indptr: []int64{0}, Indices: []int64{}},
			Splits: map[string]Split{},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.bin")
			require.NoError(t, WriteBinary(path, tc.d))
			got, m, err := OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense})
			require.NoError(t, err)
			defer m.Close()
			assert.Equal(t, tc.d.Name, got.Name)
			assertSameDataset(t, tc.d, got)

			keep := func(g int64) bool { return g != 1 }
			part, m2, err := OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense, Keep: keep})
			require.NoError(t, err)
			assert.Nil(t, m2)
			require.NoError(t, part.Validate())
			checkRowsOf(t, tc.d, part, keep)
		})
	}
}

func TestWriteBinaryErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    *Dataset
	}{
		{"partial", &Dataset{NumNodes: 2, Rows: []int64{1}, Adj: &sparse.CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 0}}}},
		{"no adjacency", &Dataset{NumNodes: 2}},
		{"invalid", &Dataset{NumNodes: 2, Adj: &sparse.CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 1}, Indices: []int64{7}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			assert.Error(t, WriteBinary(filepath.Join(dir, "x.bin"), tc.d))
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, ents, "nothing is left behind")
		})
	}
}

// TestOpenBinaryKeep checks that a partial load equals the rows of a full
// load.
func TestOpenBinaryKeep(t *testing.T) {
	path, full := writeCoraBinary(t)
	for _, tc := range []struct {
		name string
		keep func(int64) bool
	}{
		{"mod3", func(g int64) bool { return g%3 == 1 }},
		{"block", func(g int64) bool { return g < 900 }},
		{"none", func(int64) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, m, err := OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense, Keep: tc.keep})
			require.NoError(t, err)
			assert.Nil(t, m)
			require.NoError(t, d.Validate())
			checkRowsOf(t, full, d, tc.keep)
		})
	}
}

// readMeta decodes the metadata of a binary file, for tests.
func readMeta(t *testing.T, b []byte) binMeta {
	t.Helper()
	n := binary.LittleEndian.Uint64(b[24:])
	var m binMeta
	require.NoError(t, json.Unmarshal(b[binHeaderSize:binHeaderSize+n], &m))
	return m
}

// TestBinaryCorruption flips one byte in each section (and in the header
// and metadata) and checks that the damage is found and named.
func TestBinaryCorruption(t *testing.T) {
	path, _ := writeCoraBinary(t)
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	meta := readMeta(t, orig)
	require.NotEmpty(t, meta.Sections)

	type corruption struct {
		name    string
		at      int64 // byte to flip
		wantErr error
		wantMsg string
	}
	cases := []corruption{
		{"magic", 1, ErrNotBinary, ""},
		{"header", 40, ErrChecksum, "header"},
		{"metadata", binHeaderSize + 5, ErrChecksum, "metadata"},
	}
	for _, s := range meta.Sections {
		if s.Length == 0 {
			continue
		}
		cases = append(cases, corruption{s.Name, s.Offset + s.Length/2, ErrChecksum, "section " + s.Name})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := append([]byte(nil), orig...)
			b[tc.at] ^= 0x40
			p := filepath.Join(t.TempDir(), "bad.bin")
			require.NoError(t, os.WriteFile(p, b, 0o644))
			d, m, err := OpenBinary(p, ReadOptions{FeatureFormat: FeatureDense})
			require.Error(t, err)
			assert.Nil(t, d)
			assert.Nil(t, m)
			assert.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), p)
			assert.Contains(t, err.Error(), tc.wantMsg)

			// A partial load detects it too.
			_, _, err = OpenBinary(p, ReadOptions{FeatureFormat: FeatureDense, Keep: func(g int64) bool { return g == 0 }})
			assert.ErrorIs(t, err, tc.wantErr)
		})
	}

	// With NoVerify, damage inside the features goes unnoticed.
	feat := meta.Sections[0]
	for _, s := range meta.Sections {
		if s.Name == "features" {
			feat = s
		}
	}
	b := append([]byte(nil), orig...)
	b[feat.Offset+3] ^= 0x01
	p := filepath.Join(t.TempDir(), "bad.bin")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	_, m, err := OpenBinary(p, ReadOptions{NoVerify: true})
	require.NoError(t, err)
	m.Close()
	// Nor is it checked when features are not loaded.
	_, m, err = OpenBinary(p, ReadOptions{NoFeatures: true})
	require.NoError(t, err)
	m.Close()
}

func TestBinaryMalformed(t *testing.T) {
	path, _ := writeCoraBinary(t)
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	meta := readMeta(t, orig)
	last := meta.Sections[len(meta.Sections)-1]

	setVersion := func(v uint32) []byte {
		b := append([]byte(nil), orig...)
		binary.LittleEndian.PutUint32(b[8:], v)
		binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
		return b
	}
	for _, tc := range []struct {
		name    string
		data    []byte
		wantErr error
		wantMsg string
	}{
		{"empty", nil, ErrNotBinary, ""},
		{"text", []byte("0 1\n1 0\n"), ErrNotBinary, ""},
		{"short header", orig[:20], ErrTruncated, "header"},
		{"truncated metadata", orig[:binHeaderSize+10], ErrTruncated, "metadata"},
		{"truncated section", orig[:last.Offset+last.Length-1], ErrTruncated, "section " + last.Name},
		{"truncated at section start", orig[:meta.Sections[0].Offset], ErrTruncated, "section"},
		{"version 4", setVersion(4), ErrVersion, "version 4"},
		{"version 0", setVersion(0), ErrVersion, "version 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.bin")
			require.NoError(t, os.WriteFile(p, tc.data, 0o644))
			d, m, err := OpenBinary(p, ReadOptions{FeatureFormat: FeatureDense})
			require.Error(t, err)
			assert.Nil(t, d)
			assert.Nil(t, m)
			assert.ErrorIs(t, err, tc.wantErr)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, p, pe.Path)
			assert.Contains(t, err.Error(), tc.wantMsg)
		})
	}
	_, _, err = OpenBinary(filepath.Join(t.TempDir(), "missing.bin"), ReadOptions{FeatureFormat: FeatureDense})
	checkParseError(t, err, "missing.bin", 0, "missing file")
}

// TestLoad checks that Load picks the reader from the path.
func TestLoad(t *testing.T) {
	binPath, full := writeCoraBinary(t)
	dir := t.TempDir()
	mtx := filepath.Join(dir, "cora.mtx.gz")
	require.NoError(t, WriteMatrixMarket(mtx, full.Adj))
	rect := filepath.Join(dir, "rect.mtx")
	require.NoError(t, WriteMatrixMarket(rect, &sparse.CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 0}}))
	edges := filepath.Join(dir, "edges.txt")
	require.NoError(t, os.WriteFile(edges, []byte("# Nodes: 4\n0 1\n1 0\n2 3\n"), 0o644))
	// A binary file is recognized by content, whatever its name.
	disguised := filepath.Join(dir, "cora.mtx")
	b, err := os.ReadFile(binPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(disguised, b, 0o644))

	keepEven := func(g int64) bool { return g%2 == 0 }
	for _, tc := range []struct {
		name, path string
		opt        ReadOptions
		check      func(t *testing.T, d *Dataset)
	}{
		{"ogb", coraDir, ReadOptions{FeatureFormat: FeatureDense}, func(t *testing.T, d *Dataset) { assertSameDataset(t, full, d) }},
		{"binary", binPath, ReadOptions{FeatureFormat: FeatureDense}, func(t *testing.T, d *Dataset) { assertSameDataset(t, full, d) }},
		{"binary by content", disguised, ReadOptions{FeatureFormat: FeatureDense}, func(t *testing.T, d *Dataset) { assertSameDataset(t, full, d) }},
		{"binary keep", binPath, ReadOptions{FeatureFormat: FeatureDense, Keep: keepEven}, func(t *testing.T, d *Dataset) { checkRowsOf(t, full, d, keepEven) }},
		{"mtx", mtx, ReadOptions{FeatureFormat: FeatureDense}, func(t *testing.T, d *Dataset) {
			assert.Equal(t, "cora", d.Name)
			assert.Equal(t, full.Adj, d.Adj)
			assert.Nil(t, d.Feat)
			assert.Empty(t, d.Splits)
		}},
		{"edge list keep", edges, ReadOptions{FeatureFormat: FeatureDense, Keep: keepEven}, func(t *testing.T, d *Dataset) {
			assert.Equal(t, "edges", d.Name)
			assert.Equal(t, int64(4), d.NumNodes)
			assert.Equal(t, []int64{0, 2}, d.Rows)
			assert.Equal(t, []int64{0, 1, 2}, d.Adj.Indptr)
			assert.Equal(t, []int64{1, 3}, d.Adj.Indices)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Load(tc.path, tc.opt)
			require.NoError(t, err)
			require.NoError(t, d.Validate())
			tc.check(t, d)
		})
	}

	_, err = Load(rect, ReadOptions{FeatureFormat: FeatureDense})
	checkParseError(t, err, "rect.mtx", 0, "not square")
	_, err = Load(filepath.Join(dir, "nope"), ReadOptions{FeatureFormat: FeatureDense})
	checkParseError(t, err, "nope", 0, "missing file")
}

// BenchmarkLoad compares the csv.gz reader with the binary format on Cora.
func BenchmarkLoad(b *testing.B) {
	d := loadCora(b)
	path := filepath.Join(b.TempDir(), "cora.gnnb")
	require.NoError(b, WriteBinary(path, d))
	edges := float64(d.NumEdges())
	for _, bc := range []struct {
		name string
		load func() error
	}{
		{"ReadOGB/cora", func() error {
			_, err := ReadOGB(coraDir, ReadOptions{FeatureFormat: FeatureDense})
			return err
		}},
		{"OpenBinary/cora", func() error {
			_, m, err := OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense})
			m.Close()
			return err
		}},
		{"OpenBinary/cora/noverify", func() error {
			_, m, err := OpenBinary(path, ReadOptions{NoVerify: true})
			m.Close()
			return err
		}},
		{"OpenBinary/cora/keep=half", func() error {
			_, _, err := OpenBinary(path, ReadOptions{FeatureFormat: FeatureDense, Keep: func(g int64) bool { return g%2 == 0 }})
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.load(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(edges*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
		})
	}
}

// TestBinaryConstants checks the format's magic and its error kinds.
func TestBinaryConstants(t *testing.T) {
	assert.True(t, strings.HasPrefix(binMagic, "\x89"))
	assert.True(t, errors.Is(&ParseError{Err: ErrChecksum}, ErrChecksum))
}

// TestChecksum checks the parallel CRC-32C against the serial checksum,
// and the zero-bytes operator against checksumming zeros.
func TestChecksum(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, crcParallel+5*crcBlock+12345)
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rnd.Uint64())
	}
	for _, n := range []int{0, 1, 100, crcParallel - 1, crcParallel, crcParallel + crcBlock, crcParallel + 7, len(b)} {
		assert.Equal(t, crc32.Checksum(b[:n], castagnoli), checksum(b[:n]), "n=%d", n)
	}
	// Shifting crc(x) over len(y) zero bytes and adding crc(y) gives crc(x‖y).
	for _, cut := range []int{0, 1, 7, 4096, 100000} {
		x, y := b[:cut], b[cut:200000]
		op := zerosOperator(int64(len(y)))
		got := op.times(crc32.Checksum(x, castagnoli)) ^ crc32.Checksum(y, castagnoli)
		assert.Equal(t, crc32.Checksum(b[:200000], castagnoli), got, "cut=%d", cut)
	}
}
