package graph

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gnnmpi/dense"
	"gnnmpi/internal/textfile"
	"gnnmpi/sparse"
)

// ReadOptions selects what a reader loads. The zero value loads everything.
type ReadOptions struct {
	// Keep, if not nil, selects the rows to hold: only vertices gid with
	// Keep(gid) true get adjacency rows, features and labels, and the
	// Dataset's Rows lists them in ascending order. Keep is called once
	// for every vertex of the graph, in ascending order, from the calling
	// goroutine. nil keeps all rows.
	Keep func(gid int64) bool
	// NoFeatures skips the node features: Dataset.Feat and FeatCSR are
	// nil.
	NoFeatures bool
	// FeatureFormat says how to hold the features: FeatureAuto (the
	// default, also "") by their density over the whole file
	// (SparseDensity), FeatureDense or FeatureCSR. Readers of files
	// without features ignore it.
	FeatureFormat FeatureFormat
	// NoLabels skips the node labels: Dataset.Labels is nil and
	// NumClasses is 0.
	NoLabels bool
	// NoVerify skips checksum verification of binary datasets
	// (OpenBinary). Text readers ignore it. A corrupted file read with
	// NoVerify may give a Dataset that fails Validate.
	NoVerify bool
	// KeepHalf holds dense features that a binary file stores in half
	// precision (a float16 features section), or an OGB npz layout's
	// float16 node_feat, as they are, in Dataset.Feat16, instead of
	// widening them to float32 in Feat (the npz's are read widened and
	// narrowed back, exactly). Other files, sparse features and the other
	// readers ignore it.
	KeepHalf bool
}

// maxNodes bounds the vertex count a text file may declare. It is far above
// any real graph and well below the point where sizes overflow.
const maxNodes = 1 << 40

