package graph

import (
	"fmt"
	"gnnmpi/internal/f16"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gnnmpi/internal/textfile"
	"gnnmpi/npy"
)

// OGBRows reads slices of a dataset in OGB's binary layout (see ReadOGB:
// raw/data.npz, raw/node-label.npz, split/) for a rank of a distributed
// job that holds only its block of rows: a range of edge_index's columns,
// and the features, labels and split members of a range of vertices. No
// method holds a whole array: stored entries are memory-mapped and read
// in place, deflated ones streamed once up to the range and then kept
// only for it. Package partition/distpart turns the edge slices of the
// ranks into row blocks.
//
// An OGBRows may be used by one goroutine at a time.
type OGBRows struct {
	dir  string
	z    *npy.Archive
	n, m int64
	dim  int
}

// OpenOGBRows opens the binary OGB layout in dir. It checks the counts
// (num_nodes_list, num_edges_list against edge_index) and the shapes of
// edge_index and node_feat; the values are checked by the methods that
// read them. A directory without raw/data.npz gives an error wrapping
// fs.ErrNotExist. The caller closes it.
func OpenOGBRows(dir string) (*OGBRows, error) {
	if !isOGBBinary(dir) {
		return nil, &ParseError{Path: filepath.Join(dir, "raw", npzData), Msg: "missing file", Err: fs.ErrNotExist}
	}
	z, err := npy.OpenArchive(filepath.Join(dir, "raw", npzData))
	if err != nil {
		return nil, err
	}
	r := &OGBRows{dir: dir, z: z}
	if err := r.check(); err != nil {
		z.Close()
		return nil, err
	}
	return r, nil
}

// check reads the counts and checks the shapes of r's arrays.
func (r *OGBRows) check() error {
	z := r.z
	n, err := npzCount(z, npzNodes, "graph")
	if err != nil {
		return err
	}
	if n > maxNodes {
		return parseErr(z.Path, 0, fmt.Sprintf("%s: %d nodes exceeds the limit of %d", npzNodes, n, int64(maxNodes)))
	}
	r.n = n
	a, err := z.Open(npzEdges)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.RequireShape(2, -1); err != nil {
		return err
	}
	r.m = a.Shape[1]
	if z.Has(npzEdgeCounts) {
		want, err := npzCount(z, npzEdgeCounts, "graph")
		if err != nil {
			return err
		}
		if want != r.m {
			return parseErr(z.Path, 0, fmt.Sprintf("%s has %d edges, but %s says %d", npzEdges, r.m, npzEdgeCounts, want))
		}
	}
	if z.Has(npzFeat) {
		f, err := r.openFeat()
		if err != nil {
			return err
		}
		r.dim = int(f.Shape[1])
		f.Close()
	}
	return nil
}

