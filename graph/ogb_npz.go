package graph

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gnnmpi/dense"
	"gnnmpi/internal/f16"
	"gnnmpi/npy"
	"gnnmpi/sparse"
)

// The files and arrays of OGB's binary node-property layout (the layout
// OGB ships the datasets its master.csv marks binary in, papers100M
// among them).
const (
	npzData       = "data.npz"       // edge_index, node_feat, num_nodes_list, num_edges_list
	npzLabels     = "node-label.npz" // node_label
	npzEdges      = "edge_index"
	npzFeat       = "node_feat"
	npzNodes      = "num_nodes_list"
	npzEdgeCounts = "num_edges_list"
	npzLabel      = "node_label"
)

// npzRowBytes is the size of the row chunks the binary layout's reader
// converts at a time.
const npzRowBytes = 1 << 20

// isOGBBinary reports whether dir holds OGB's binary layout: raw/data.npz.
func isOGBBinary(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "raw", npzData))
	return err == nil
}

// readOGBBinary reads a node-classification dataset in OGB's binary
// layout (see ReadOGB) in the resolved feature format.
func readOGBBinary(dir string, opt ReadOptions, format FeatureFormat) (*Dataset, error) {
	raw := filepath.Join(dir, "raw")
	z, err := npy.OpenArchive(filepath.Join(raw, npzData))
	if err != nil {
		return nil, err
	}
	defer z.Close()
	n, err := npzCount(z, npzNodes, "graph")
	if err != nil {
		return nil, err
	}
	if n > maxNodes {
		return nil, parseErr(z.Path, 0, fmt.Sprintf("%s: %d nodes exceeds the limit of %d", npzNodes, n, int64(maxNodes)))
	}
	d := &Dataset{Name: datasetName(dir), NumNodes: n}
	if opt.Keep != nil {
		d.Rows = keptRows(n, opt.Keep)
	}
	var unlabelled unlabelledSet
	labelPath := filepath.Join(raw, npzLabels)
	if !opt.NoLabels {
		if _, err := os.Stat(labelPath); err == nil {
			if d.Labels, d.NumClasses, unlabelled, err = readNPZLabels(labelPath, n, d.Rows); err != nil {
				return nil, err
			}
		}
	}
	if !opt.NoFeatures && z.Has(npzFeat) {
		var half bool
		if d.Feat, d.FeatCSR, half, err = readNPZFeatures(z, n, d.Rows, format); err != nil {
			return nil, err
		}
		if half && opt.KeepHalf && d.Feat != nil {
			// float16 values widened exactly: narrowed back, exactly.
			d.Feat16 = dense.NewHalf(d.Feat.Rows, d.Feat.Cols)
			f16.Encode(d.Feat16.Data, d.Feat.Data)
			d.Feat = nil
		}
	}
	if d.Adj, err = readNPZEdges(z, n, d.Rows); err != nil {
		return nil, err
	}
	if d.Splits, err = readSplits(filepath.Join(dir, "split"), n, unlabelled, labelPath); err != nil {
		return nil, err
	}
	return d, nil
}

// datasetName returns the name of the dataset in dir: its base name.
func datasetName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return filepath.Base(abs)
	}
	return filepath.Base(filepath.Clean(dir))
}

// npzCount returns the one element of the 1-element array called name of
// z (one count for one graph; what names the thing counted).
func npzCount(z *npy.Archive, name, what string) (int64, error) {
	a, err := z.Open(name)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	if err := a.RequireShape(1); err != nil {
		return 0, fmt.Errorf("%w (one %s: gnnmpi reads node-property datasets of a single graph)", err, what)
	}
	v := make([]int64, 1)
	if err := npy.Read(a, v, 0); err != nil {
		return 0, err
	}
	if v[0] < 0 {
		return 0, parseErr(z.Path, 0, fmt.Sprintf("%s: negative count %d", name, v[0]))
	}
	return v[0], nil
}

// readNPZLabels reads node_label of the archive at path: n rows (shape
// (n,) or (n, 1)) of integers, or of floats holding integers or NaN for
// an unlabelled vertex. It returns the labels of the held rows (all when
// rows is nil), 1 + the largest label, and the unlabelled vertices.
func readNPZLabels(path string, n int64, rows []int64) ([]int32, int, unlabelledSet, error) {
	z, err := npy.OpenArchive(path)
	if err != nil {
		return nil, 0, nil, err
	}
	defer z.Close()
	a, err := z.Open(npzLabel)
	if err != nil {
		return nil, 0, nil, err
	}
	defer a.Close()
	if err := a.RequireShape(n, 1); err != nil && a.RequireShape(n) != nil {
		return nil, 0, nil, err
	}
	labels := make([]int32, heldRows(n, rows))
	var unlabelled unlabelledSet
	maxLabel := int64(-1)
	next := 0
	buf := make([]float64, min(n, npzRowBytes/8))
	for lo := int64(0); lo < n; lo += int64(len(buf)) {
		k := min(int64(len(buf)), n-lo)
		if a.DType.Kind == npy.Float {
			err = npy.Read(a, buf[:k], lo)
		} else {
			err = readIntsAsFloat(a, buf[:k], lo)
		}
		if err != nil {
			return nil, 0, nil, err
		}
		for i, x := range buf[:k] {
			g := lo + int64(i)
			l := int64(Unlabelled)
			switch {
			case math.IsNaN(x):
				unlabelled.add(n, g)
			case x < 0 || x != math.Trunc(x) || x >= MaxClasses:
				return nil, 0, nil, parseErr(path, 0, fmt.Sprintf("%s: row %d: label %v is not a class id in [0,%d) (graph.MaxClasses) nor NaN (unlabelled)", npzLabel, g, x, MaxClasses))
			default:
				l = int64(x)
				maxLabel = max(maxLabel, l)
			}
			if rows == nil {
				labels[g] = int32(l)
			} else if next < len(rows) && rows[next] == g {
				labels[next] = int32(l)
				next++
			}
		}
	}
	return labels, int(maxLabel + 1), unlabelled, nil
}