// ReadOGB reads a node-classification dataset in the OGB raw layout:
//
//	dir/raw/num-node-list.csv.gz  the number of vertices n (required)
//	dir/raw/edge.csv.gz           "src,dst" per line, 0-based (required)
//	dir/raw/num-edge-list.csv.gz  the number of edge lines (optional; checked)
//	dir/raw/node-feat.csv.gz      n lines of comma-separated numbers (optional)
//	dir/raw/node-label.csv.gz     n lines of one integer class in [0, MaxClasses), or "nan" (optional)
//	dir/split/<name>/{train,valid,test}.csv.gz  vertex ids, one a line
//
// or in OGB's binary layout, chosen when dir/raw/data.npz exists:
//
//	dir/raw/data.npz        NumPy archive (package npy) of edge_index (2×E integers:
//	                        sources, then destinations), num_nodes_list (one count),
//	                        optional num_edges_list (one count, checked) and
//	                        node_feat (n×f float16, float32 or float64; optional)
//	dir/raw/node-label.npz  node_label: n or n×1 numbers, each a class id or NaN (optional)
//	dir/split/<name>/…      as above
//
// A label "nan" or NaN marks an unlabelled vertex (Unlabelled): it counts
// for no class, and a split naming one is an error naming the split file
// and line. Features must be finite: a NaN or infinity in node_feat is an
// error naming the file, the array and the row. The archives' stored
// entries are memory-mapped and their deflated ones streamed, in chunks
// of about 1 MiB, so that neither edge_index nor node_feat is ever held
// whole beyond the rows kept; float16 features are widened to float32.
//
// Each table may also be stored uncompressed, without the ".gz"; the
// compressed file wins when both exist. Edge (src, dst) becomes the entry in
// row src and column dst of Dataset.Adj, in file order within a row; no
// symmetrization, sorting or deduplication is applied (see Symmetrize and
// Dedupe). The dataset's Name is the base name of dir.
//
// With opt.Keep set only the kept rows are held (see Dataset), but every
// file is streamed in full, so that the whole feature matrix is never in
// memory; NumClasses still is 1 + the largest label in the whole file. Only
// the kept feature rows are parsed as numbers; the others are checked for
// their column count only, or, when the features may be held sparse
// (opt.FeatureFormat auto or csr), scanned for their nonzeros, so that
// every rank makes the same choice. Splits always hold the whole graph's
// ids, sorted ascending.
//
// The features are held as opt.FeatureFormat says (see FeatureFormat):
// sparse rows are built line by line, and the dense matrix is never
// allocated for them.
//
// Every malformed input gives a *ParseError naming the file and line.
func ReadOGB(dir string, opt ReadOptions) (*Dataset, error) {
	format, err := opt.FeatureFormat.resolve()
	if err != nil {
		return nil, err
	}
	if isOGBBinary(dir) {
		return readOGBBinary(dir, opt, format)
	}
	raw := filepath.Join(dir, "raw")
	nodePath, ok := findTable(raw, "num-node-list")
	if !ok {
		return nil, &ParseError{Path: nodePath, Msg: "missing file", Err: fs.ErrNotExist}
	}
	n, err := readCount(nodePath, "number of nodes")
	if err != nil {
		return nil, err
	}
	if n > maxNodes {
		return nil, parseErr(nodePath, 1, fmt.Sprintf("%d nodes exceeds the limit of %d", n, int64(maxNodes)))
	}

	// Find the optional tables and check that they can hold n lines before
	// anything is allocated for n vertices.
	var labelPath, featPath string
	if !opt.NoLabels {
		if p, ok := findTable(raw, "node-label"); ok {
			labelPath = p
			if n > textfile.MaxLines(p) {
				return nil, parseErr(p, 0, fmt.Sprintf("file too small for the %d labels %s declares", n, filepath.Base(nodePath)))
			}
		}
	}
	if !opt.NoFeatures {
		if p, ok := findTable(raw, "node-feat"); ok {
			featPath = p
			if n > textfile.MaxLines(p) {
				return nil, parseErr(p, 0, fmt.Sprintf("file too small for the %d rows %s declares", n, filepath.Base(nodePath)))
			}
		}
	}
	edgePath, ok := findTable(raw, "edge")
	if !ok {
		return nil, &ParseError{Path: edgePath, Msg: "missing file", Err: fs.ErrNotExist}
	}
	if labelPath == "" && featPath == "" && !rowsPlausible(n, textfile.MaxLines(edgePath)/2) {
		// Nothing bounds n but the edge file ("0,0\n" is 4 bytes).
		return nil, parseErr(nodePath, 1, fmt.Sprintf("%d nodes is implausible for the size of %s", n, filepath.Base(edgePath)))
	}

	d := &Dataset{Name: datasetName(dir), NumNodes: n}
	if opt.Keep != nil {
		d.Rows = keptRows(n, opt.Keep)
	}
	var unlabelled unlabelledSet
	if labelPath != "" {
		if d.Labels, d.NumClasses, unlabelled, err = readLabels(labelPath, n, d.Rows); err != nil {
			return nil, err
		}
	}
	if featPath != "" {
		if d.Feat, d.FeatCSR, err = readFeatures(featPath, n, d.Rows, format); err != nil {
			return nil, err
		}
	}

	m := int64(-1)
	countPath, haveCount := findTable(raw, "num-edge-list")
	if haveCount {
		if m, err = readCount(countPath, "number of edges"); err != nil {
			return nil, err
		}
	}
	var lines int64
	if d.Adj, lines, err = readEdges(edgePath, n, d.Rows, m); err != nil {
		return nil, err
	}
	if haveCount && lines != m {
		return nil, parseErr(edgePath, 0, fmt.Sprintf("%d edge lines, but %s says %d", lines, filepath.Base(countPath), m))
	}
	if d.Splits, err = readSplits(filepath.Join(dir, "split"), n, unlabelled, labelPath); err != nil {
		return nil, err
	}
	return d, nil
}

// keptRows returns the ascending ids g in [0, n) with keep(g).
func keptRows(n int64, keep func(int64) bool) []int64 {
	rows := []int64{}
	for g := int64(0); g < n; g++ {
		if keep(g) {
			rows = append(rows, g)
		}
	}
	return slices.Clip(rows)
}