// openFeat opens node_feat and checks its shape and dtype.
func (r *OGBRows) openFeat() (*npy.Array, error) {
	a, err := r.z.Open(npzFeat)
	if err != nil {
		return nil, err
	}
	err = a.RequireShape(r.n, -1)
	switch {
	case err != nil:
	case a.DType.Kind != npy.Float:
		err = &npy.Error{Path: r.z.Path, Entry: npzFeat, Err: fmt.Errorf("%w: %s features, want float16, float32 or float64", npy.ErrDType, a.DType)}
	case a.Shape[1] > math.MaxInt32 || (r.n > 0 && a.Shape[1] > math.MaxInt/r.n):
		err = parseErr(r.z.Path, 0, fmt.Sprintf("%s: %d×%d is too large", npzFeat, r.n, a.Shape[1]))
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// Close closes the archive.
func (r *OGBRows) Close() error { return r.z.Close() }

// Name returns the dataset's name: the base name of its directory.
func (r *OGBRows) Name() string { return datasetName(r.dir) }

// Path returns the directory the dataset was opened from.
func (r *OGBRows) Path() string { return r.dir }

// NumNodes returns the number of vertices n.
func (r *OGBRows) NumNodes() int64 { return r.n }

// NumEdges returns the number of columns E of edge_index: the edges as
// stored, before any symmetrization or deduplication.
func (r *OGBRows) NumEdges() int64 { return r.m }

// NumFeatures returns the feature dimension, 0 without node_feat.
func (r *OGBRows) NumFeatures() int { return r.dim }

// HasLabels reports whether the dataset has raw/node-label.npz.
func (r *OGBRows) HasLabels() bool {
	_, err := os.Stat(r.labelPath())
	return err == nil
}

func (r *OGBRows) labelPath() string { return filepath.Join(r.dir, "raw", npzLabels) }

// ogbEdgeChunk is how many edges EdgeChunks reads at a time.
const ogbEdgeChunk = npzRowBytes / 32

// EdgeChunks reads the edges [lo, hi) of edge_index (columns lo … hi−1)
// in chunks of at most 32768 and calls fn with each chunk's sources and
// destinations, which it reuses for the next chunk. An edge whose
// vertex lies outside [0, NumNodes) gives a *ParseError naming the file
// and the edge; an error of fn is returned as is. It will panic unless
// 0 ≤ lo ≤ hi ≤ NumEdges.
func (r *OGBRows) EdgeChunks(lo, hi int64, fn func(src, dst []int64) error) error {
	if lo < 0 || hi < lo || hi > r.m {
		panic("graph: OGBRows.EdgeChunks: edges out of range")
	}
	a, err := r.z.Open(npzEdges)
	if err != nil {
		return err
	}
	defer a.Close()
	m, n := r.m, r.n
	step := int64(ogbEdgeChunk)
	src, dst := make([]int64, min(step, hi-lo)), make([]int64, min(step, hi-lo))
	var pair []int64
	srcs, dsts := a.Cursor(), a.Cursor()
	defer srcs.Close()
	defer dsts.Close()
	for at := lo; at < hi; at += step {
		k := min(step, hi-at)
		if a.Fortran { // (0, e) and (1, e) are adjacent
			if pair == nil {
				pair = make([]int64, 2*len(src))
			}
			if err := npy.Read(srcs, pair[:2*k], 2*at); err != nil {
				return err
			}
			for i := range k {
				src[i], dst[i] = pair[2*i], pair[2*i+1]
			}
		} else {
			if err := npy.Read(srcs, src[:k], at); err != nil {
				return err
			}
			if err := npy.Read(dsts, dst[:k], m+at); err != nil {
				return err
			}
		}
		for i := range k {
			if s, t := src[i], dst[i]; s < 0 || s >= n || t < 0 || t >= n {
				return parseErr(r.z.Path, 0, fmt.Sprintf("%s: edge %d (%d, %d): vertex id out of range [0,%d)", npzEdges, at+i, s, t, n))
			}
		}
		if err := fn(src[:k], dst[:k]); err != nil {
			return err
		}
	}
	return nil
}

// Labels returns the labels of vertices [lo, hi) from node_label
// (Unlabelled for NaN), nil without raw/node-label.npz. A label that is
// neither a class id in [0, MaxClasses) nor NaN gives a *ParseError
// naming the file and the row. It will panic unless 0 ≤ lo ≤ hi ≤
// NumNodes.
func (r *OGBRows) Labels(lo, hi int64) ([]int32, error) {
	r.checkRange(lo, hi)
	if !r.HasLabels() {
		return nil, nil
	}
	path := r.labelPath()
	z, err := npy.OpenArchive(path)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	a, err := z.Open(npzLabel)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if err := a.RequireShape(r.n, 1); err != nil && a.RequireShape(r.n) != nil {
		return nil, err
	}
	vals := make([]float64, hi-lo)
	if a.DType.Kind == npy.Float {
		err = npy.Read(a, vals, lo)
	} else {
		err = readIntsAsFloat(a, vals, lo)
	}
	if err != nil {
		return nil, err
	}
	labels := make([]int32, hi-lo)
	for i, x := range vals {
		switch {
		case math.IsNaN(x):
			labels[i] = Unlabelled
		case x < 0 || x != math.Trunc(x) || x >= MaxClasses:
			return nil, parseErr(path, 0, fmt.Sprintf("%s: row %d: label %v is not a class id in [0,%d) (graph.MaxClasses) nor NaN (unlabelled)", npzLabel, lo+int64(i), x, MaxClasses))
		default:
			labels[i] = int32(x)
		}
	}
	return labels, nil
}

// Features returns the feature rows [lo, hi) of node_feat, widened to
// float32, or nil without node_feat. A feature that is not finite gives
// a *ParseError naming the file, the row and the column. It will panic
// unless 0 ≤ lo ≤ hi ≤ NumNodes.
func (r *OGBRows) Features(lo, hi int64) (*FeatureBlock, error) {
	r.checkRange(lo, hi)
	if !r.z.Has(npzFeat) {
		return nil, nil
	}
	a, err := r.openFeat()
	if err != nil {
		return nil, err
	}
	defer a.Close()
	dim := int64(r.dim)
	data := make([]float32, (hi-lo)*dim)
	if err := npy.ReadRows(a, data, lo, hi); err != nil {
		return nil, err
	}
	for k, v := range data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, parseErr(r.z.Path, 0, fmt.Sprintf("%s: row %d, column %d: non-finite feature %v", npzFeat, lo+int64(k)/dim, int64(k)%dim, v))
		}
	}
	return &FeatureBlock{src: featSource{path: r.z.Path, dim: r.dim, dense: data}, rows: hi - lo}, nil
}

