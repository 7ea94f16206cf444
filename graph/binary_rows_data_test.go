package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

// TestBinaryRowsDataMatchWhole reads the features (stored dense and
// sparse, read back in every format), labels and split members of Cora in
// row blocks and compares each block with the same rows of the whole
// dataset as Load gives it.
func TestBinaryRowsDataMatchWhole(t *testing.T) {
	denseStored, _ := writeCoraBinary(t)
	sparseStored := filepath.Join(t.TempDir(), "cora-csr.gnn")
	require.NoError(t, WriteBinary(sparseStored, loadCoraCSR(t)))
	for _, path := range []string{denseStored, sparseStored} {
		for _, format := range []FeatureFormat{FeatureAuto, FeatureDense, FeatureCSR} {
			whole, err := Load(path, ReadOptions{FeatureFormat: format})
			require.NoError(t, err)
			r, err := OpenBinaryRows(path)
			require.NoError(t, err)
			n := r.NumNodes()
			assert.Equal(t, whole.NumFeatures(), r.NumFeatures())
			assert.Equal(t, whole.NumClasses, r.NumClasses())
			for _, p := range []int64{1, 3, 7} {
				t.Run(fmt.Sprintf("%s/%s/p=%d", filepath.Base(path), format, p), func(t *testing.T) {
					blocks := make([]*FeatureBlock, p)
					var nnz int64
					ones := true
					for q := range p {
						blocks[q], err = r.Features(q*n/p, (q+1)*n/p)
						require.NoError(t, err)
						z, o := blocks[q].Stats()
						nnz, ones = nnz+z, ones && o
					}
					for q := range p {
						lo, hi := q*n/p, (q+1)*n/p
						ids := make([]int64, 0, hi-lo)
						for g := lo; g < hi; g++ {
							ids = append(ids, g)
						}
						feat, csr, err := blocks[q].Rows(format, n, nnz, ones)
						require.NoError(t, err)
						if whole.Feat != nil {
							require.NotNil(t, feat)
							assert.Equal(t, whole.Feat.Data[int(lo)*whole.Feat.Cols:int(hi)*whole.Feat.Cols], feat.Data[:feat.Rows*feat.Cols])
						} else {
							require.NotNil(t, csr)
							assert.Equal(t, sparse.SelectRows(whole.FeatCSR, ids), csr)
						}
						labels, err := r.Labels(lo, hi)
						require.NoError(t, err)
						assert.Equal(t, whole.Labels[lo:hi], labels)
						splits, err := r.SplitMembers(lo, hi)
						require.NoError(t, err)
						require.Len(t, splits, len(whole.Splits))
						for name, s := range whole.Splits {
							in := func(vs []int64) []int64 {
								out := []int64{}
								for _, v := range vs {
									if v >= lo && v < hi {
										out = append(out, v)
									}
								}
								return out
							}
							assert.Equal(t, Split{Train: in(s.Train), Valid: in(s.Valid), Test: in(s.Test)}, splits[name])
						}
					}
				})
			}
			require.NoError(t, r.Close())
		}
	}
}

// TestBinaryRowsDataCorrupt damages a label and a split member and checks
// that block reads find the damage and name the file.
func TestBinaryRowsDataCorrupt(t *testing.T) {
	path, d := writeCoraBinary(t)
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	meta := readMeta(t, orig)
	sec := map[string]binSection{}
	for _, s := range meta.Sections {
		sec[s.Name] = s
	}
	name := d.SplitNames()[0]
	for _, tc := range []struct {
		section string
		at      int64 // byte offset in the section
		read    func(r *BinaryRows) error
		want    string
	}{
		{"labels", 4 * 10, func(r *BinaryRows) error { _, err := r.Labels(0, 20); return err }, "vertex 10 has label"},
		{"split/" + name + "/train", 0, func(r *BinaryRows) error { _, err := r.SplitMembers(5, 6); return err }, "section split/" + name + "/train: vertex"},
	} {
		b := append([]byte{}, orig...)
		for k := range 4 {
			b[sec[tc.section].Offset+tc.at+int64(k)] = 0x7f
		}
		bad := filepath.Join(t.TempDir(), "bad.gnn")
		require.NoError(t, os.WriteFile(bad, b, 0o644))
		r, err := OpenBinaryRows(bad)
		require.NoError(t, err)
		err = tc.read(r)
		require.ErrorContains(t, err, bad)
		assert.ErrorContains(t, err, tc.want)
		require.NoError(t, r.Close())
	}
}
