package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gnnmpi/dense"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/internal/byteview"
	"gnnmpi/internal/textfile"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// A partitioned dataset is a directory written by WriteParts:
//
//	DIR/part-00000.gnn … DIR/part-<K−1>.gnn   one binary file (version 3) per part
//	DIR/manifest.json                         PartManifest, written last
//
// Its vertices are relabelled (Relabel) so that part q holds the
// contiguous ids [Offsets[q], Offsets[q+1]), and every array in it uses
// the new ids; each part file records the original id of each of its
// rows. A rank reads only the files of its parts (LoadParts).

// Manifest format tag and version.
const (
	PartFormat  = "gnnmpi-parts"
	PartVersion = 1
	// PartManifestName is the manifest's file name in a partitioned
	// dataset's directory.
	PartManifestName = "manifest.json"
)

// ErrManifest is wrapped by the *ParseError LoadParts returns for a part
// file that does not match its manifest (index, rows, sizes, checksum).
var ErrManifest = errors.New("does not match the manifest")

// Part is the rows [Lo, Hi) of a partitioned dataset (one part, or several
// consecutive ones merged), in the relabelled ids.
//
// Adj is (Hi−Lo)×NumNodes: row i is vertex Lo+i, its columns global new
// ids, ascending within each row. Feat or FeatCSR (at most one; neither
// without features) and Labels (nil without labels) have one row per
// vertex. Splits hold the global new ids in [Lo, Hi) of each split's
// members, ascending. OrigIDs[i] is the id of vertex Lo+i before
// relabelling, for output that names vertices.
//
// A Part loaded from a single file aliases its read-only memory map (see
// OpenBinary): writing to its arrays crashes the program. Close unmaps it.
type Part struct {
	Name     string
	NumNodes int64 // of the whole graph
	Lo, Hi   int64 // the rows held, new ids
	Adj      *sparse.CSR
	Feat     *dense.Matrix
	// Feat16 holds the dense features in half precision instead of Feat
	// when the part files store them so and they were read with
	// PartReadOptions.KeepHalf.
	Feat16     *dense.Half
	FeatCSR    *sparse.Matrix[float32]
	Labels     []int32
	NumClasses int
	Splits     map[string]Split
	OrigIDs    []int64
	Symmetric  bool
	Weighted   bool

	mapping *Mapping // the file the arrays alias, or nil
}

// Rows returns the number of rows held, Hi−Lo.
func (p *Part) Rows() int64 { return p.Hi - p.Lo }

// Close releases the memory map the Part's arrays alias, if any; the Part
// must not be used afterwards. It is idempotent.
func (p *Part) Close() error {
	m := p.mapping
	p.mapping = nil
	return m.Close()
}

// Dataset returns p as a Dataset holding rows Lo…Hi−1 (Rows nil when p
// holds the whole graph), in the relabelled ids. The Dataset shares p's
// arrays. Unlike a Dataset loaded with ReadOptions.Keep, its Splits hold
// only the members among its rows (p.Splits) unless p is the whole graph:
// the manifest has the splits' sizes.
func (p *Part) Dataset() *Dataset {
	d := &Dataset{Name: p.Name, NumNodes: p.NumNodes, Adj: p.Adj, Feat: p.Feat, Feat16: p.Feat16, FeatCSR: p.FeatCSR,
		Labels: p.Labels, NumClasses: p.NumClasses, Splits: p.Splits, Symmetric: p.Symmetric}
	if p.Lo != 0 || p.Hi != p.NumNodes {
		d.Rows = make([]int64, p.Rows())
		for i := range d.Rows {
			d.Rows[i] = p.Lo + int64(i)
		}
	}
	return d
}

// SplitSizes is the number of train, validation and test vertices of a
// named split.
type SplitSizes struct {
	Name  string `json:"name"`
	Train int64  `json:"train"`
	Valid int64  `json:"valid"`
	Test  int64  `json:"test"`
}

// PartFile describes one part file in a manifest: its name in the
// directory, its size, the CRC-32C of its metadata block (which records
// every section's CRC-32C, so it covers the content transitively and
// checking it costs one header read) and its edges.
type PartFile struct {
	Name     string `json:"name"`
	Bytes    int64  `json:"bytes"`
	Checksum uint32 `json:"metadata_crc32c"`
	Edges    int64  `json:"edges"`
}