// readCount reads a file holding one non-negative integer (what names it
// in messages). Blank lines around it are ignored.
func readCount(path, what string) (int64, error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return 0, err
	}
	defer lr.Close()
	v := int64(-1)
	for line := range lr.All() {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if v >= 0 {
			return 0, lr.Errorf("unexpected second value %s: want a single %s", textfile.Quote(line), what)
		}
		x, ok := textfile.ParseInt(line)
		if !ok {
			return 0, lr.Errorf("malformed %s %s", what, textfile.Quote(line))
		}
		if x < 0 {
			return 0, lr.Errorf("negative %s %d", what, x)
		}
		v = x
	}
	if err := lr.Err(); err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, parseErr(path, 0, "empty file, want the "+what)
	}
	return v, nil
}

// readLabels reads n lines of one non-negative integer below MaxClasses
// each, or "nan" (any case) for an unlabelled vertex. It returns the
// labels of the held rows (all when rows is nil; Unlabelled for "nan"),
// 1 + the largest label, and the unlabelled vertices of the whole file.
func readLabels(path string, n int64, rows []int64) (labels []int32, classes int, unlabelled unlabelledSet, err error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, 0, nil, err
	}
	defer lr.Close()
	held := heldRows(n, rows)
	labels = make([]int32, held)
	maxLabel := int64(-1)
	next := 0 // index into rows of the next held vertex
	var g int64
	for line := range lr.All() {
		if g >= n {
			return nil, 0, nil, lr.Errorf("more labels than the %d nodes of num-node-list", n)
		}
		v, ok := textfile.ParseInt(line)
		switch {
		case !ok && bytes.EqualFold(bytes.TrimSpace(line), []byte("nan")):
			v = Unlabelled
			unlabelled.add(n, g)
		case !ok:
			return nil, 0, nil, lr.Errorf("malformed label %s: want one integer", textfile.Quote(line))
		case v < 0:
			return nil, 0, nil, lr.Errorf("negative label %d", v)
		case v >= MaxClasses:
			return nil, 0, nil, lr.Errorf("label %d is implausibly large: class ids must be below %d (graph.MaxClasses)", v, MaxClasses)
		}
		maxLabel = max(maxLabel, v)
		if rows == nil {
			labels[g] = int32(v)
		} else if next < len(rows) && rows[next] == g {
			labels[next] = int32(v)
			next++
		}
		g++
	}
	if err := lr.Err(); err != nil {
		return nil, 0, nil, err
	}
	if g != n {
		return nil, 0, nil, parseErr(path, 0, fmt.Sprintf("%d labels, but num-node-list declares %d nodes", g, n))
	}
	return labels, int(maxLabel + 1), unlabelled, nil
}

// readFeatures reads n lines of comma-separated numbers, all with the
// column count of the first line, and returns the held rows in format
// (resolved: auto, dense or csr): dense, or sparse without ever holding
// the dense matrix. With a sparse format every line is scanned for its
// nonzeros, also those not held, so that the choice of auto and of a
// pattern matrix depends on the file only.
func readFeatures(path string, n int64, rows []int64, format FeatureFormat) (*dense.Matrix, *sparse.Matrix[float32], error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer lr.Close()
	b := &featBuilder{format: format, n: n, held: heldRows(n, rows), rows: rows, ones: true}
	var g int64
	for line := range lr.All() {
		if g >= n {
			return nil, nil, lr.Errorf("more feature rows than the %d nodes of num-node-list", n)
		}
		if len(line) == 0 {
			return nil, nil, lr.Errorf("empty line, want %s comma-separated numbers", dimString(b.dim))
		}
		if g == 0 {
			if err := b.start(path, bytes.Count(line, []byte{','})+1); err != nil {
				return nil, nil, err
			}
		}
		if err := b.line(lr, g, line); err != nil {
			return nil, nil, err
		}
		g++
	}
	if err := lr.Err(); err != nil {
		return nil, nil, err
	}
	if g != n {
		return nil, nil, parseErr(path, 0, fmt.Sprintf("%d feature rows, but num-node-list declares %d nodes", g, n))
	}
	feat, csr := b.finish()
	return feat, csr, nil
}

