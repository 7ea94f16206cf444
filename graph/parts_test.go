package graph

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

func TestRelabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		book *partition.Book
	}{
		{"random", partition.Random(50, 4, 7)},
		{"block", partition.Block(10, 3)},
		{"empty part", mustBook(t, []int32{0, 2, 0, 2}, 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			offsets, newID := Relabel(tc.book)
			n := tc.book.NumNodes()
			require.Len(t, offsets, tc.book.Parts+1)
			assert.Equal(t, int64(0), offsets[0])
			assert.Equal(t, n, offsets[tc.book.Parts])
			seen := make([]bool, n)
			for q := range tc.book.Parts {
				prev := int64(-1)
				for _, v := range tc.book.Owned(q) {
					id := newID(v)
					assert.True(t, id >= offsets[q] && id < offsets[q+1], "vertex %d of part %d got %d outside [%d,%d)", v, q, id, offsets[q], offsets[q+1])
					assert.Greater(t, id, prev, "ascending original ids keep their order")
					prev = id
					require.False(t, seen[id], "new id %d given twice", id)
					seen[id] = true
				}
			}
			assert.NotContains(t, seen, false, "a permutation")
		})
	}
}

func mustBook(t *testing.T, part []int32, parts int) *partition.Book {
	b, err := partition.New(part, parts, "test")
	require.NoError(t, err)
	return b
}

// relabelled returns the whole dataset g in the new ids of book, built
// independently of MakePart: row newID(v) is row v with its columns
// mapped and stably sorted, features and labels permuted, splits mapped
// and sorted.
func relabelled(g *Dataset, book *partition.Book) (*Dataset, []int64) {
	_, newID := Relabel(book)
	n := g.NumNodes
	orig := make([]int64, n)
	for v := range n {
		orig[newID(v)] = v
	}
	r := &Dataset{Name: g.Name, NumNodes: n, NumClasses: g.NumClasses, Splits: map[string]Split{}}
	r.Adj = &sparse.CSR{NRows: n, NCols: n, Indptr: []int64{0}, Indices: []int64{}}
	if g.Adj.Values != nil {
		r.Adj.Values = []float64{}
	}
	for i := range n {
		row := g.Adj.Row(orig[i])
		idx := make([]int, len(row))
		for k := range idx {
			idx[k] = k
		}
		sort.SliceStable(idx, func(a, b int) bool { return newID(row[idx[a]]) < newID(row[idx[b]]) })
		lo := g.Adj.Indptr[orig[i]]
		for _, k := range idx {
			r.Adj.Indices = append(r.Adj.Indices, newID(row[k]))
			if g.Adj.Values != nil {
				r.Adj.Values = append(r.Adj.Values, g.Adj.Values[lo+int64(k)])
			}
		}
		r.Adj.Indptr = append(r.Adj.Indptr, int64(len(r.Adj.Indices)))
	}
	switch {
	case g.Feat != nil:
		r.Feat = dense.New(int(n), g.Feat.Cols)
		for i := range n {
			copy(r.Feat.Row(int(i)), g.Feat.Row(int(orig[i])))
		}
	case g.FeatCSR != nil:
		r.FeatCSR = sparse.SelectRows(g.FeatCSR, orig)
	}
	if g.Labels != nil {
		r.Labels = make([]int32, n)
		for i := range n {
			r.Labels[i] = g.Labels[orig[i]]
		}
	}
	mapped := func(ids []int64) []int64 {
		out := []int64{}
		for _, v := range ids {
			out = append(out, newID(v))
		}
		slices.Sort(out)
		return out
	}
	for name, s := range g.Splits {
		r.Splits[name] = Split{Train: mapped(s.Train), Valid: mapped(s.Valid), Test: mapped(s.Test)}
	}
	return r, orig
}

