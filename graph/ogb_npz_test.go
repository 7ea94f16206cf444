package graph

import (
	"archive/zip"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/npy"
	"gnnmpi/sparse"
)

// npzGraph returns a random dataset with n vertices, m edges (repeats and
// self-loops allowed, rows unsorted in file order), dim features with
// density dens, labels of 5 classes with about a third unlabelled, and a
// split "random" of labelled vertices.
func npzGraph(seed uint64, n, m int64, dim int, dens float64) *Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	src, dst := make([]int64, m), make([]int64, m)
	for e := range m {
		src[e], dst[e] = rng.Int64N(n), rng.Int64N(n)
	}
	adj, err := sparse.FromCOO(n, n, src, dst, nil)
	if err != nil {
		panic(err)
	}
	feat := dense.New(int(n), dim)
	for i := range feat.Data {
		if rng.Float64() < dens {
			feat.Data[i] = float32(rng.NormFloat64())
		}
	}
	labels := make([]int32, n)
	var labelled []int64
	for g := range labels {
		labels[g] = int32(rng.IntN(5))
		if rng.IntN(3) == 0 {
			labels[g] = Unlabelled
		} else {
			labelled = append(labelled, int64(g))
		}
	}
	labels[0] = 4 // the class count does not hang on chance
	if labelled[0] != 0 {
		labelled = append([]int64{0}, labelled...)
	}
	var s Split
	for _, g := range labelled {
		switch rng.IntN(3) {
		case 0:
			s.Train = append(s.Train, g)
		case 1:
			s.Valid = append(s.Valid, g)
		default:
			s.Test = append(s.Test, g)
		}
	}
	return &Dataset{NumNodes: n, Adj: adj, Feat: feat, Labels: labels, NumClasses: 5, Splits: map[string]Split{"random": s}}
}

// writeNPZLayout writes d (whole, not validated, so that tests can damage
// it) in OGB's binary layout to dir: its splits as WriteOGB writes them,
// and raw/data.npz and raw/node-label.npz (float64 labels, NaN for
// Unlabelled), deflated when compress.
func writeNPZLayout(t *testing.T, dir string, d *Dataset, compress bool) {
	t.Helper()
	require.NoError(t, writeOGBSplits(filepath.Join(dir, "split"), d))
	raw := filepath.Join(dir, "raw")
	require.NoError(t, os.MkdirAll(raw, 0o755))
	n, m := d.NumNodes, d.Adj.NNZ()
	edges := make([]int64, 2*m)
	for i := range n {
		for k := d.Adj.Indptr[i]; k < d.Adj.Indptr[i+1]; k++ {
			edges[k], edges[m+k] = i, d.Adj.Indices[k]
		}
	}
	var buf bytes.Buffer
	aw := npy.NewArchiveWriter(&buf, compress)
	require.NoError(t, npy.Add(aw, "edge_index", []int64{2, m}, edges))
	if d.Feat != nil {
		require.NoError(t, npy.Add(aw, "node_feat", []int64{int64(d.Feat.Rows), int64(d.Feat.Cols)}, d.Feat.Data))
	}
	require.NoError(t, npy.Add(aw, "num_nodes_list", []int64{1}, []int64{n}))
	require.NoError(t, npy.Add(aw, "num_edges_list", []int64{1}, []int64{m}))
	require.NoError(t, aw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(raw, "data.npz"), buf.Bytes(), 0o644))
	if d.Labels != nil {
		labels := make([]float64, n)
		for g, l := range d.Labels {
			labels[g] = float64(l)
			if l == Unlabelled {
				labels[g] = math.NaN()
			}
		}
		buf.Reset()
		aw := npy.NewArchiveWriter(&buf, compress)
		require.NoError(t, npy.Add(aw, "node_label", []int64{n, 1}, labels))
		require.NoError(t, aw.Close())
		require.NoError(t, os.WriteFile(filepath.Join(raw, "node-label.npz"), buf.Bytes(), 0o644))
	}
}