// PartManifest is the manifest of a partitioned dataset (manifest.json):
// what the whole dataset is and where its parts are.
type PartManifest struct {
	Format      string `json:"format"`  // PartFormat
	Version     int    `json:"version"` // PartVersion
	Name        string `json:"name"`
	NumNodes    int64  `json:"num_nodes"`
	NumEdges    int64  `json:"num_edges"`
	NumFeatures int    `json:"num_features"`
	// FeatureFormat is how the part files store the features (dense or
	// csr), "" without features. FeatureNNZ counts the nonzero features
	// of the whole dataset and FeaturePattern says that all of them are
	// 1: LoadParts decides FeatureAuto and pattern rows from them, so
	// that every rank agrees.
	FeatureFormat FeatureFormat `json:"feature_format,omitempty"`
	// FeatureDType is "float16" when the part files store dense
	// features in half precision, else "" (float32).
	FeatureDType   string `json:"feature_dtype,omitempty"`
	FeatureNNZ     int64  `json:"feature_nnz"`
	FeaturePattern bool   `json:"feature_pattern"`
	HasLabels      bool   `json:"has_labels"`
	NumClasses     int    `json:"num_classes"`
	Symmetric      bool   `json:"symmetric"`
	Weighted       bool   `json:"weighted"`
	Method         string `json:"method"` // the partition book's
	Parts          int    `json:"parts"`
	// Offsets has Parts+1 entries: part q holds the new ids
	// [Offsets[q], Offsets[q+1]).
	Offsets []int64 `json:"offsets"`
	// EdgeCut counts the stored edges whose endpoints lie in different
	// parts.
	EdgeCut int64        `json:"edge_cut"`
	Splits  []SplitSizes `json:"splits"` // by name
	Files   []PartFile   `json:"files"`  // one per part

	// Dir is the directory the manifest was read from or written to.
	Dir string `json:"-"`
}

// PartFileName returns the file name of part q: part-00003.gnn.
func PartFileName(q int) string { return fmt.Sprintf("part-%05d.gnn", q) }

// IsPartDir reports whether path is a directory holding a partitioned
// dataset's manifest.
func IsPartDir(path string) bool {
	st, err := os.Stat(filepath.Join(path, PartManifestName))
	return err == nil && st.Mode().IsRegular()
}

// Relabel returns the new ids of a partitioned dataset for book: part q
// gets the ids [offsets[q], offsets[q+1]) (offsets has book.Parts+1
// entries), and vertex v of part q the id offsets[q] + its rank among the
// part's vertices in ascending original id (book.LocalID). newID is a
// permutation of [0, book.NumNodes()). It takes time O(book.Parts).
func Relabel(book *partition.Book) (offsets []int64, newID func(old int64) int64) {
	sizes := book.Sizes()
	offsets = make([]int64, len(sizes)+1)
	for q, s := range sizes {
		offsets[q+1] = offsets[q] + s
	}
	return offsets, func(old int64) int64 { return offsets[book.Owner(old)] + book.LocalID(old) }
}

// MakePart returns part q of the whole dataset g partitioned by book, in
// the new ids of Relabel: the rows of the part's vertices, their
// adjacency with columns relabelled and sorted ascending (a stable sort,
// so repeated edges keep their order and weights), their features
// (dense or sparse as g holds them), labels, split members and original
// ids. The Part is a copy; g is not modified. It takes time in proportion
// to the part's rows and edges plus g's split members, and memory for the
// part only.
//
// It returns an error if g holds only some rows or no adjacency, if the
// book does not have g's vertex count, or if q is not a part of it.
func MakePart(g *Dataset, book *partition.Book, q int) (*Part, error) {
	if err := checkPartInput(g, book); err != nil {
		return nil, err
	}
	if q < 0 || q >= book.Parts {
		return nil, fmt.Errorf("graph: part %d of a book of %d parts", q, book.Parts)
	}
	offsets, newID := Relabel(book)
	own := book.Owned(q)
	p := &Part{Name: g.Name, NumNodes: g.NumNodes, Lo: offsets[q], Hi: offsets[q+1], NumClasses: g.NumClasses,
		Splits: map[string]Split{}, OrigIDs: own, Symmetric: g.Symmetric, Weighted: g.Adj.Values != nil}
	p.Adj = sparse.SelectRows(g.Adj, own)
	for k, j := range p.Adj.Indices {
		p.Adj.Indices[k] = newID(j)
	}
	p.Adj.SortRows()
	p.Feat, p.Feat16, p.FeatCSR, p.Labels = selectRowData(g.Feat, g.Feat16, g.FeatCSR, g.Labels, own)
	member := func(ids []int64) []int64 {
		out := []int64{}
		for _, v := range ids {
			if book.Owner(v) == q {
				out = append(out, newID(v))
			}
		}
		slices.Sort(out)
		return out
	}
	for name, s := range g.Splits {
		p.Splits[name] = Split{Train: member(s.Train), Valid: member(s.Valid), Test: member(s.Test)}
	}
	return p, nil
}