// assertPartRows checks that p holds rows [lo, hi) of the relabelled
// dataset want (orig: original ids), its features as want's in format.
func assertPartRows(t *testing.T, want *Dataset, orig []int64, lo, hi int64, p *Part) {
	t.Helper()
	require.Equal(t, lo, p.Lo)
	require.Equal(t, hi, p.Hi)
	assert.Equal(t, want.NumNodes, p.NumNodes)
	assert.Equal(t, want.Name, p.Name)
	rows := make([]int64, hi-lo)
	for i := range rows {
		rows[i] = lo + int64(i)
	}
	assert.Equal(t, sparse.SelectRows(want.Adj, rows), p.Adj)
	switch {
	case want.Feat != nil && p.Feat != nil:
		assert.Equal(t, want.Feat.Data[lo*int64(want.Feat.Cols):hi*int64(want.Feat.Cols)], p.Feat.Data[:p.Feat.Rows*p.Feat.Cols])
		assert.Equal(t, int(hi-lo), p.Feat.Rows)
	case want.FeatCSR != nil && p.FeatCSR != nil:
		assert.Equal(t, sparse.SelectRows(want.FeatCSR, rows), p.FeatCSR)
	case want.Feat == nil && want.FeatCSR == nil:
		assert.Nil(t, p.Feat)
		assert.Nil(t, p.FeatCSR)
	default:
		t.Fatalf("feature formats differ: want dense %v, got dense %v", want.Feat != nil, p.Feat != nil)
	}
	if want.Labels != nil {
		assert.Equal(t, want.Labels[lo:hi], p.Labels)
		assert.Equal(t, want.NumClasses, p.NumClasses)
	} else {
		assert.Nil(t, p.Labels)
	}
	assert.Equal(t, orig[lo:hi], p.OrigIDs)
	require.Len(t, p.Splits, len(want.Splits))
	in := func(ids []int64) []int64 {
		a, _ := slices.BinarySearch(ids, lo)
		b, _ := slices.BinarySearch(ids, hi)
		return ids[a:b]
	}
	for name, s := range want.Splits {
		got := p.Splits[name]
		assert.Equal(t, in(s.Train), got.Train, "split %s train", name)
		assert.Equal(t, in(s.Valid), got.Valid, "split %s valid", name)
		assert.Equal(t, in(s.Test), got.Test, "split %s test", name)
	}
}

// weightedGraph is a small weighted graph without features whose rows
// are unsorted and hold a repeated edge.
func weightedGraph() *Dataset {
	return &Dataset{Name: "w", NumNodes: 6,
		Adj: csr(6, [][]int64{{5, 1, 3, 1}, {0}, {}, {4, 0}, {3, 2}, {0, 2}},
			[][]float64{{0.5, 2, 3, 4}, {1}, {}, {-1, 7}, {8, 9}, {10, 11}}),
		Labels: []int32{0, 1, 2, 0, 1, 2}, NumClasses: 3,
		Splits: map[string]Split{"s": {Train: []int64{0, 3, 5}, Valid: []int64{1}, Test: []int64{}}}}
}

