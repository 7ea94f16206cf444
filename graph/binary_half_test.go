package graph

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/internal/f16"
	"gnnmpi/partition"
)

// halfDataset returns a small dataset whose features are half words,
// with zeros (±0), ones and other values.
func halfDataset(t *testing.T) *Dataset {
	t.Helper()
	d, err := SBM(DefaultSBM(60))
	require.NoError(t, err)
	h := dense.NewHalf(d.Feat.Rows, d.Feat.Cols)
	f16.Encode(h.Data, d.Feat.Data)
	h.Data[0], h.Data[1], h.Data[2] = 0x8000, halfOne, 0
	d.Feat, d.Feat16 = nil, h
	return d
}

// TestBinaryHalfFeatures writes dense half features to a .gnn file and to
// part files: the features section is float16, read back word for word
// with KeepHalf and widened exactly without it; the part manifest records
// the dtype and the nonzeros of the half values.
func TestBinaryHalfFeatures(t *testing.T) {
	d := halfDataset(t)
	want := make([]float32, len(d.Feat16.Data))
	f16.Decode(want, d.Feat16.Data)
	path := filepath.Join(t.TempDir(), "h.gnn")
	require.NoError(t, WriteBinary(path, d))

	for _, keep := range []bool{true, false} {
		g, m, err := OpenBinary(path, ReadOptions{KeepHalf: keep, FeatureFormat: FeatureDense})
		require.NoError(t, err)
		if keep {
			require.Nil(t, g.Feat)
			assert.Equal(t, d.Feat16.Data, g.Feat16.Data)
		} else {
			require.Nil(t, g.Feat16)
			assert.Equal(t, want, g.Feat.Data)
		}
		require.NoError(t, m.Close())
	}
	// Kept rows: copies of the half rows.
	g, _, err := OpenBinary(path, ReadOptions{KeepHalf: true, Keep: func(v int64) bool { return v%2 == 1 }})
	require.NoError(t, err)
	require.Equal(t, 30, g.Feat16.Rows)
	assert.Equal(t, d.Feat16.Row(3), g.Feat16.Row(1))

	book := partition.Block(d.NumNodes, 3)
	dir := t.TempDir()
	man, err := WriteParts(dir, d, book, "", nil)
	require.NoError(t, err)
	assert.Equal(t, dtypeHalf, man.FeatureDType)
	w32 := *d
	w32.Feat, w32.Feat16 = &dense.Matrix{Rows: d.Feat16.Rows, Cols: d.Feat16.Cols, Data: want}, nil
	nnz, ones := featureStats(&w32)
	assert.Equal(t, nnz, man.FeatureNNZ)
	assert.Equal(t, ones, man.FeaturePattern)
	m, err := ReadPartManifest(dir)
	require.NoError(t, err)
	for _, keep := range []bool{true, false} {
		p, err := LoadParts(dir, m, 0, 3, PartReadOptions{KeepHalf: keep})
		require.NoError(t, err)
		if keep {
			assert.Equal(t, d.Feat16.Data, p.Feat16.Data)
		} else {
			assert.Equal(t, want, p.Feat.Data)
		}
	}
}

// TestBinaryHalfMetadata requires that a float16 features section is
// recorded as such in the metadata, with two bytes an element: every
// build before float16 sections compares each section's dtype with the
// float32 it wants, and refuses the file ("section "features" is
// …×float16 …, want …×float32"), so none misreads half words.
func TestBinaryHalfMetadata(t *testing.T) {
	c := binContentOf(halfDataset(t))
	_, err := c.meta.layOut()
	require.NoError(t, err)
	s := c.meta.section("features")
	assert.Equal(t, "float16", s.DType)
	assert.Equal(t, 2*s.Count, s.Length)
	assert.Equal(t, binVersion1, int(c.meta.version()), "no new version: the dtype check refuses it in older builds")
	require.NoError(t, c.meta.check("h.gnn", 1<<40))
}