// checkPartInput checks that g and book can be partitioned.
func checkPartInput(g *Dataset, book *partition.Book) error {
	switch {
	case g.Rows != nil:
		return fmt.Errorf("graph: partitioning %s needs the whole graph, not %d of %d rows", g.Name, len(g.Rows), g.NumNodes)
	case g.Adj == nil:
		return fmt.Errorf("graph: partitioning %s: no adjacency", g.Name)
	case book.NumNodes() != g.NumNodes:
		return fmt.Errorf("graph: partitioning %s of %d vertices with a book of %d", g.Name, g.NumNodes, book.NumNodes())
	}
	return nil
}

// partContent returns the metadata and sections of part index of parts
// p (binContentOf's, then the original ids).
func partContent(p *Part, index, parts int) *binContent {
	d := &Dataset{Name: p.Name, NumNodes: p.Rows(), Adj: p.Adj, Feat: p.Feat, Feat16: p.Feat16, FeatCSR: p.FeatCSR, Labels: p.Labels,
		NumClasses: p.NumClasses, Splits: p.Splits, Symmetric: p.Symmetric}
	c := binContentOf(d)
	c.meta.NumNodes = p.NumNodes
	c.meta.Part = &binPart{Index: index, Parts: parts, Lo: p.Lo, Hi: p.Hi}
	c.add(secOrigIDs, "int64", int64(len(p.OrigIDs)), byteview.Of(p.OrigIDs))
	return c
}

// WritePart writes p, part index of parts, to path as a binary file of
// version 3 (see binMeta), atomically like WriteBinary, and returns its
// description for the manifest (Name is path's base name). p must be
// consistent: Adj, features, labels and OrigIDs of Hi−Lo rows, split
// members in [Lo, Hi).
func WritePart(path string, p *Part, index, parts int) (PartFile, error) {
	if !byteview.LittleEndian {
		return PartFile{}, errBigEndian
	}
	if err := p.check(index, parts); err != nil {
		return PartFile{}, fmt.Errorf("graph: writing %s: %w", path, err)
	}
	c := partContent(p, index, parts)
	mj, err := c.meta.layOut()
	if err != nil {
		return PartFile{}, err
	}
	size, err := c.write(path, mj)
	if err != nil {
		return PartFile{}, err
	}
	return PartFile{Name: filepath.Base(path), Bytes: size, Checksum: c.meta.crc, Edges: p.Adj.NNZ()}, nil
}

// FeatureRows fills dst, (hi−lo) × the feature width, row-major, with the
// dense feature rows [lo, hi) of a part's rows (row 0 is the part's
// first row), for WritePartRows.
type FeatureRows func(lo, hi int64, dst []float32) error

// HalfFeatureRows is FeatureRows for rows in half precision (IEEE
// binary16 words), for WritePartHalfRows.
type HalfFeatureRows func(lo, hi int64, dst []uint16) error

// partRowChunk is how many bytes of feature rows WritePartRows asks for
// at a time.
const partRowChunk = 4 << 20

// WritePartRows writes p as WritePart does, with dense features dim wide
// that it reads from rows in chunks of at most 4 MiB instead of from
// p.Feat, which must be nil, as p.Feat16 and p.FeatCSR: the file is the
// one WritePart writes with those rows in p.Feat. rows is called twice
// for each chunk, ascending, in two passes: the first for the section's
// checksum and for the feature statistics it returns (the nonzeros, and
// whether all are 1, as Part.FeatureStats), the second to write them; it
// must give the same rows both times. An error of rows is returned as is.
func WritePartRows(path string, p *Part, index, parts, dim int, rows FeatureRows) (f PartFile, nnz int64, ones bool, err error) {
	return writePartRows(path, p, index, parts, dim, "float32", rows, func(chunk []float32) (nnz int64, ones bool) {
		src := featSource{dense: chunk}
		return src.stats(0)
	})
}