// featBuilder collects the held rows of a feature file, line by line, in
// its format: dense rows, or sparse rows (auto and csr) with the nonzeros
// and the all-ones flag counted over every line of the file. Under auto
// it turns dense as soon as the nonzeros seen reach SparseDensity of the
// whole matrix, so that a dense file never holds more than the dense
// matrix and a tenth-density copy.
type featBuilder struct {
	format  FeatureFormat // auto, dense or csr
	n, held int64
	rows    []int64 // ascending held rows; nil holds all
	next    int     // index into rows of the next held vertex
	dim     int
	feat    *dense.Matrix           // format dense
	csr     *sparse.Matrix[float32] // formats auto and csr: the held rows so far
	buf     []float32               // one parsed row (sparse formats)
	nnz     int64                   // nonzeros over all lines so far (sparse formats)
	ones    bool                    // every nonzero so far is 1 (sparse formats)
}

// start sizes the builder for rows of dim columns, checking that the file
// at path can hold n of them.
func (b *featBuilder) start(path string, dim int) error {
	b.dim = dim
	// Every row takes at least 2 bytes a column.
	if b.n > textfile.MaxLines(path)/int64(dim)+1 || b.held > math.MaxInt/int64(dim) {
		return parseErr(path, 0, fmt.Sprintf("file too small for %d rows of %d columns", b.n, dim))
	}
	b.alloc()
	return nil
}

// alloc allocates the held rows of b.dim columns.
func (b *featBuilder) alloc() {
	if b.format == FeatureDense {
		b.feat = dense.New(int(b.held), b.dim)
		return
	}
	b.buf = make([]float32, b.dim)
	b.csr = &sparse.Matrix[float32]{NRows: b.held, NCols: int64(b.dim), Indptr: make([]int64, 1, b.held+1)}
}

// line takes line g of the file.
func (b *featBuilder) line(lr *textfile.Lines, g int64, line []byte) error {
	held := b.rows == nil || (b.next < len(b.rows) && b.rows[b.next] == g)
	if !held {
		if b.format == FeatureDense {
			if c := bytes.Count(line, []byte{','}) + 1; c != b.dim {
				return lr.Errorf("ragged row: %d columns, but the first row has %d", c, b.dim)
			}
			return nil
		}
		nf, nnz, ones, bad := scanRow(line)
		if bad >= 0 {
			return lr.Errorf("column %d: malformed number %s", bad+1, textfile.Quote(field(line, bad)))
		}
		if nf != b.dim {
			return lr.Errorf("ragged row: %d columns, but the first row has %d", nf, b.dim)
		}
		b.nnz += nnz
		b.ones = b.ones && ones
		return b.maybeDense()
	}
	lid := int(g)
	if b.rows != nil {
		lid = b.next
		b.next++
	}
	dst := b.buf
	if b.format == FeatureDense {
		dst = b.feat.Row(lid)
	}
	nf, bad, ok := parseRow(line, dst)
	if !ok {
		return lr.Errorf("column %d: malformed number %s", nf+1, textfile.Quote(bad))
	}
	if nf != b.dim {
		return lr.Errorf("ragged row: %d columns, but the first row has %d", nf, b.dim)
	}
	if b.format == FeatureDense {
		return nil
	}
	b.addSparse(dst)
	return b.maybeDense()
}

// values takes row g of the file, already parsed (b.dim numbers; the
// builder copies them).
func (b *featBuilder) values(g int64, v []float32) {
	held := b.rows == nil || (b.next < len(b.rows) && b.rows[b.next] == g)
	if !held {
		if b.format != FeatureDense {
			for _, x := range v {
				if x != 0 {
					b.nnz++
					b.ones = b.ones && x == 1
				}
			}
			b.maybeDense()
		}
		return
	}
	lid := int(g)
	if b.rows != nil {
		lid = b.next
		b.next++
	}
	if b.format == FeatureDense {
		copy(b.feat.Row(lid), v)
		return
	}
	b.addSparse(v)
	b.maybeDense()
}