// readIntsAsFloat reads integer elements of a as float64 (exact below
// 2⁵³, far above MaxClasses).
func readIntsAsFloat(a *npy.Array, dst []float64, off int64) error {
	ints := make([]int64, len(dst))
	if err := npy.Read(a, ints, off); err != nil {
		return err
	}
	for i, v := range ints {
		dst[i] = float64(v)
	}
	return nil
}

// readNPZFeatures reads node_feat (n×f floats, float16, float32 or
// float64, converted to float32) of z, holding the held rows in format
// as the csv reader does (featBuilder), and reports whether the entry is
// float16. Every value must be finite.
func readNPZFeatures(z *npy.Archive, n int64, rows []int64, format FeatureFormat) (*dense.Matrix, *sparse.Matrix[float32], bool, error) {
	a, err := z.Open(npzFeat)
	if err != nil {
		return nil, nil, false, err
	}
	defer a.Close()
	if err := a.RequireShape(n, -1); err != nil {
		return nil, nil, false, err
	}
	if a.DType.Kind != npy.Float {
		return nil, nil, false, &npy.Error{Path: z.Path, Entry: npzFeat, Err: fmt.Errorf("%w: %s features, want float16, float32 or float64", npy.ErrDType, a.DType)}
	}
	half := a.DType.Size == 2
	dim := a.Shape[1]
	if dim > math.MaxInt32 || (n > 0 && heldRows(n, rows) > math.MaxInt/max(dim, 1)) {
		return nil, nil, false, parseErr(z.Path, 0, fmt.Sprintf("%s: %d×%d is too large", npzFeat, n, dim))
	}
	b := &featBuilder{format: format, n: n, held: heldRows(n, rows), rows: rows, ones: true, dim: int(dim)}
	if n == 0 {
		feat, csr := b.finish()
		return feat, csr, half, nil
	}
	if a.Fortran && !a.Mapped() {
		if err := readFortranFeatures(z.Path, a, b); err != nil {
			return nil, nil, false, err
		}
		feat, csr := b.finish()
		return feat, csr, half, nil
	}
	b.alloc()
	step := max(1, npzRowBytes/(4*max(dim, 1)))
	buf := make([]float32, step*dim)
	for lo := int64(0); lo < n; lo += step {
		hi := min(n, lo+step)
		chunk := buf[:(hi-lo)*dim]
		if err := npy.ReadRows(a, chunk, lo, hi); err != nil {
			return nil, nil, false, err
		}
		for g := lo; g < hi; g++ {
			row := chunk[(g-lo)*dim : (g-lo+1)*dim]
			for j, v := range row {
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
					return nil, nil, false, parseErr(z.Path, 0, fmt.Sprintf("%s: row %d, column %d: non-finite feature %v", npzFeat, g, j, v))
				}
			}
			b.values(g, row)
		}
	}
	feat, csr := b.finish()
	return feat, csr, half, nil
}

// fortranPiece is how many values of a column readFortranFeatures reads
// at a time (npzRowBytes of float32; a variable for tests).
var fortranPiece = int64(npzRowBytes / 4)