func TestPartsRoundTrip(t *testing.T) {
	sbm, err := SBM(DefaultSBM(300))
	require.NoError(t, err)
	cora, coraCSR := loadCora(t), loadCoraCSR(t)
	for _, tc := range []struct {
		name string
		g    *Dataset
		book *partition.Book
	}{
		{"cora dense", cora, partition.Random(cora.NumNodes, 4, 1)},
		{"cora csr", coraCSR, partition.Block(coraCSR.NumNodes, 4)},
		{"sbm", sbm, partition.Random(sbm.NumNodes, 6, 3)},
		{"weighted", weightedGraph(), mustBook(t, []int32{1, 0, 1, 3, 0, 1}, 4)}, // part 2 is empty
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "parts")
			var lines []string
			m, err := WriteParts(dir, tc.g, tc.book, "", func(f string, a ...any) { lines = append(lines, f) })
			require.NoError(t, err)
			assert.Len(t, lines, tc.book.Parts)
			want, orig := relabelled(tc.g, tc.book)
			K := tc.book.Parts

			// The manifest.
			require.True(t, IsPartDir(dir))
			rm, err := ReadPartManifest(dir)
			require.NoError(t, err)
			assert.Equal(t, m, rm)
			assert.Equal(t, tc.g.NumNodes, m.NumNodes)
			assert.Equal(t, tc.g.NumEdges(), m.NumEdges)
			assert.Equal(t, tc.book.Method, m.Method)
			assert.Equal(t, tc.book.EdgeCut(tc.g.Adj), m.EdgeCut)
			assert.Equal(t, tc.g.FeatureFormat(), m.FeatureFormat)
			assert.Equal(t, tc.g.FeatureNNZ(), m.FeatureNNZ)
			for q, f := range m.Files {
				assert.Equal(t, PartFileName(q), f.Name)
				st, err := os.Stat(filepath.Join(dir, f.Name))
				require.NoError(t, err)
				assert.Equal(t, st.Size(), f.Bytes)
			}
			require.Len(t, m.Splits, len(tc.g.Splits))
			for _, s := range m.Splits {
				assert.Equal(t, int64(len(tc.g.Splits[s.Name].Train)), s.Train)
			}
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, ents, K+1, "parts and manifest, no temporary files")

			// Each part, as stored and merged.
			stored := PartReadOptions{FeatureFormat: m.FeatureFormat}
			for q := range K {
				p, err := LoadParts(dir, m, q, q+1, stored)
				require.NoError(t, err)
				assertPartRows(t, want, orig, m.Offsets[q], m.Offsets[q+1], p)
				require.NoError(t, p.Close())
			}
			for _, r := range [][2]int{{1, 3}, {0, K}} {
				p, err := LoadParts(dir, m, r[0], r[1], stored)
				require.NoError(t, err)
				assertPartRows(t, want, orig, m.Offsets[r[0]], m.Offsets[r[1]], p)
			}

			// The whole through Load, and some rows through Load's Keep.
			d, err := Load(dir, ReadOptions{FeatureFormat: m.FeatureFormat})
			require.NoError(t, err)
			assertSameDataset(t, want, d)
			keep := func(v int64) bool { return v%3 != 1 }
			d, err = Load(dir, ReadOptions{Keep: keep, FeatureFormat: m.FeatureFormat})
			require.NoError(t, err)
			rows := keptRows(want.NumNodes, keep)
			assert.Equal(t, rows, d.Rows)
			assert.Equal(t, sparse.SelectRows(want.Adj, rows), d.Adj)
			assert.Equal(t, want.Splits, d.Splits)
			require.NoError(t, d.Validate())

			// A 2D block of columns.
			c0, c1 := m.Offsets[1], m.Offsets[min(3, K)]
			p, err := LoadParts(dir, m, 0, 2, PartReadOptions{Cols: [2]int64{c0, c1}, NoFeatures: true, NoLabels: true})
			require.NoError(t, err)
			lo, hi := m.PartRows(0, 2)
			assert.Equal(t, sparse.SelectCols(sparse.SelectRows(want.Adj, rangeIDs(lo, hi)), c0, c1), p.Adj)
			assert.Nil(t, p.Feat)
			assert.Nil(t, p.FeatCSR)
			assert.Nil(t, p.Labels)
		})
	}
}

func rangeIDs(lo, hi int64) []int64 {
	ids := make([]int64, hi-lo)
	for i := range ids {
		ids[i] = lo + int64(i)
	}
	return ids
}