// addSparse appends the next held row, dst, to the sparse rows.
func (b *featBuilder) addSparse(dst []float32) {
	a := b.csr
	for j, v := range dst {
		if v != 0 {
			a.Indices = append(a.Indices, int64(j))
			a.Values = append(a.Values, v)
			b.ones = b.ones && v == 1
		}
	}
	b.nnz += int64(len(a.Indices)) - a.Indptr[len(a.Indptr)-1]
	a.Indptr = append(a.Indptr, int64(len(a.Indices)))
}

// maybeDense turns an auto builder dense once the nonzeros seen rule out
// sparse rows.
func (b *featBuilder) maybeDense() error {
	if b.format == FeatureAuto && !sparseByDensity(b.nnz, b.n, b.dim) {
		b.toDense()
	}
	return nil
}

// toDense moves the sparse rows read so far into a dense matrix of all
// held rows, and reads the rest densely.
func (b *featBuilder) toDense() {
	b.feat = dense.New(int(b.held), b.dim)
	a := b.csr
	for i := range len(a.Indptr) - 1 {
		row := b.feat.Row(i)
		for k := a.Indptr[i]; k < a.Indptr[i+1]; k++ {
			row[a.Indices[k]] = a.Values[k]
		}
	}
	b.format, b.csr, b.buf = FeatureDense, nil, nil
}

// finish returns the held rows, dense or sparse (a pattern matrix when
// every nonzero of the file is 1).
func (b *featBuilder) finish() (*dense.Matrix, *sparse.Matrix[float32]) {
	if b.feat == nil && b.csr == nil { // n == 0
		if b.format == FeatureCSR {
			return nil, &sparse.Matrix[float32]{Indptr: []int64{0}, Indices: []int64{}}
		}
		return dense.New(0, 0), nil
	}
	if b.format == FeatureAuto && !sparseByDensity(b.nnz, b.n, b.dim) {
		b.toDense()
	}
	if b.format == FeatureDense {
		return b.feat, nil
	}
	a := b.csr
	a.Indices = slices.Clip(a.Indices)
	if a.Indices == nil {
		a.Indices = []int64{}
	}
	if b.ones {
		a.Values = nil
	} else {
		a.Values = slices.Clip(a.Values)
		if a.Values == nil {
			a.Values = []float32{} // not a pattern, though no held row has a nonzero
		}
	}
	return nil, a
}

// scanRow counts the fields of a comma-separated line and its nonzeros,
// and reports whether every nonzero is 1, parsing only the fields that may
// be nonzero (a digit 1–9 before any exponent). bad is the 0-based index
// of a malformed field, or -1.
func scanRow(line []byte) (nf int, nnz int64, ones bool, bad int) {
	ones = true
	for start := 0; ; nf++ {
		end := bytes.IndexByte(line[start:], ',')
		if end < 0 {
			end = len(line)
		} else {
			end += start
		}
		f := line[start:end]
		if maybeNonzero(f) {
			v, ok := textfile.ParseFloat32(bytes.TrimSpace(f))
			if !ok {
				return nf, nnz, ones, nf
			}
			if v != 0 {
				nnz++
				ones = ones && v == 1
			}
		}
		if end == len(line) {
			return nf + 1, nnz, ones, -1
		}
		start = end + 1
	}
}

// maybeNonzero reports whether the number f may be nonzero: whether it has
// a digit 1–9 before any exponent (or is not a plain number at all, left
// to the parser to reject).
func maybeNonzero(f []byte) bool {
	for _, c := range f {
		switch {
		case c >= '1' && c <= '9':
			return true
		case c == 'e' || c == 'E':
			return false
		case c == '0' || c == '.' || c == '-' || c == '+' || c == ' ' || c == '\t':
		default:
			return true
		}
	}
	return false
}