// WritePartHalfRows is WritePartRows for features in half precision: the
// part file's features section is float16 (the file WritePart writes for
// those rows in p.Feat16), half the bytes of float32 ones, and the rows
// are never widened. The statistics count what WritePartRows counts of
// the same values widened (half precision holds 0 and 1 exactly).
func WritePartHalfRows(path string, p *Part, index, parts, dim int, rows HalfFeatureRows) (f PartFile, nnz int64, ones bool, err error) {
	return writePartRows(path, p, index, parts, dim, dtypeHalf, rows, halfStats)
}

// writePartRows is WritePartRows and WritePartHalfRows, for features of
// the given dtype whose chunks stats counts.
func writePartRows[T float32 | uint16](path string, p *Part, index, parts, dim int, dtype string, rows func(lo, hi int64, dst []T) error,
	stats func([]T) (int64, bool)) (f PartFile, nnz int64, ones bool, err error) {
	if !byteview.LittleEndian {
		return PartFile{}, 0, false, errBigEndian
	}
	if p.Feat != nil || p.Feat16 != nil || p.FeatCSR != nil || dim < 1 {
		panic("graph: WritePartRows of a part holding features, or of no feature columns")
	}
	if err := p.check(index, parts); err != nil {
		return PartFile{}, 0, false, fmt.Errorf("graph: writing %s: %w", path, err)
	}
	n := p.Rows()
	size := dtypeSize[dtype]
	step := max(1, partRowChunk/(size*int64(dim)))
	buf := make([]T, min(step, n)*int64(dim))
	each := func(fn func(chunk []T) error) error {
		for lo := int64(0); lo < n; lo += step {
			hi := min(lo+step, n)
			chunk := buf[:(hi-lo)*int64(dim)]
			if err := rows(lo, hi, chunk); err != nil {
				return err
			}
			if err := fn(chunk); err != nil {
				return err
			}
		}
		return nil
	}
	var crc uint32
	ones = true
	err = each(func(chunk []T) error {
		crc = crc32.Update(crc, castagnoli, byteview.Of(chunk))
		z, o := stats(chunk)
		nnz, ones = nnz+z, ones && o
		return nil
	})
	if err != nil {
		return PartFile{}, 0, false, err
	}
	c := partContent(p, index, parts)
	c.meta.HasFeatures, c.meta.NumFeatures = true, dim
	// The features' place in binContentOf's order: after the adjacency.
	at := 2
	if c.meta.Weighted {
		at++
	}
	sec := binSection{Name: "features", DType: dtype, Count: n * int64(dim), Length: size * n * int64(dim), CRC32C: crc}
	c.meta.Sections = slices.Insert(c.meta.Sections, at, sec)
	c.data = slices.Insert(c.data, at, nil)
	c.stream = map[int]func(func([]byte) error) error{at: func(write func([]byte) error) error {
		return each(func(chunk []T) error { return write(byteview.Of(chunk)) })
	}}
	mj, err := c.meta.layOut()
	if err != nil {
		return PartFile{}, 0, false, err
	}
	size, err = c.write(path, mj)
	if err != nil {
		return PartFile{}, 0, false, err
	}
	return PartFile{Name: filepath.Base(path), Bytes: size, Checksum: c.meta.crc, Edges: p.Adj.NNZ()}, nnz, ones, nil
}

// selectRowData returns copies of the rows idx of a part's or dataset's
// row data: of the dense features feat, or the half ones feat16, or else
// the sparse ones featCSR (nil results for those absent), and of the
// labels (nil if absent).
func selectRowData(feat *dense.Matrix, feat16 *dense.Half, featCSR *sparse.Matrix[float32], labels []int32, idx []int64) (*dense.Matrix, *dense.Half, *sparse.Matrix[float32], []int32) {
	var f *dense.Matrix
	var h *dense.Half
	var fc *sparse.Matrix[float32]
	switch {
	case feat != nil:
		f = dense.New(len(idx), feat.Cols)
		for i, r := range idx {
			copy(f.Row(i), feat.Row(int(r)))
		}
	case feat16 != nil:
		h = dense.NewHalf(len(idx), feat16.Cols)
		for i, r := range idx {
			copy(h.Row(i), feat16.Row(int(r)))
		}
	case featCSR != nil:
		fc = sparse.SelectRows(featCSR, idx)
	}
	var l []int32
	if labels != nil {
		l = make([]int32, len(idx))
		for i, r := range idx {
			l[i] = labels[r]
		}
	}
	return f, h, fc, l
}