// Features load dense or sparse from either stored format; auto decides
// by the whole dataset's density (Cora: 1.3% nonzero, sparse; SBM's
// Gaussian features: dense), the same for every part.
func TestPartsFeatureFormat(t *testing.T) {
	sbm, err := SBM(DefaultSBM(200))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		g    *Dataset
		auto FeatureFormat
	}{
		{"cora stored dense", loadCora(t), FeatureCSR},
		{"cora stored csr", loadCoraCSR(t), FeatureCSR},
		{"sbm", sbm, FeatureDense},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			book := partition.Random(tc.g.NumNodes, 3, 2)
			m, err := WriteParts(dir, tc.g, book, "random", nil)
			require.NoError(t, err)
			want, _ := relabelled(tc.g, book)
			wantDense := want.Feat
			if wantDense == nil {
				wantDense = DenseRows(want.FeatCSR)
			}
			for q := range 3 {
				lo, hi := m.PartRows(q, q+1)
				for _, format := range []FeatureFormat{FeatureAuto, FeatureDense, FeatureCSR} {
					p, err := LoadParts(dir, m, q, q+1, PartReadOptions{FeatureFormat: format})
					require.NoError(t, err)
					d := p.Dataset()
					got := format
					if got == FeatureAuto {
						got = tc.auto
					}
					require.Equal(t, got, d.FeatureFormat())
					dn := p.Feat
					if dn == nil {
						dn = DenseRows(p.FeatCSR)
						// Cora's features are 0/1: a pattern, in every part.
						assert.Equal(t, tc.g.Feat == nil || tc.name != "sbm", p.FeatCSR.Values == nil)
					}
					assert.Equal(t, wantDense.Data[lo*int64(wantDense.Cols):hi*int64(wantDense.Cols)], dn.Data)
					p.Close()
				}
			}
		})
	}
}

func TestRunParts(t *testing.T) {
	for _, tc := range []struct {
		parts, p, c int
		want        [][2]int // per rank; nil: an error
	}{
		{4, 1, 1, [][2]int{{0, 4}}},
		{4, 2, 1, [][2]int{{0, 2}, {2, 4}}},
		{4, 4, 1, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}}},
		{4, 4, 2, [][2]int{{0, 2}, {0, 2}, {2, 4}, {2, 4}}},
		{6, 6, 3, [][2]int{{0, 3}, {0, 3}, {0, 3}, {3, 6}, {3, 6}, {3, 6}}},
		{4, 3, 1, nil},
		{4, 8, 1, nil},
		{4, 4, 3, nil}, // replication does not divide the ranks
	} {
		m := &PartManifest{Parts: tc.parts, Dir: "some/dir"}
		for r := range tc.p {
			first, last, err := m.RunParts(r, tc.p, tc.c)
			if tc.want == nil {
				require.Error(t, err, "K=%d p=%d c=%d", tc.parts, tc.p, tc.c)
				if tc.p%tc.c == 0 {
					assert.Contains(t, err.Error(), "the 4 parts of some/dir/manifest.json cannot be spread over")
				}
				continue
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want[r], [2]int{first, last}, "K=%d p=%d c=%d rank %d", tc.parts, tc.p, tc.c, r)
		}
	}
	_, _, err := (&PartManifest{Parts: 4}).RunParts(4, 4, 1)
	assert.ErrorContains(t, err, "rank 4 of 4")
}