// field returns the 0-based field k of a comma-separated line.
func field(line []byte, k int) []byte {
	for ; k > 0; k-- {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return nil
		}
		line = line[i+1:]
	}
	if i := bytes.IndexByte(line, ','); i >= 0 {
		line = line[:i]
	}
	return line
}

func dimString(dim int) string {
	if dim == 0 {
		return "some"
	}
	return strconv.Itoa(dim)
}

// parseRow parses the comma-separated numbers of line into dst and returns
// how many fields line has (storing only the first len(dst)). If a field is
// not a finite number, ok is false, nf is the field's 0-based index and bad
// the field.
func parseRow(line []byte, dst []float32) (nf int, bad []byte, ok bool) {
	i := 0
	for {
		// Fastest path: a single digit and a comma, as in 0/1
		// bag-of-words features.
		for nf < len(dst) && i+1 < len(line) && line[i+1] == ',' && line[i]-'0' <= 9 {
			dst[nf] = float32(line[i] - '0')
			nf++
			i += 2
		}
		// Fast path: a plain integer of up to 18 digits, as in count
		// features.
		j := i
		neg := j < len(line) && line[j] == '-'
		if neg {
			j++
		}
		d0 := j
		var v int64
		for j < len(line) && line[j]-'0' <= 9 && j-d0 < 18 {
			v = v*10 + int64(line[j]-'0')
			j++
		}
		var f float32
		if j > d0 && (j == len(line) || line[j] == ',') {
			f = float32(v)
			if neg {
				f = -f
			}
		} else {
			e := bytes.IndexByte(line[i:], ',')
			if e < 0 {
				e = len(line)
			} else {
				e += i
			}
			f, ok = textfile.ParseFloat32(bytes.TrimSpace(line[i:e]))
			if !ok {
				return nf, line[i:e], false
			}
			j = e
		}
		if nf < len(dst) {
			dst[nf] = f
		}
		nf++
		if j == len(line) {
			return nf, nil, true
		}
		i = j + 1
	}
}

// readEdges reads "src,dst" lines into a CSR matrix with the held rows
// (all when rows is nil) and n columns, and returns the number of lines.
// m, if not negative, is the expected line count, used to size buffers.
func readEdges(path string, n int64, rows []int64, m int64) (*sparse.CSR, int64, error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer lr.Close()
	held := heldRows(n, rows)
	b := newEdgeBuilder(held, edgeHint(path, n, held, rows != nil, m))
	row := rowFinder{rows: rows, prevSrc: -1}
	var lines int64
	for line := range lr.All() {
		lines++
		src, dst, err := parseEdge(lr, line, n)
		if err != nil {
			return nil, 0, err
		}
		if lid, ok := row.find(src); ok {
			b.add(lid, dst)
		}
	}
	if err := lr.Err(); err != nil {
		return nil, 0, err
	}
	a, err := b.csr(n)
	if err != nil {
		// Unreachable: every index was checked above.
		return nil, 0, parseErr(path, 0, err.Error())
	}
	return a, lines, nil
}

// edgeHint returns the capacity to reserve for the held edges of an edge
// file at path declaring m lines (m < 0: undeclared) of a graph with n
// vertices of which held are held (partial: not all). It never exceeds
// what the file can hold ("0,0\n" is 4 bytes).
func edgeHint(path string, n, held int64, partial bool, m int64) int64 {
	if m <= 0 {
		return 0
	}
	hint := min(m, textfile.MaxLines(path)/2)
	if partial && n > 0 {
		hint = int64(float64(hint) * float64(held) / float64(n) * 1.05)
	}
	return hint
}