// TestOGBBinaryMatchesCSV writes one random graph in both OGB layouts and
// requires the same Dataset from each, loaded whole, by rows, in every
// feature format, and after a round trip through .gnn.
func TestOGBBinaryMatchesCSV(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dens     float64
		compress bool
	}{
		{"dense/stored", 0.9, false},
		{"dense/deflated", 0.9, true},
		{"sparse/stored", 0.05, false},
		{"sparse/deflated", 0.05, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := npzGraph(3, 200, 1500, 7, tc.dens)
			root := t.TempDir()
			csvDir, npzDir := filepath.Join(root, "csv", "g"), filepath.Join(root, "npz", "g")
			require.NoError(t, WriteOGB(csvDir, g))
			writeNPZLayout(t, npzDir, g, tc.compress)
			keep := func(gid int64) bool { return gid%3 != 1 }
			for _, opt := range []ReadOptions{
				{},
				{Keep: keep},
				{FeatureFormat: FeatureCSR},
				{FeatureFormat: FeatureDense, Keep: keep},
				{NoFeatures: true, NoLabels: true},
			} {
				want, err := Load(csvDir, opt)
				require.NoError(t, err)
				got, err := Load(npzDir, opt)
				require.NoError(t, err)
				require.NoError(t, got.Validate())
				require.Equal(t, want, got, "options %+v", opt)
				if opt.Keep != nil || opt.NoLabels {
					continue
				}
				require.Equal(t, g.Labels, got.Labels)
				// convert: the .gnn of the npz layout reads back the same.
				gnn := filepath.Join(root, fmt.Sprintf("g-%s.gnn", opt.FeatureFormat))
				require.NoError(t, WriteBinary(gnn, got))
				back, err := Load(gnn, opt)
				require.NoError(t, err)
				back.Name = want.Name
				require.Equal(t, want.Adj, back.Adj)
				require.Equal(t, want.Feat, back.Feat)
				require.Equal(t, want.FeatCSR, back.FeatCSR)
				require.Equal(t, want.Labels, back.Labels)
				require.Equal(t, want.NumClasses, back.NumClasses)
				require.Equal(t, want.Splits, back.Splits)
			}
		})
	}
}

// TestOGBBinaryFortranEdges reads an edge_index stored in Fortran order
// (each edge's source and destination adjacent).
func TestOGBBinaryFortranEdges(t *testing.T) {
	g := npzGraph(5, 30, 100, 3, 1)
	dir := filepath.Join(t.TempDir(), "g")
	writeNPZLayout(t, dir, g, false)
	m := g.Adj.NNZ()
	pairs := make([]int64, 0, 2*m)
	for i := range g.NumNodes {
		for k := g.Adj.Indptr[i]; k < g.Adj.Indptr[i+1]; k++ {
			pairs = append(pairs, i, g.Adj.Indices[k])
		}
	}
	var ei bytes.Buffer
	require.NoError(t, npy.Write(&ei, []int64{2, m}, pairs))
	// "True " is as long as "False": the header keeps its length.
	fortran := bytes.Replace(ei.Bytes(), []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "edge_index.npy", Method: zip.Store})
	require.NoError(t, err)
	_, err = w.Write(fortran)
	require.NoError(t, err)
	w, err = zw.CreateHeader(&zip.FileHeader{Name: "num_nodes_list.npy", Method: zip.Deflate})
	require.NoError(t, err)
	require.NoError(t, npy.Write(w, []int64{1}, []int64{g.NumNodes}))
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "raw", "data.npz"), buf.Bytes(), 0o644))
	got, err := Load(dir, ReadOptions{NoLabels: true})
	require.NoError(t, err)
	require.Equal(t, g.Adj, got.Adj)
	require.False(t, got.HasFeatures())
}