// readFortranFeatures fills b (n > 0 rows of b.dim columns) with the
// held rows of node_feat a, a streamed (deflated) Fortran-order array of
// the archive at path: column by column in storage order, through a
// buffer of fortranPiece values, so that the entry is decompressed
// forward and only the held rows are kept. The dense format takes one
// pass over the entry; auto and csr take two: the first counts the
// nonzeros (of the whole file, which choose auto's format and whether
// the rows are a pattern; of each held row, which size the sparse rows),
// the second fills the rows. The result is the featBuilder's of the same
// rows read in C order; a non-finite value is an error naming its row
// and column, the first in storage order.
func readFortranFeatures(path string, a *npy.Array, b *featBuilder) error {
	n, dim := b.n, b.dim
	buf := make([]float32, min(n, fortranPiece))
	// pass calls fn with every entry (g, q) of the file, and lid the index
	// of row g among the held rows (-1 when not held).
	pass := func(fn func(lid int64, q int, v float32)) error {
		c := a.Cursor()
		defer c.Close()
		for q := range dim {
			next := 0
			for at := int64(0); at < n; at += int64(len(buf)) {
				k := min(int64(len(buf)), n-at)
				if err := npy.Read(c, buf[:k], int64(q)*n+at); err != nil {
					return err
				}
				for i, v := range buf[:k] {
					g := at + int64(i)
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						return parseErr(path, 0, fmt.Sprintf("%s: row %d, column %d: non-finite feature %v", npzFeat, g, q, v))
					}
					lid := g
					if b.rows != nil {
						lid = -1
						if next < len(b.rows) && b.rows[next] == g {
							lid = int64(next)
							next++
						}
					}
					fn(lid, q, v)
				}
			}
		}
		return nil
	}
	fillDense := func() error {
		b.format, b.feat = FeatureDense, dense.New(int(b.held), dim)
		data := b.feat.Data
		return pass(func(lid int64, q int, v float32) {
			if lid >= 0 {
				data[lid*int64(dim)+int64(q)] = v
			}
		})
	}
	if b.format == FeatureDense {
		return fillDense()
	}
	indptr := make([]int64, b.held+1)
	err := pass(func(lid int64, _ int, v float32) {
		if v != 0 {
			b.nnz++
			b.ones = b.ones && v == 1
			if lid >= 0 {
				indptr[lid+1]++
			}
		}
	})
	if err != nil {
		return err
	}
	if b.format == FeatureAuto && !sparseByDensity(b.nnz, n, dim) {
		return fillDense()
	}
	for i := range b.held {
		indptr[i+1] += indptr[i]
	}
	m := &sparse.Matrix[float32]{NRows: b.held, NCols: int64(dim), Indptr: indptr,
		Indices: make([]int64, indptr[b.held]), Values: make([]float32, indptr[b.held])}
	at := slices.Clone(indptr[:b.held]) // the next free slot of each row
	err = pass(func(lid int64, q int, v float32) {
		if v != 0 && lid >= 0 {
			m.Indices[at[lid]], m.Values[at[lid]] = int64(q), v
			at[lid]++
		}
	})
	b.csr = m
	return err
}

// readNPZEdges reads edge_index (2×E integers: sources, then
// destinations) of z into a CSR matrix of the held rows and n columns, in
// file order within a row, as readEdges does; num_edges_list, if present,
// must say E. The array is read in chunks of edges (the two rows side by
// side with two cursors, so a deflated entry is streamed, not held), and
// only the held rows' edges are kept.
func readNPZEdges(z *npy.Archive, n int64, rows []int64) (*sparse.CSR, error) {
	a, err := z.Open(npzEdges)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if err := a.RequireShape(2, -1); err != nil {
		return nil, err
	}
	m := a.Shape[1]
	if z.Has(npzEdgeCounts) {
		want, err := npzCount(z, npzEdgeCounts, "graph")
		if err != nil {
			return nil, err
		}
		if want != m {
			return nil, parseErr(z.Path, 0, fmt.Sprintf("%s has %d edges, but %s says %d", npzEdges, m, npzEdgeCounts, want))
		}
	}
	held := heldRows(n, rows)
	hint := m
	if rows != nil && n > 0 {
		hint = int64(float64(m) * float64(held) / float64(n) * 1.05)
	}
	b := newEdgeBuilder(held, min(hint, m))
	row := rowFinder{rows: rows, prevSrc: -1}
	const step = npzRowBytes / 32 // edges a chunk: 256 KiB of sources, as much of destinations
	src, dst := make([]int64, step), make([]int64, step)
	var pair []int64
	srcs, dsts := a.Cursor(), a.Cursor()
	defer srcs.Close()
	defer dsts.Close()
	for lo := int64(0); lo < m; lo += step {
		k := min(step, m-lo)
		if a.Fortran { // (0, e) and (1, e) are adjacent
			if pair == nil {
				pair = make([]int64, 2*step)
			}
			if err := npy.Read(srcs, pair[:2*k], 2*lo); err != nil {
				return nil, err
			}
			for i := range k {
				src[i], dst[i] = pair[2*i], pair[2*i+1]
			}
		} else {
			if err := npy.Read(srcs, src[:k], lo); err != nil {
				return nil, err
			}
			if err := npy.Read(dsts, dst[:k], m+lo); err != nil {
				return nil, err
			}
		}
		for i := range k {
			s, t := src[i], dst[i]
			if s < 0 || s >= n || t < 0 || t >= n {
				return nil, parseErr(z.Path, 0, fmt.Sprintf("%s: edge %d (%d, %d): vertex id out of range [0,%d)", npzEdges, lo+i, s, t, n))
			}
			if lid, ok := row.find(s); ok {
				b.add(lid, t)
			}
		}
	}
	adj, err := b.csr(n)
	if err != nil {
		// Unreachable: every index was checked above.
		return nil, parseErr(z.Path, 0, err.Error())
	}
	return adj, nil
}