// parseEdge parses the edge line "src,dst" at the current line of lr,
// checking that both ids lie in [0, n).
func parseEdge(lr *textfile.Lines, line []byte, n int64) (src, dst int64, err error) {
	c := bytes.IndexByte(line, ',')
	if c < 0 {
		return 0, 0, lr.Errorf("malformed edge %s: want \"src,dst\"", textfile.Quote(line))
	}
	src, ok1 := textfile.ParseInt(line[:c])
	dst, ok2 := textfile.ParseInt(line[c+1:])
	if !ok1 || !ok2 {
		return 0, 0, lr.Errorf("malformed edge %s: want \"src,dst\" with integer ids", textfile.Quote(line))
	}
	if err := checkID(lr, src, n); err != nil {
		return 0, 0, err
	}
	if err := checkID(lr, dst, n); err != nil {
		return 0, 0, err
	}
	return src, dst, nil
}

// rowFinder maps a vertex to its index among the held rows, remembering
// the last vertex looked up, as edge files list a vertex's edges together.
type rowFinder struct {
	rows     []int64 // ascending held rows; nil holds all
	prevSrc  int64   // the last vertex looked up, -1 before the first
	prevLid  int64
	prevKept bool
}

// find returns the index of vertex g among the held rows and whether it is
// held.
func (r *rowFinder) find(g int64) (int64, bool) {
	if r.rows == nil {
		return g, true
	}
	if g != r.prevSrc {
		r.prevSrc = g
		r.prevLid, r.prevKept = searchRow(r.rows, g)
	}
	return r.prevLid, r.prevKept
}

// edgeBuilder collects the entries of a sparse matrix in file order. While
// the rows arrive in ascending order it counts row degrees, which become
// the row pointer; from the first row out of order on, it also records
// each entry's row and sorts them at the end.
type edgeBuilder struct {
	held   int64
	counts []int64 // counts[lid+1] = degree of lid; nil once unsorted
	dsts   []int64
	lids   []int64 // row of each entry, only once the rows are not sorted
	sorted bool    // whether the rows so far arrived in ascending order
	last   int64   // the row of the last entry
}

// newEdgeBuilder returns a builder of a matrix with held rows, reserving
// room for hint entries.
func newEdgeBuilder(held, hint int64) *edgeBuilder {
	return &edgeBuilder{held: held, counts: make([]int64, held+1), dsts: make([]int64, 0, hint), sorted: true}
}

// add appends the entry in row lid and column dst.
func (b *edgeBuilder) add(lid, dst int64) {
	if b.sorted && lid < b.last {
		b.sorted = false
		b.lids = expandRows(b.counts, int64(len(b.dsts)), int64(cap(b.dsts)))
	}
	b.last = lid
	b.counts[lid+1]++
	if !b.sorted {
		b.lids = append(b.lids, lid)
	}
	b.dsts = append(b.dsts, dst)
}

// csr returns the matrix with n columns; the builder must not be used
// afterwards. An error reports an index out of range.
func (b *edgeBuilder) csr(n int64) (*sparse.CSR, error) {
	if !b.sorted {
		b.counts = nil
		return sparse.FromCOO(b.held, n, b.lids, b.dsts, nil)
	}
	for i := int64(1); i <= b.held; i++ {
		b.counts[i] += b.counts[i-1]
	}
	return &sparse.CSR{NRows: b.held, NCols: n, Indptr: b.counts, Indices: b.dsts}, nil
}

// heldRows returns how many rows a reader holds of n: len(rows), or all n
// when rows is nil.
func heldRows(n int64, rows []int64) int64 {
	if rows == nil {
		return n
	}
	return int64(len(rows))
}

// searchRow returns the index of g in the ascending rows and
// whether it is there.
func searchRow(rows []int64, g int64) (int64, bool) {
	i, ok := slices.BinarySearch(rows, g)
	return int64(i), ok
}

// expandRows returns the row index of each of the first nnz entries of a
// row-sorted matrix whose row degrees are counts[1:], with capacity c.
func expandRows(counts []int64, nnz, c int64) []int64 {
	lids := make([]int64, 0, max(nnz, c))
	for i := int64(0); i+1 < int64(len(counts)); i++ {
		for k := counts[i+1]; k > 0; k-- {
			lids = append(lids, i)
		}
	}
	return lids
}