// TestOGBBinaryErrors checks that bad binary-layout input is an error
// naming the file and the array (or the split file and line).
func TestOGBBinaryErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, g *Dataset)
		want   []string
	}{
		{"non-finite feature", func(t *testing.T, dir string, g *Dataset) {
			g.Feat.Row(17)[2] = float32(math.Inf(-1))
			writeNPZLayout(t, dir, g, true)
		}, []string{"raw/data.npz", "node_feat: row 17, column 2: non-finite feature -Inf"}},
		{"NaN feature", func(t *testing.T, dir string, g *Dataset) {
			g.Feat.Row(3)[0] = float32(math.NaN())
			writeNPZLayout(t, dir, g, false)
		}, []string{"raw/data.npz", "node_feat: row 3, column 0: non-finite feature NaN"}},
		{"unlabelled in split", func(t *testing.T, dir string, g *Dataset) {
			s := g.Splits["random"]
			g.Labels[s.Valid[1]] = Unlabelled
			writeNPZLayout(t, dir, g, false)
		}, []string{"split/random/valid.csv.gz:2:", "is unlabelled in node-label.npz"}},
		{"feature rows", func(t *testing.T, dir string, g *Dataset) {
			g.Feat = dense.New(int(g.NumNodes)-1, 7)
			writeNPZLayout(t, dir, g, false)
		}, []string{"raw/data.npz: node_feat: shape mismatch: shape (39, 7), want (40, *)"}},
		{"fractional label", func(t *testing.T, dir string, g *Dataset) {
			writeNPZLayout(t, dir, g, false)
			var buf bytes.Buffer
			aw := npy.NewArchiveWriter(&buf, false)
			labels := make([]float32, g.NumNodes)
			labels[9] = 1.5
			require.NoError(t, npy.Add(aw, "node_label", []int64{g.NumNodes}, labels))
			require.NoError(t, aw.Close())
			require.NoError(t, os.WriteFile(filepath.Join(dir, "raw", "node-label.npz"), buf.Bytes(), 0o644))
		}, []string{"raw/node-label.npz", "node_label: row 9: label 1.5 is not a class id"}},
		{"edge out of range", func(t *testing.T, dir string, g *Dataset) {
			g.Adj.Indices[5] = g.NumNodes
			writeNPZLayout(t, dir, g, false)
		}, []string{"raw/data.npz", "edge_index: edge 5", "out of range [0,40)"}},
		{"two graphs", func(t *testing.T, dir string, g *Dataset) {
			writeNPZLayout(t, dir, g, false)
			rewriteArray(t, filepath.Join(dir, "raw", "data.npz"), "num_nodes_list", []int64{2}, []int64{20, 20})
		}, []string{"raw/data.npz: num_nodes_list: shape mismatch", "single graph"}},
		{"edge count", func(t *testing.T, dir string, g *Dataset) {
			writeNPZLayout(t, dir, g, false)
			rewriteArray(t, filepath.Join(dir, "raw", "data.npz"), "num_edges_list", []int64{1}, []int64{3})
		}, []string{"raw/data.npz", "edge_index has 150 edges, but num_edges_list says 3"}},
		{"missing edges", func(t *testing.T, dir string, g *Dataset) {
			writeNPZLayout(t, dir, g, false)
			rewriteArray(t, filepath.Join(dir, "raw", "data.npz"), "edge_index", nil, nil)
		}, []string{"raw/data.npz: edge_index: ", "no such array"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := npzGraph(9, 40, 150, 7, 1)
			dir := filepath.Join(t.TempDir(), "g")
			tc.damage(t, dir, g)
			_, err := Load(dir, ReadOptions{})
			require.Error(t, err)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// rewriteArray replaces the array name of the archive at path by one of
// the given shape and data (shape nil: removes it).
func rewriteArray(t *testing.T, path, name string, shape, data []int64) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if strings.TrimSuffix(f.Name, ".npy") == name {
			continue
		}
		require.NoError(t, zw.Copy(f))
	}
	require.NoError(t, zr.Close())
	if shape != nil {
		w, err := zw.Create(name + ".npy")
		require.NoError(t, err)
		require.NoError(t, npy.Write(w, shape, data))
	}
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// TestOGBBinaryEdgeMemory requires that a rank keeping an eighth of the
// rows allocates well under one copy of edge_index (16 bytes an edge),
// stored (mapped) or deflated (streamed): the array is read in chunks and
// only kept rows' edges are held.
func TestOGBBinaryEdgeMemory(t *testing.T) {
	const n, m = 1000, 1_000_000
	g := npzGraph(11, n, m, 1, 1)
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("compress=", compress), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "g")
			writeNPZLayout(t, dir, g, compress)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d, err := Load(dir, ReadOptions{Keep: func(gid int64) bool { return gid%8 == 0 }, NoFeatures: true, NoLabels: true})
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			alloc := after.TotalAlloc - before.TotalAlloc
			// One copy of edge_index is 16·m bytes; the kept edges (about
			// m/8 destinations, 8 bytes each, 1.05× reserved: 1.05 MB), two
			// 256 KiB chunks and the decompressors' buffers stay under a
			// quarter of it.
			t.Logf("kept %d of %d edges; allocated %d bytes (edge_index: %d)", d.Adj.NNZ(), m, alloc, 16*m)
			require.Less(t, alloc, uint64(16*m/4))
		})
	}
}