// TestPartsErrors damages a partitioned Cora in every way a rank may meet
// and checks that loading names the file at fault.
func TestPartsErrors(t *testing.T) {
	g := loadCora(t)
	src := filepath.Join(t.TempDir(), "src")
	_, err := WriteParts(src, g, partition.Block(g.NumNodes, 4), "block", nil)
	require.NoError(t, err)
	part2 := PartFileName(2)

	// copyDir returns a fresh copy of src.
	copyDir := func(t *testing.T) string {
		dir := t.TempDir()
		ents, err := os.ReadDir(src)
		require.NoError(t, err)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644))
		}
		return dir
	}
	editManifest := func(t *testing.T, dir string, edit func(m *PartManifest)) {
		m, err := ReadPartManifest(dir)
		require.NoError(t, err)
		edit(m)
		require.NoError(t, WritePartManifest(dir, m))
	}
	meta := func(t *testing.T, path string) *binMeta {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		m := readMeta(t, b)
		return &m
	}

	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, dir string)
		wantErr error
		wantMsg string
	}{
		{"missing", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, part2)))
		}, fs.ErrNotExist, "missing file"},
		{"truncated", func(t *testing.T, dir string) {
			p := filepath.Join(dir, part2)
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, st.Size()-100))
		}, ErrTruncated, "but the manifest"},
		{"flipped byte", func(t *testing.T, dir string) {
			p := filepath.Join(dir, part2)
			s := meta(t, p).section("indices")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[s.Offset+5] ^= 0x10
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, ErrChecksum, "section indices"},
		{"flipped byte in features", func(t *testing.T, dir string) {
			p := filepath.Join(dir, part2)
			s := meta(t, p).section("features")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[s.Offset+s.Length-1] ^= 0x01
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, ErrChecksum, "section features"},
		{"offsets", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m *PartManifest) { m.Offsets[3]++ })
		}, ErrManifest, "the row range is [1354,2031), but the manifest"},
		{"size", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m *PartManifest) { m.Files[2].Bytes += 4096 })
		}, ErrTruncated, "but the manifest"},
		{"checksum", func(t *testing.T, dir string) {
			editManifest(t, dir, func(m *PartManifest) { m.Files[2].Checksum ^= 1 })
		}, ErrManifest, "the metadata checksum"},
		{"another part's file", func(t *testing.T, dir string) {
			b, err := os.ReadFile(filepath.Join(dir, PartFileName(1)))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, part2), b, 0o644))
			editManifest(t, dir, func(m *PartManifest) { m.Files[2].Bytes = int64(len(b)) })
		}, ErrManifest, "the metadata checksum"},
		{"not a part", func(t *testing.T, dir string) {
			p := filepath.Join(dir, part2)
			require.NoError(t, WriteBinary(p, g))
			st, err := os.Stat(p)
			require.NoError(t, err)
			editManifest(t, dir, func(m *PartManifest) { m.Files[2].Bytes = st.Size() })
		}, ErrManifest, "is not a part file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t)
			tc.damage(t, dir)
			m, err := ReadPartManifest(dir)
			require.NoError(t, err)
			// The other parts load: a rank touches its own files only.
			_, err = LoadParts(dir, m, 0, 2, PartReadOptions{})
			require.NoError(t, err)
			for _, r := range [][2]int{{2, 3}, {2, 4}} {
				_, err = LoadParts(dir, m, r[0], r[1], PartReadOptions{})
				require.Error(t, err)
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, filepath.Join(dir, part2), pe.Path)
				assert.ErrorIs(t, err, tc.wantErr)
				assert.Contains(t, err.Error(), tc.wantMsg)
			}
			_, err = Load(dir, ReadOptions{})
			assert.ErrorContains(t, err, part2)
		})
	}

	t.Run("manifest", func(t *testing.T) {
		dir := copyDir(t)
		mpath := filepath.Join(dir, PartManifestName)
		b, err := os.ReadFile(mpath)
		require.NoError(t, err)
		var raw map[string]any
		require.NoError(t, json.Unmarshal(b, &raw))
		for _, tc := range []struct {
			name    string
			edit    func(raw map[string]any)
			wantMsg string
		}{
			{"format", func(r map[string]any) { r["format"] = "x" }, `format "x"`},
			{"version", func(r map[string]any) { r["version"] = 2 }, "manifest version 2"},
			{"offsets", func(r map[string]any) { r["offsets"] = []int{0, 1, 2} }, "4 parts with 3 offsets"},
			{"descending offsets", func(r map[string]any) { r["offsets"] = []int{0, 900, 800, 2000, 2708} }, "offsets[2] = 800 < offsets[1] = 900"},
			{"edges", func(r map[string]any) { r["num_edges"] = 1 }, "num_edges is 1"},
			{"file name", func(r map[string]any) {
				r["files"].([]any)[1].(map[string]any)["name"] = "../x.gnn"
			}, `file "../x.gnn"`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var r map[string]any
				require.NoError(t, json.Unmarshal(b, &r))
				tc.edit(r)
				nb, err := json.Marshal(r)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(mpath, nb, 0o644))
				_, err = ReadPartManifest(dir)
				var pe *ParseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, mpath, pe.Path)
				assert.Contains(t, err.Error(), tc.wantMsg)
			})
		}
		require.NoError(t, os.WriteFile(mpath, []byte("{"), 0o644))
		_, err = ReadPartManifest(dir)
		assert.ErrorContains(t, err, mpath+": malformed manifest")

		require.NoError(t, os.Remove(mpath))
		assert.False(t, IsPartDir(dir))
		_, err = ReadPartManifest(dir)
		assert.ErrorIs(t, err, fs.ErrNotExist)
		assert.ErrorContains(t, err, mpath+": missing file")
	})

	t.Run("part file alone", func(t *testing.T) {
		p := filepath.Join(src, part2)
		_, _, err := OpenBinary(p, ReadOptions{})
		assert.ErrorContains(t, err, p+": is part 2 of 4 of a partitioned dataset")
		_, err = Load(p, ReadOptions{})
		assert.ErrorContains(t, err, "partitioned dataset")

		// A whole dataset's file claiming version 3 is corrupt.
		path, _ := writeCoraBinary(t)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		binary.LittleEndian.PutUint32(b[8:], binVersionPart)
		binary.LittleEndian.PutUint32(b[60:], crc32.Checksum(b[:60], castagnoli))
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, _, err = OpenBinary(path, ReadOptions{})
		assert.ErrorContains(t, err, path+": corrupt metadata: a version 3 file with part false")
	})

	t.Run("bad range", func(t *testing.T) {
		m, err := ReadPartManifest(src)
		require.NoError(t, err)
		for _, r := range [][2]int{{2, 2}, {-1, 1}, {3, 5}} {
			_, err = LoadParts(src, m, r[0], r[1], PartReadOptions{})
			assert.ErrorContains(t, err, "of the 4 parts of "+filepath.Join(src, PartManifestName))
		}
		_, err = LoadParts(src, m, 0, 1, PartReadOptions{Cols: [2]int64{5, 3}})
		assert.ErrorContains(t, err, "columns [5,3)")
	})

	t.Run("rewrite removes the old manifest first", func(t *testing.T) {
		dir := copyDir(t)
		bad := &Dataset{Name: "bad", NumNodes: 2, Adj: csr(2, [][]int64{{5}, {}}, nil)}
		_, err := WriteParts(dir, bad, partition.Block(2, 1), "", nil)
		require.Error(t, err, "an invalid dataset is refused")
		assert.True(t, IsPartDir(dir), "refused before touching the directory")
		_, err = WriteParts(dir, g, partition.Block(g.NumNodes, 3), "", nil)
		require.NoError(t, err)
		m, err := ReadPartManifest(dir)
		require.NoError(t, err)
		assert.Equal(t, 3, m.Parts)
	})
}

// A manifest names its default split as a dataset does, refuses an
// unknown one naming the manifest, and gives the run parts' id ranges.
func TestPartManifestSplitAndRunOffsets(t *testing.T) {
	m := &PartManifest{Dir: "/d", Parts: 4, Offsets: []int64{0, 3, 5, 9, 12},
		Splits: []SplitSizes{{Name: "zeta", Train: 2}, {Name: "alpha", Train: 5}}}
	name, s, err := m.SplitNamed("")
	require.NoError(t, err)
	require.Equal(t, "alpha", name)
	require.Equal(t, int64(5), s.Train)
	name, _, err = m.SplitNamed("zeta")
	require.NoError(t, err)
	require.Equal(t, "zeta", name)
	_, _, err = m.SplitNamed("nope")
	require.ErrorContains(t, err, "/d/manifest.json has no split \"nope\"")
	require.Equal(t, []int64{0, 5, 12}, m.RunOffsets(2))
	require.Equal(t, m.Offsets, m.RunOffsets(4))
	require.Equal(t, []int64{0, 12}, m.RunOffsets(1))
}