// check verifies that p is a consistent part index of parts.
func (p *Part) check(index, parts int) error {
	rows := p.Rows()
	switch {
	case parts < 1 || index < 0 || index >= parts:
		return fmt.Errorf("part %d of %d", index, parts)
	case p.Lo < 0 || p.Hi < p.Lo || p.Hi > p.NumNodes:
		return fmt.Errorf("rows [%d,%d) of %d", p.Lo, p.Hi, p.NumNodes)
	case p.Adj == nil || p.Adj.NRows != rows || p.Adj.NCols != p.NumNodes:
		return fmt.Errorf("adjacency is not %d×%d", rows, p.NumNodes)
	case (p.Adj.Values != nil) != p.Weighted:
		return fmt.Errorf("weighted is %v for an adjacency with values %v", p.Weighted, p.Adj.Values != nil)
	case int64(len(p.OrigIDs)) != rows:
		return fmt.Errorf("%d original ids for %d rows", len(p.OrigIDs), rows)
	}
	if err := p.Adj.Validate(); err != nil {
		return err
	}
	switch {
	case p.Feat != nil && p.FeatCSR != nil, p.Feat16 != nil && (p.Feat != nil || p.FeatCSR != nil):
		return errors.New("features held in more than one form")
	case p.Feat16 != nil && int64(p.Feat16.Rows) != rows:
		return fmt.Errorf("%d half feature rows, want %d", p.Feat16.Rows, rows)
	case p.Feat != nil && int64(p.Feat.Rows) != rows:
		return fmt.Errorf("%d feature rows, want %d", p.Feat.Rows, rows)
	case p.FeatCSR != nil:
		if err := validateFeatCSR(p.FeatCSR, rows); err != nil {
			return err
		}
	}
	if err := validateLabels(p.Labels, rows, p.NumClasses); err != nil {
		return err
	}
	for name, s := range p.Splits {
		for _, ids := range [...][]int64{s.Train, s.Valid, s.Test} {
			for i, v := range ids {
				if v < p.Lo || v >= p.Hi || (i > 0 && ids[i-1] >= v) {
					return fmt.Errorf("split %s: member %d not ascending in [%d,%d)", name, v, p.Lo, p.Hi)
				}
			}
		}
	}
	return nil
}

// WriteParts partitions the whole dataset g by book and writes it to dir
// (created if missing): the part files one after another (each built by
// MakePart, so that only one part's copy is held at a time), then the
// manifest, atomically and last, so that a directory with a manifest is
// complete. An old manifest in dir is removed first. method is recorded in
// the manifest ("" for book.Method). progress, if not nil, is called with
// a line per part written.
//
// The manifest records the graph as symmetric when g.Symmetric is set or
// Reciprocity finds it so, like WriteBinary. WriteParts returns an error
// if g is not whole or fails Validate, if the book does not match it, or
// if writing fails.
func WriteParts(dir string, g *Dataset, book *partition.Book, method string, progress func(string, ...any)) (*PartManifest, error) {
	if err := checkPartInput(g, book); err != nil {
		return nil, err
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("graph: partitioning %s: %w", g.Name, err)
	}
	if method == "" {
		method = book.Method
	}
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, PartManifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	offsets, _ := Relabel(book)
	symmetric := g.Symmetric
	if !symmetric {
		r, m := Reciprocity(g.Adj)
		symmetric = r == m
	}
	m := &PartManifest{Format: PartFormat, Version: PartVersion, Name: g.Name, NumNodes: g.NumNodes, NumEdges: g.Adj.NNZ(),
		NumFeatures: g.NumFeatures(), FeatureFormat: g.FeatureFormat(), HasLabels: g.Labels != nil, NumClasses: g.NumClasses,
		Symmetric: symmetric, Weighted: g.Adj.Values != nil, Method: method, Parts: book.Parts, Offsets: offsets,
		Splits: []SplitSizes{}, Dir: dir}
	m.FeatureNNZ, m.FeaturePattern = featureStats(g)
	if g.Feat16 != nil {
		m.FeatureDType = dtypeHalf
	}
	for _, name := range g.SplitNames() {
		s := g.Splits[name]
		m.Splits = append(m.Splits, SplitSizes{name, int64(len(s.Train)), int64(len(s.Valid)), int64(len(s.Test))})
	}
	for q := range book.Parts {
		p, err := MakePart(g, book, q)
		if err != nil {
			return nil, err
		}
		p.Symmetric = symmetric
		for _, j := range p.Adj.Indices {
			if j < p.Lo || j >= p.Hi {
				m.EdgeCut++
			}
		}
		f, err := WritePart(filepath.Join(dir, PartFileName(q)), p, q, book.Parts)
		if err != nil {
			return nil, err
		}
		m.Files = append(m.Files, f)
		progress("wrote part %d of %d: %s, vertices [%d,%d), %d edges, %d bytes", q+1, book.Parts, f.Name, p.Lo, p.Hi, f.Edges, f.Bytes)
	}
	if err := WritePartManifest(dir, m); err != nil {
		return nil, err
	}
	return m, nil
}