// writeFortranFeat rewrites raw/data.npz of the layout in dir with d's
// node_feat in Fortran order (column-major), deflated; the other entries
// are copied as they are.
func writeFortranFeat(t *testing.T, dir string, d *Dataset) {
	t.Helper()
	path := filepath.Join(dir, "raw", "data.npz")
	zr, err := zip.OpenReader(path)
	require.NoError(t, err)
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if f.Name != "node_feat.npy" {
			require.NoError(t, zw.Copy(f))
		}
	}
	n, dim := d.Feat.Rows, d.Feat.Cols
	cols := make([]float32, 0, n*dim)
	for j := range dim {
		for i := range n {
			cols = append(cols, d.Feat.Row(i)[j])
		}
	}
	var nf bytes.Buffer
	require.NoError(t, npy.Write(&nf, []int64{int64(n), int64(dim)}, cols))
	// "True " is as long as "False": the header keeps its length.
	fortran := bytes.Replace(nf.Bytes(), []byte("'fortran_order': False"), []byte("'fortran_order': True "), 1)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "node_feat.npy", Method: zip.Deflate})
	require.NoError(t, err)
	_, err = w.Write(fortran)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// TestOGBBinaryFortranFeatures reads a deflated Fortran-order node_feat
// (streamed column by column, in pieces of 64 values here so that every
// column takes several) and requires the Dataset of the same graph with
// a C-order node_feat, whole and by rows, in every feature format, and
// the same rows from OGBRows.Features; a non-finite value is named by
// its row and column.
func TestOGBBinaryFortranFeatures(t *testing.T) {
	defer func(p int64) { fortranPiece = p }(fortranPiece)
	fortranPiece = 64
	for _, dens := range []float64{0.9, 0.05} {
		g := npzGraph(5, 300, 1500, 7, dens)
		root := t.TempDir()
		cDir, fDir := filepath.Join(root, "c", "g"), filepath.Join(root, "f", "g")
		writeNPZLayout(t, cDir, g, true)
		writeNPZLayout(t, fDir, g, true)
		writeFortranFeat(t, fDir, g)
		keep := func(gid int64) bool { return gid%3 != 1 }
		for _, opt := range []ReadOptions{
			{},
			{Keep: keep},
			{FeatureFormat: FeatureCSR},
			{FeatureFormat: FeatureCSR, Keep: keep},
			{FeatureFormat: FeatureDense},
			{FeatureFormat: FeatureDense, Keep: keep},
		} {
			want, err := Load(cDir, opt)
			require.NoError(t, err)
			got, err := Load(fDir, opt)
			require.NoError(t, err, "density %v, options %+v", dens, opt)
			require.NoError(t, got.Validate())
			require.Equal(t, want, got, "density %v, options %+v", dens, opt)
		}
		cr, err := OpenOGBRows(cDir)
		require.NoError(t, err)
		fr, err := OpenOGBRows(fDir)
		require.NoError(t, err)
		for _, r := range [][2]int64{{0, 300}, {0, 1}, {17, 150}, {299, 300}, {40, 40}} {
			want, err := cr.Features(r[0], r[1])
			require.NoError(t, err)
			got, err := fr.Features(r[0], r[1])
			require.NoError(t, err, "rows %v", r)
			require.Equal(t, want.src.dense, got.src.dense, "density %v, rows %v", dens, r)
		}
		require.NoError(t, cr.Close())
		require.NoError(t, fr.Close())
	}
	g := npzGraph(5, 300, 1500, 7, 0.9)
	g.Feat.Row(250)[4] = float32(math.NaN())
	dir := filepath.Join(t.TempDir(), "g")
	writeNPZLayout(t, dir, g, true)
	writeFortranFeat(t, dir, g)
	for _, f := range []FeatureFormat{FeatureAuto, FeatureDense} {
		_, err := Load(dir, ReadOptions{FeatureFormat: f})
		require.ErrorContains(t, err, "raw/data.npz")
		require.ErrorContains(t, err, "node_feat: row 250, column 4: non-finite feature NaN")
	}
}