// OGBFeatureReader reads rows of node_feat by vertex id, for a writer
// that holds a chunk of rows at a time (OGBRows.FeatureReader). A mapped
// node_feat is read in any order; a streamed one (a deflated entry)
// forward only, so that ascending ids over all calls read it in one
// pass. It may be used by one goroutine at a time.
type OGBFeatureReader struct {
	a    *npy.Array
	path string
	dim  int64
	next int64 // the lowest id a streamed array can still read
}

// FeatureReader returns a reader of node_feat's rows, nil without
// node_feat or when node_feat is a Fortran-order array in a deflated
// entry, whose rows cannot be read by id in one forward pass (Features
// reads a range of them). The caller closes it.
func (r *OGBRows) FeatureReader() (*OGBFeatureReader, error) {
	if !r.z.Has(npzFeat) {
		return nil, nil
	}
	a, err := r.openFeat()
	if err != nil {
		return nil, err
	}
	if a.Fortran && !a.Mapped() {
		return nil, a.Close()
	}
	return &OGBFeatureReader{a: a, path: r.z.Path, dim: int64(r.dim)}, nil
}

// Read fills dst, len(ids) × NumFeatures, with the feature rows of ids,
// widened to float32, reading each run of consecutive ids at once. On a
// streamed node_feat the ids must ascend, also from one call to the
// next (else an error wrapping npy.ErrBackward). A feature that is not
// finite gives a *ParseError naming the file, the row and the column.
// It will panic if len(dst) is not len(ids) × NumFeatures or an id lies
// outside [0, NumNodes).
func (f *OGBFeatureReader) Read(ids []int64, dst []float32) error {
	return readFeatureRuns(f, ids, dst, func(v float32) (float32, bool) {
		return v, !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
	})
}

// readFeatureRuns fills dst with the feature rows of ids, reading each run
// of consecutive ids at once, and checks every value with finite (which
// also gives the value for the error).
func readFeatureRuns[T float32 | uint16](f *OGBFeatureReader, ids []int64, dst []T, finite func(T) (float32, bool)) error {
	dim := f.dim
	if int64(len(dst)) != int64(len(ids))*dim {
		panic("graph: OGBFeatureReader: dst does not hold the rows")
	}
	for k := 0; k < len(ids); {
		run := 1
		for k+run < len(ids) && ids[k+run] == ids[k]+int64(run) {
			run++
		}
		rows := dst[int64(k)*dim : int64(k+run)*dim]
		var err error
		if f.a.Fortran {
			err = npy.ReadRows(f.a, rows, ids[k], ids[k]+int64(run))
		} else {
			err = npy.Read(f.a, rows, ids[k]*dim)
		}
		if err != nil {
			return err
		}
		for e, w := range rows {
			if v, ok := finite(w); !ok {
				return parseErr(f.path, 0, fmt.Sprintf("%s: row %d, column %d: non-finite feature %v", npzFeat, ids[k]+int64(e)/dim, int64(e)%dim, v))
			}
		}
		k += run
	}
	return nil
}