// featureStats returns the nonzero features of g and whether all are 1.
func featureStats(g *Dataset) (nnz int64, ones bool) {
	switch {
	case g.FeatCSR != nil:
		ones = true
		for _, v := range g.FeatCSR.Values {
			ones = ones && v == 1
		}
		return g.FeatCSR.NNZ(), ones
	case g.Feat != nil:
		src := featSource{dim: g.Feat.Cols, dense: g.Feat.Data[:g.Feat.Rows*g.Feat.Cols]}
		return src.stats(int64(g.Feat.Rows))
	case g.Feat16 != nil:
		return halfStats(g.Feat16.Data[:g.Feat16.Rows*g.Feat16.Cols])
	}
	return 0, false
}

// WritePartManifest writes m to dir/manifest.json atomically
// (internal/atomicfile), after checking it (see ReadPartManifest).
func WritePartManifest(dir string, m *PartManifest) error {
	path := filepath.Join(dir, PartManifestName)
	if err := m.check(path); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("graph: writing %s: %w", path, err)
	}
	return nil
}

// ReadPartManifest reads the manifest of the partitioned dataset in dir
// and checks it: format and version, offsets ascending from 0 to
// NumNodes, one plain file name per part, sizes not negative. Errors are
// *ParseError naming the manifest; a missing manifest wraps
// fs.ErrNotExist. It reads no part file.
func ReadPartManifest(dir string) (*PartManifest, error) {
	path := filepath.Join(dir, PartManifestName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, textfile.OpenError(path, err)
	}
	var m PartManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &ParseError{Path: path, Msg: "malformed manifest", Err: err}
	}
	if err := m.check(path); err != nil {
		return nil, err
	}
	m.Dir = dir
	return &m, nil
}