// checkID reports a vertex id outside [0, n) at the current line.
func checkID(lr *textfile.Lines, id, n int64) error {
	if id < 0 {
		return lr.Errorf("negative vertex id %d", id)
	}
	if id >= n {
		return lr.Errorf("vertex id %d out of range [0,%d)", id, n)
	}
	return nil
}

// splitParts names the three files of a split directory.
var splitParts = [...]string{"train", "valid", "test"}

// readSplits reads every split directory under dir. A missing dir means no
// splits. A member in unlabelled is an error naming the split file and
// line and the label file labels.
func readSplits(dir string, n int64, unlabelled unlabelledSet, labels string) (map[string]Split, error) {
	dirs, err := splitDirs(dir)
	if err != nil {
		return nil, err
	}
	splits := map[string]Split{}
	for _, sd := range dirs {
		var parts [len(splitParts)][]int64
		for k, p := range sd.files {
			if parts[k], err = readIDs(p, n, unlabelled, labels); err != nil {
				return nil, err
			}
		}
		splits[sd.name] = Split{Train: parts[0], Valid: parts[1], Test: parts[2]}
	}
	return splits, nil
}

// splitDir is one split directory: its name and the paths of its train,
// valid and test files (splitParts).
type splitDir struct {
	name  string
	files [len(splitParts)]string
}

// splitDirs lists the split directories under dir, each with its three
// files found (findTable); hidden entries and entries that are not
// directories are skipped, a missing dir has none, and a split without
// one of its files is an error naming it.
func splitDirs(dir string) ([]splitDir, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &ParseError{Path: dir, Msg: "cannot list splits", Err: err}
	}
	var out []splitDir
	for _, e := range ents {
		sub := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if st, err := os.Stat(sub); err != nil || !st.IsDir() {
			continue // not a split: a stray file, or a dangling link
		}
		sd := splitDir{name: e.Name()}
		for k, part := range splitParts {
			p, ok := findTable(sub, part)
			if !ok {
				return nil, &ParseError{Path: p, Msg: "missing file of split " + e.Name(), Err: fs.ErrNotExist}
			}
			sd.files[k] = p
		}
		out = append(out, sd)
	}
	return out, nil
}

// readIDs reads one vertex id in [0, n) a line and returns them ascending.
// A repeated id is an error, and so is one in unlabelled (whose labels
// are in the file labels).
func readIDs(path string, n int64, unlabelled unlabelledSet, labels string) ([]int64, error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer lr.Close()
	ids := []int64{}
	ascending := true
	for line := range lr.All() {
		v, ok := textfile.ParseInt(line)
		if !ok {
			return nil, lr.Errorf("malformed vertex id %s: want one integer", textfile.Quote(line))
		}
		if err := checkID(lr, v, n); err != nil {
			return nil, err
		}
		if unlabelled.has(v) {
			return nil, lr.Errorf("vertex %d is unlabelled in %s: a split holds labelled vertices only", v, filepath.Base(labels))
		}
		if k := len(ids); k > 0 {
			if ids[k-1] == v {
				return nil, lr.Errorf("repeated vertex id %d", v)
			}
			ascending = ascending && ids[k-1] < v
		}
		ids = append(ids, v)
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	if !ascending {
		slices.Sort(ids)
		for k := 1; k < len(ids); k++ {
			if ids[k] == ids[k-1] {
				return nil, parseErr(path, 0, fmt.Sprintf("repeated vertex id %d", ids[k]))
			}
		}
	}
	return slices.Clip(ids), nil
}

// findTable returns the path of the table base in dir: base.csv.gz, or
// base.csv when only that exists. ok is false when neither exists; path is
// then the .csv.gz name, for error messages.
func findTable(dir, base string) (path string, ok bool) {
	gz := filepath.Join(dir, base+".csv.gz")
	if _, err := os.Stat(gz); err == nil {
		return gz, true
	}
	plain := filepath.Join(dir, base+".csv")
	if _, err := os.Stat(plain); err == nil {
		return plain, true
	}
	return gz, false
}