// Half reports whether node_feat is float16, whose rows ReadHalf reads
// without widening them.
func (f *OGBFeatureReader) Half() bool { return f.a.DType.Kind == npy.Float && f.a.DType.Size == 2 }

// ReadHalf is Read for a float16 node_feat (Half): it fills dst with the
// rows' raw half-precision words, unwidened. A word that is not finite
// (all exponent bits set) gives a *ParseError naming the file, the row
// and the column; node_feat of another dtype an error wrapping
// npy.ErrDType.
func (f *OGBFeatureReader) ReadHalf(ids []int64, dst []uint16) error {
	return readFeatureRuns(f, ids, dst, func(w uint16) (float32, bool) {
		return f16.ToFloat32(w), w&0x7c00 != 0x7c00 // all exponent bits set: infinite or NaN
	})
}

// Close closes the reader.
func (f *OGBFeatureReader) Close() error { return f.a.Close() }

// SplitMembers streams every split file of the dataset and returns, for
// every split, its train, validation and test members in [lo, hi),
// ascending, and the sizes of the whole splits, sorted by name. labels
// are the labels of vertices [lo, hi) (Labels; nil without labels): a
// member in [lo, hi) that is Unlabelled is an error, and so is a member
// repeated within [lo, hi) or outside [0, NumNodes), each a *ParseError
// naming the file. Called over a set of ranges covering [0, NumNodes), it
// checks what ReadOGB checks of the splits. It will panic unless
// 0 ≤ lo ≤ hi ≤ NumNodes.
func (r *OGBRows) SplitMembers(lo, hi int64, labels []int32) (map[string]Split, []SplitSizes, error) {
	r.checkRange(lo, hi)
	dir := filepath.Join(r.dir, "split")
	out := map[string]Split{}
	sizes := []SplitSizes{}
	dirs, err := splitDirs(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, sd := range dirs {
		var kept [len(splitParts)][]int64
		var count [len(splitParts)]int64
		for k, p := range sd.files {
			if kept[k], count[k], err = r.splitIDs(p, lo, hi, labels); err != nil {
				return nil, nil, err
			}
		}
		out[sd.name] = Split{Train: kept[0], Valid: kept[1], Test: kept[2]}
		sizes = append(sizes, SplitSizes{Name: sd.name, Train: count[0], Valid: count[1], Test: count[2]})
	}
	slices.SortFunc(sizes, func(a, b SplitSizes) int { return strings.Compare(a.Name, b.Name) })
	return out, sizes, nil
}

// splitIDs streams the split file at path (one vertex id a line) and
// returns its ids in [lo, hi), ascending, and the number of its lines.
func (r *OGBRows) splitIDs(path string, lo, hi int64, labels []int32) ([]int64, int64, error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer lr.Close()
	ids := []int64{}
	var count int64
	for line := range lr.All() {
		v, ok := textfile.ParseInt(line)
		if !ok {
			return nil, 0, lr.Errorf("malformed vertex id %s: want one integer", textfile.Quote(line))
		}
		if err := checkID(lr, v, r.n); err != nil {
			return nil, 0, err
		}
		count++
		if v < lo || v >= hi {
			continue
		}
		if labels != nil && labels[v-lo] == Unlabelled {
			return nil, 0, lr.Errorf("vertex %d is unlabelled in %s: a split holds labelled vertices only", v, npzLabels)
		}
		ids = append(ids, v)
	}
	if err := lr.Err(); err != nil {
		return nil, 0, err
	}
	slices.Sort(ids)
	for k := 1; k < len(ids); k++ {
		if ids[k] == ids[k-1] {
			return nil, 0, parseErr(path, 0, fmt.Sprintf("repeated vertex id %d", ids[k]))
		}
	}
	return slices.Clip(ids), count, nil
}

// checkRange panics unless 0 ≤ lo ≤ hi ≤ NumNodes.
func (r *OGBRows) checkRange(lo, hi int64) {
	if lo < 0 || hi < lo || hi > r.n {
		panic("graph: OGBRows: rows out of range")
	}
}