// check verifies that the manifest at path is self-consistent.
func (m *PartManifest) check(path string) error {
	bad := func(format string, args ...any) error {
		return parseErr(path, 0, "manifest: "+fmt.Sprintf(format, args...))
	}
	switch {
	case m.Format != PartFormat:
		return bad("format %q, want %q", m.Format, PartFormat)
	case m.Version != PartVersion:
		return &ParseError{Path: path, Msg: fmt.Sprintf("manifest version %d (this build reads %d)", m.Version, PartVersion), Err: ErrVersion}
	case m.NumNodes < 0 || m.NumNodes > maxNodes || m.NumEdges < 0 || m.NumFeatures < 0 || m.FeatureNNZ < 0 || m.EdgeCut < 0:
		return bad("negative or huge count")
	case m.NumClasses < 0 || m.NumClasses > MaxClasses:
		return bad("%d classes outside [0,%d]", m.NumClasses, MaxClasses)
	case m.FeatureFormat != "" && m.FeatureFormat != FeatureDense && m.FeatureFormat != FeatureCSR:
		return bad("feature format %q", m.FeatureFormat)
	case m.FeatureFormat == "" && m.NumFeatures != 0:
		return bad("%d features without a feature format", m.NumFeatures)
	case m.FeatureDType != "" && (m.FeatureDType != dtypeHalf || m.FeatureFormat != FeatureDense):
		return bad("feature dtype %q of %q features (want float16 dense or none)", m.FeatureDType, m.FeatureFormat)
	case m.Parts < 1 || len(m.Offsets) != m.Parts+1 || len(m.Files) != m.Parts:
		return bad("%d parts with %d offsets and %d files", m.Parts, len(m.Offsets), len(m.Files))
	case m.Offsets[0] != 0 || m.Offsets[m.Parts] != m.NumNodes:
		return bad("offsets run from %d to %d, want 0 to num_nodes %d", m.Offsets[0], m.Offsets[m.Parts], m.NumNodes)
	}
	var edges int64
	for q, f := range m.Files {
		if m.Offsets[q+1] < m.Offsets[q] {
			return bad("offsets[%d] = %d < offsets[%d] = %d", q+1, m.Offsets[q+1], q, m.Offsets[q])
		}
		if f.Name == "" || f.Name != filepath.Base(f.Name) || f.Name == "." || f.Name == ".." || f.Bytes < 0 || f.Edges < 0 {
			return bad("part %d: file %q of %d bytes, %d edges", q, f.Name, f.Bytes, f.Edges)
		}
		edges += f.Edges
	}
	if edges != m.NumEdges {
		return bad("the parts hold %d edges, num_edges is %d", edges, m.NumEdges)
	}
	return nil
}

// PartRows returns the rows [lo, hi) of parts [first, last).
func (m *PartManifest) PartRows(first, last int) (lo, hi int64) {
	return m.Offsets[first], m.Offsets[last]
}

// RunOffsets returns the id ranges of a run's runs parts (runs must divide
// m.Parts, as RunParts checks): run part q owns [out[q], out[q+1]), the
// rows of dataset parts [q·K/runs, (q+1)·K/runs).
func (m *PartManifest) RunOffsets(runs int) []int64 {
	out := make([]int64, runs+1)
	for q := range out {
		out[q] = m.Offsets[q*m.Parts/runs]
	}
	return out
}

// SplitNamed returns the sizes of the split called name, or of the first
// split by name when name is empty (as Dataset.SplitNamed chooses), with
// its name. The error names the manifest.
func (m *PartManifest) SplitNamed(name string) (string, SplitSizes, error) {
	path := filepath.Join(m.Dir, PartManifestName)
	var names []string
	for _, s := range m.Splits {
		names = append(names, s.Name)
		if s.Name == name {
			return name, s, nil
		}
	}
	switch {
	case name == "" && len(m.Splits) > 0:
		first := slices.MinFunc(m.Splits, func(a, b SplitSizes) int { return strings.Compare(a.Name, b.Name) })
		return first.Name, first, nil
	case name == "":
		return "", SplitSizes{}, fmt.Errorf("graph: %s has no split", path)
	}
	return "", SplitSizes{}, fmt.Errorf("graph: %s has no split %q (have %v)", path, name, names)
}

// RunParts returns the dataset parts [first, last) that rank holds in a
// run of p ranks with feature replication c: the run has P = p/c run
// parts, each of K/P consecutive dataset parts (K = m.Parts), and rank
// holds run part rank/c. It returns an error naming the manifest when c
// does not divide p or P does not divide K, and when rank is not in
// [0, p).
func (m *PartManifest) RunParts(rank, p, c int) (first, last int, err error) {
	path := filepath.Join(m.Dir, PartManifestName)
	switch {
	case p < 1 || c < 1 || p%c != 0:
		return 0, 0, fmt.Errorf("graph: %d ranks with replication %d: the replication must divide the ranks", p, c)
	case rank < 0 || rank >= p:
		return 0, 0, fmt.Errorf("graph: rank %d of %d", rank, p)
	}
	run := p / c
	if m.Parts%run != 0 {
		return 0, 0, fmt.Errorf("graph: the %d parts of %s cannot be spread over %d ranks (%d ranks / replication %d): the parts must be a multiple of the ranks; repartition into a multiple of %d parts",
			m.Parts, path, run, p, c, run)
	}
	per := m.Parts / run
	first = rank / c * per
	return first, first + per, nil
}
