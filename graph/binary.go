package graph

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"gnnmpi/dense"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/internal/byteview"
	"gnnmpi/internal/textfile"
	"gnnmpi/sparse"
)

// Binary dataset format, versions 1 and 2, written by WriteBinary (and
// `gnnmpi convert`), read by OpenBinary. All integers are little-endian.
//
//	offset  size  field
//	0       8     magic "\x89GNNMPI\n"
//	8       4     format version (uint32): 1, or 2 with sparse features
//	12      4     flags (uint32), 0
//	16      8     metadata offset (uint64) = 64
//	24      8     metadata length in bytes (uint64)
//	32      4     CRC-32C of the metadata (uint32)
//	36      24    reserved, zero
//	60      4     CRC-32C of bytes [0, 60) (uint32)
//	64      …     metadata: JSON, see binMeta
//	…             sections, each starting at a multiple of 4096
//
// The sections are raw little-endian arrays: "indptr" (int64, n+1),
// "indices" (int64, nnz), "values" (float64, nnz; weighted graphs only),
// "features" (float32, n×f row-major), "labels" (int32, n) and one
// "split/<name>/<train|valid|test>" (int64) per split part. The metadata
// records each section's offset, length and CRC-32C, so that sections can
// be memory-mapped and verified independently.
//
// Version 2 adds sparse features: instead of "features", the sections
// "feat/indptr" (int64, n+1), "feat/indices" (int32, or int64 for more
// than 2³¹−1 columns; nnz, ascending within a row) and "feat/values"
// (float32, nnz; absent for a pattern matrix, whose entries are all 1),
// described by the metadata fields feature_format ("csr"), feature_nnz,
// feature_index (the indices' dtype) and feature_pattern. WriteBinary
// writes version 1 whenever the features are dense, so that older builds
// read those files; OpenBinary reads both.
//
// Version 3 is one part of a partitioned dataset (WritePart, read by
// LoadParts; see PartManifest): the metadata has a "part" object (index,
// parts, lo, hi) and the row sections (indptr, features, labels) hold the
// Hi−Lo rows of the part, whose "indices" are global ids in [0,
// num_nodes); num_edges counts the part's edges; the split sections hold
// the part's members; and an "orig_ids" section (int64, one per row)
// records each row's id before relabelling. OpenBinary refuses it.
const (
	binMagic       = "\x89GNNMPI\n"
	binVersion     = 3 // the highest version this build reads
	binVersion1    = 1 // dense features or none
	binVersion2    = 2 // sparse features
	binVersionPart = 3 // a part of a partitioned dataset
	binHeaderSize  = 64
	binAlign       = 4096
	// binMaxMeta bounds the metadata block, to reject corrupt lengths
	// before allocating.
	binMaxMeta = 64 << 20
)

// binMeta is the JSON metadata block of a binary dataset.
type binMeta struct {
	Name        string `json:"name"`
	NumNodes    int64  `json:"num_nodes"`
	NumEdges    int64  `json:"num_edges"`
	Weighted    bool   `json:"weighted"`
	HasFeatures bool   `json:"has_features"`
	NumFeatures int    `json:"num_features"`
	HasLabels   bool   `json:"has_labels"`
	NumClasses  int    `json:"num_classes"`
	// Symmetric records that every edge's reverse is stored too
	// (Dataset.Symmetric); absent in older files, which read as false.
	Symmetric bool `json:"symmetric,omitempty"`
	// Version 2: sparse features (FeatureFormat "csr"), with FeatureNNZ
	// entries, indices of dtype FeatureIndex and no values when
	// FeaturePattern.
	FeatureFormat  string       `json:"feature_format,omitempty"`
	FeatureNNZ     int64        `json:"feature_nnz,omitempty"`
	FeatureIndex   string       `json:"feature_index,omitempty"`
	FeaturePattern bool         `json:"feature_pattern,omitempty"`
	Splits         []binSplit   `json:"splits"`
	Sections       []binSection `json:"sections"`
	// Part is set in version 3: the file holds rows [Lo, Hi) of a
	// partitioned dataset.
	Part *binPart `json:"part,omitempty"`

	// crc is the CRC-32C of the metadata as read (readBinMeta) or
	// written (layOut).
	crc uint32
}

// binPart places a version 3 file in its partitioned dataset: part Index
// of Parts, holding the rows [Lo, Hi) in the relabelled ids.
type binPart struct {
	Index int   `json:"index"`
	Parts int   `json:"parts"`
	Lo    int64 `json:"lo"`
	Hi    int64 `json:"hi"`
}

// secOrigIDs is the section of a part file holding each row's original id.
const secOrigIDs = "orig_ids"

// rows returns the number of rows the file holds: NumNodes, or Hi−Lo for
// a part.
func (m *binMeta) rows() int64 {
	if m.Part != nil {
		return m.Part.Hi - m.Part.Lo
	}
	return m.NumNodes
}

// dtypeHalf is the dtype of a dense features section of IEEE half words.
const dtypeHalf = "float16"

// featureDType returns the dtype of the dense features section: that
// of the section the metadata lists (float32 or float16; check refuses
// others), float32 when there is none.
//
// A float16 section needs no new version: every build since the format's
// first checks each section's dtype against the one it expects, so an
// older build refuses such a file ("section "features" is …×float16 …,
// want …×float32") instead of misreading it, and files with float32
// features stay byte-identical.
func (m *binMeta) featureDType() string {
	for _, s := range m.Sections {
		if s.Name == "features" && s.DType == dtypeHalf {
			return dtypeHalf
		}
	}
	return "float32"
}

// binSplit records a split's name and part sizes.
type binSplit struct {
	Name  string `json:"name"`
	Train int64  `json:"train"`
	Valid int64  `json:"valid"`
	Test  int64  `json:"test"`
}

// binSection locates one array in the file.
type binSection struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"`  // int64, int32, float64, float32 or float16 (dense features only)
	Count  int64  `json:"count"`  // elements
	Offset int64  `json:"offset"` // bytes from the start of the file
	Length int64  `json:"length"` // bytes, Count × element size
	CRC32C uint32 `json:"crc32c"`
}

var dtypeSize = map[string]int64{"int64": 8, "int32": 4, "float64": 8, "float32": 4, "float16": 2}

// errBigEndian is returned by the binary reader and writer on big-endian
// hosts, where the mapped arrays would need byte swapping.
var errBigEndian = errors.New("graph: the binary dataset format needs a little-endian host")

// alignUp rounds x up to a multiple of binAlign.
func alignUp(x int64) int64 { return (x + binAlign - 1) &^ (binAlign - 1) }

// WriteBinary writes the whole dataset d to path in the binary format read
// by OpenBinary. The file is written under a temporary name in the same
// directory, synced to stable storage and renamed over path, so readers see
// either the old file or the complete new one.
//
// d must be whole (Rows nil), have an adjacency and pass Validate. The
// metadata records whether the graph is symmetric (every edge's reverse is
// stored): so when d.Symmetric is set, else when Reciprocity finds it so;
// OpenBinary then sets Dataset.Symmetric and loaders need not check.
// WriteBinary returns an error on big-endian hosts.
func WriteBinary(path string, d *Dataset) error {
	if !byteview.LittleEndian {
		return errBigEndian
	}
	if d.Rows != nil {
		return fmt.Errorf("graph: WriteBinary of a partial dataset (%d of %d rows)", len(d.Rows), d.NumNodes)
	}
	if d.Adj == nil {
		return errors.New("graph: WriteBinary of a dataset without adjacency")
	}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("graph: WriteBinary: %w", err)
	}
	c := binContentOf(d)
	if !d.Symmetric {
		r, m := Reciprocity(d.Adj)
		c.meta.Symmetric = r == m
	}
	mj, err := c.meta.layOut()
	if err != nil {
		return err
	}
	_, err = c.write(path, mj)
	return err
}

// binContent is what a binary file holds: its metadata and, for each of
// the metadata's sections, the bytes to store.
type binContent struct {
	meta binMeta
	data [][]byte // data[k] is the content of meta.Sections[k]
	// stream[k], when not nil, writes section k's content instead of
	// data[k], through write, in pieces (its length and checksum are
	// recorded beforehand).
	stream map[int]func(write func([]byte) error) error
}

// add appends the section name, count elements of dtype stored as data,
// recording its length and checksum; its offset is set by layOut.
func (c *binContent) add(name, dtype string, count int64, data []byte) {
	c.meta.Sections = append(c.meta.Sections, binSection{Name: name, DType: dtype, Count: count,
		Length: int64(len(data)), CRC32C: checksum(data)})
	c.data = append(c.data, data)
}

// binContentOf returns the metadata and sections of the whole dataset d,
// in file order: indptr, indices, values (weighted graphs), features,
// labels, then the splits by name. The sections alias d's arrays.
func binContentOf(d *Dataset) *binContent {
	c := &binContent{meta: binMeta{
		Name:       d.Name,
		NumNodes:   d.NumNodes,
		NumEdges:   d.Adj.NNZ(),
		Weighted:   d.Adj.Values != nil,
		HasLabels:  d.Labels != nil,
		NumClasses: d.NumClasses,
		Symmetric:  d.Symmetric,
		Splits:     []binSplit{},
	}}
	c.add("indptr", "int64", int64(len(d.Adj.Indptr)), byteview.Of(d.Adj.Indptr))
	c.add("indices", "int64", int64(len(d.Adj.Indices)), byteview.Of(d.Adj.Indices))
	if c.meta.Weighted {
		c.add("values", "float64", int64(len(d.Adj.Values)), byteview.Of(d.Adj.Values))
	}
	if d.Feat != nil {
		c.meta.HasFeatures, c.meta.NumFeatures = true, d.Feat.Cols
		data := d.Feat.Data[:d.Feat.Rows*d.Feat.Cols]
		c.add("features", "float32", int64(len(data)), byteview.Of(data))
	}
	if d.Feat16 != nil {
		c.meta.HasFeatures, c.meta.NumFeatures = true, d.Feat16.Cols
		data := d.Feat16.Data[:d.Feat16.Rows*d.Feat16.Cols]
		c.add("features", dtypeHalf, int64(len(data)), byteview.Of(data))
	}
	if d.FeatCSR != nil {
		c.addSparseFeatures(d.FeatCSR)
	}
	if d.Labels != nil {
		c.add("labels", "int32", int64(len(d.Labels)), byteview.Of(d.Labels))
	}
	for _, name := range d.SplitNames() {
		s := d.Splits[name]
		c.meta.Splits = append(c.meta.Splits, binSplit{name, int64(len(s.Train)), int64(len(s.Valid)), int64(len(s.Test))})
		for k, ids := range [...][]int64{s.Train, s.Valid, s.Test} {
			c.add("split/"+name+"/"+splitParts[k], "int64", int64(len(ids)), byteview.Of(ids))
		}
	}
	return c
}

// layOut sets the offset of every section, each aligned to binAlign and
// in order after the header and metadata, and returns the metadata as
// JSON. The metadata's length depends on the offsets it records, so the
// layout is repeated until stable (two rounds at most in practice, as the
// length grows by a few digits).
func (m *binMeta) layOut() ([]byte, error) {
	var mj []byte
	for start := int64(-1); ; {
		off := alignUp(binHeaderSize + int64(len(mj)))
		if off == start {
			return mj, nil
		}
		start = off
		for k := range m.Sections {
			m.Sections[k].Offset = off
			off = alignUp(off + m.Sections[k].Length)
		}
		var err error
		if mj, err = json.Marshal(m); err != nil {
			return nil, err
		}
		m.crc = crc32.Checksum(mj, castagnoli)
	}
}

// version returns the format version of a file with metadata m: 3 for a
// part, else 2 with sparse features, else 1.
func (m *binMeta) version() uint32 {
	switch {
	case m.Part != nil:
		return binVersionPart
	case m.FeatureFormat != "":
		return binVersion2
	}
	return binVersion1
}

// binHeader returns the file header of the given version for the metadata
// mj, which follows it at offset binHeaderSize.
func binHeader(mj []byte, version uint32) [binHeaderSize]byte {
	var hdr [binHeaderSize]byte
	copy(hdr[:8], binMagic)
	le := binary.LittleEndian
	le.PutUint32(hdr[8:], version)
	le.PutUint64(hdr[16:], binHeaderSize)
	le.PutUint64(hdr[24:], uint64(len(mj)))
	le.PutUint32(hdr[32:], crc32.Checksum(mj, castagnoli))
	le.PutUint32(hdr[60:], crc32.Checksum(hdr[:60], castagnoli))
	return hdr
}

// write atomically writes the file of c to path: the header, the metadata
// mj (c.meta laid out by layOut) and every section at its offset, with
// zero padding between them. It returns the file's size in bytes.
func (c *binContent) write(path string, mj []byte) (size int64, err error) {
	af, err := atomicfile.Create(path)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			af.Abort()
			err = fmt.Errorf("graph: writing %s: %w", path, err)
		}
	}()
	w := &offsetWriter{w: bufio.NewWriterSize(af, textfile.BufSize)}
	hdr := binHeader(mj, c.meta.version())
	if err := w.write(hdr[:]); err != nil {
		return 0, err
	}
	if err := w.write(mj); err != nil {
		return 0, err
	}
	for k, s := range c.meta.Sections {
		if fill := c.stream[k]; fill != nil {
			if err := w.writeSection(s, nil); err != nil {
				return 0, err
			}
			if err := fill(w.write); err != nil {
				return 0, err
			}
			if got := w.pos - s.Offset; got != s.Length {
				return 0, fmt.Errorf("section %s: %d bytes written, %d recorded", s.Name, got, s.Length)
			}
			continue
		}
		if err := w.writeSection(s, c.data[k]); err != nil {
			return 0, err
		}
	}
	if err := w.w.Flush(); err != nil {
		return 0, err
	}
	return w.pos, af.Commit()
}

// offsetWriter writes through a buffer and counts the bytes written, so
// that sections land at the offsets their metadata records.
type offsetWriter struct {
	w   *bufio.Writer
	pos int64 // bytes written so far
}

// write writes b.
func (o *offsetWriter) write(b []byte) error {
	n, err := o.w.Write(b)
	o.pos += int64(n)
	return err
}

// writeSection pads with zero bytes up to s.Offset, which must not be
// behind what is already written, and writes the section's content data.
func (o *offsetWriter) writeSection(s binSection, data []byte) error {
	var zero [binAlign]byte
	for o.pos < s.Offset {
		if err := o.write(zero[:min(int64(len(zero)), s.Offset-o.pos)]); err != nil {
			return err
		}
	}
	return o.write(data)
}

// Mapping is the memory map behind a Dataset returned by OpenBinary. The
// Dataset's arrays alias it: they are valid until Close and must not be
// used afterwards.
type Mapping struct {
	mu   sync.Mutex
	data []byte
}

// Close unmaps the file. Every slice of the Dataset that came with the
// Mapping becomes invalid: using it afterwards crashes the program. Close
// is idempotent, and a nil *Mapping may be closed.
func (m *Mapping) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return nil
	}
	err := syscall.Munmap(m.data)
	m.data = nil
	return err
}

// OpenBinary opens a dataset written by WriteBinary.
//
// With opt.Keep nil the file is memory-mapped read-only and the Dataset's
// arrays (Adj, Feat, Labels, splits) alias the mapping without copying:
// pages are read from disk when first touched and shared with other
// processes mapping the same file. The arrays are read-only; writing to
// them crashes the program, so copy what must be modified (or load with a
// Keep that keeps every row, which copies). The returned Mapping must be
// closed when the Dataset is no longer used, and the Dataset is invalid
// after Close.
//
// With opt.Keep set, only the kept rows are copied out (see Dataset and
// ReadOptions), the file is unmapped before OpenBinary returns and the
// Mapping is nil. Splits are copied whole.
//
// opt.NoFeatures and opt.NoLabels leave Feat and Labels nil. Unless
// opt.NoVerify is set, the CRC-32C of every section used is verified, which
// reads those sections in full; the header and metadata are always
// verified. A file with the wrong magic, an unknown version, a bad
// checksum, or that is truncated gives a *ParseError naming the file (and
// the section) and wrapping ErrNotBinary, ErrVersion, ErrChecksum or
// ErrTruncated.
//
// OpenBinary returns an error on big-endian hosts.
func OpenBinary(path string, opt ReadOptions) (*Dataset, *Mapping, error) {
	if !byteview.LittleEndian {
		return nil, nil, errBigEndian
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, textfile.OpenError(path, err)
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, nil, &ParseError{Path: path, Msg: "cannot stat", Err: err}
	}
	size := st.Size()
	meta, err := readBinMeta(f, path, size)
	if err != nil {
		return nil, nil, err
	}
	if int64(int(size)) != size {
		return nil, nil, parseErr(path, 0, "file too large to map on this platform")
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, &ParseError{Path: path, Msg: "cannot map", Err: err}
	}
	m := &Mapping{data: data}
	d, err := binDataset(path, data, meta, opt)
	if err != nil || opt.Keep != nil {
		m.Close()
		m = nil
	}
	if err != nil {
		return nil, nil, err
	}
	return d, m, nil
}

// readBinMeta reads and checks the header and metadata of a binary file of
// the given size.
func readBinMeta(r io.ReaderAt, path string, size int64) (*binMeta, error) {
	var hdr [binHeaderSize]byte
	n, err := r.ReadAt(hdr[:], 0)
	if n < len(binMagic) || string(hdr[:len(binMagic)]) != binMagic {
		if err != nil && err != io.EOF {
			return nil, &ParseError{Path: path, Msg: "cannot read header", Err: err}
		}
		return nil, &ParseError{Path: path, Err: ErrNotBinary}
	}
	if n < binHeaderSize {
		return nil, &ParseError{Path: path, Msg: "header", Err: ErrTruncated}
	}
	le := binary.LittleEndian
	if le.Uint32(hdr[60:]) != crc32.Checksum(hdr[:60], castagnoli) {
		return nil, &ParseError{Path: path, Msg: "header", Err: ErrChecksum}
	}
	v := le.Uint32(hdr[8:])
	if v < binVersion1 || v > binVersion {
		return nil, &ParseError{Path: path, Msg: fmt.Sprintf("version %d (this build reads %d to %d)", v, binVersion1, binVersion), Err: ErrVersion}
	}
	metaOff, metaLen := le.Uint64(hdr[16:]), le.Uint64(hdr[24:])
	if metaOff < binHeaderSize || metaLen > binMaxMeta || metaOff > uint64(size) {
		return nil, parseErr(path, 0, fmt.Sprintf("corrupt header: metadata at %d, %d bytes", metaOff, metaLen))
	}
	if metaOff+metaLen > uint64(size) {
		return nil, &ParseError{Path: path, Msg: "metadata", Err: ErrTruncated}
	}
	mj := make([]byte, metaLen)
	if _, err := r.ReadAt(mj, int64(metaOff)); err != nil {
		return nil, &ParseError{Path: path, Msg: "cannot read metadata", Err: err}
	}
	if le.Uint32(hdr[32:]) != crc32.Checksum(mj, castagnoli) {
		return nil, &ParseError{Path: path, Msg: "metadata", Err: ErrChecksum}
	}
	var meta binMeta
	if err := json.Unmarshal(mj, &meta); err != nil {
		return nil, &ParseError{Path: path, Msg: "malformed metadata", Err: err}
	}
	meta.crc = le.Uint32(hdr[32:])
	if (meta.Part != nil) != (v == binVersionPart) {
		return nil, parseErr(path, 0, fmt.Sprintf("corrupt metadata: a version %d file with part %v (only version %d files are parts)", v, meta.Part != nil, binVersionPart))
	}
	if meta.version() > v {
		return nil, parseErr(path, 0, fmt.Sprintf("corrupt metadata: %s features in a version %d file", meta.FeatureFormat, v))
	}
	if err := meta.check(path, size); err != nil {
		return nil, err
	}
	return &meta, nil
}

// check verifies that the metadata is self-consistent and that every
// section lies within a file of the given size. Errors are *ParseError
// naming path.
func (m *binMeta) check(path string, size int64) error {
	if m.NumNodes < 0 || m.NumNodes > maxNodes || m.NumEdges < 0 || m.NumFeatures < 0 || m.NumClasses < 0 {
		return parseErr(path, 0, "corrupt metadata: negative or huge count")
	}
	if m.NumClasses > MaxClasses {
		return parseErr(path, 0, fmt.Sprintf("corrupt metadata: %d classes exceeds the limit of %d", m.NumClasses, MaxClasses))
	}
	if p := m.Part; p != nil && (p.Parts < 1 || p.Index < 0 || p.Index >= p.Parts || p.Lo < 0 || p.Hi < p.Lo || p.Hi > m.NumNodes) {
		return parseErr(path, 0, fmt.Sprintf("corrupt metadata: part %d of %d with rows [%d,%d) of %d", p.Index, p.Parts, p.Lo, p.Hi, m.NumNodes))
	}
	rows := m.rows()
	want := map[string]struct {
		dtype string
		count int64
	}{
		"indptr":  {"int64", rows + 1},
		"indices": {"int64", m.NumEdges},
	}
	if m.Part != nil {
		want[secOrigIDs] = struct {
			dtype string
			count int64
		}{"int64", rows}
	}
	if m.Weighted {
		want["values"] = struct {
			dtype string
			count int64
		}{"float64", m.NumEdges}
	}
	if m.HasFeatures && m.FeatureFormat == "" {
		if m.NumFeatures > 0 && rows > (1<<62)/int64(m.NumFeatures) {
			return parseErr(path, 0, "corrupt metadata: feature matrix too large")
		}
		want["features"] = struct {
			dtype string
			count int64
		}{m.featureDType(), rows * int64(m.NumFeatures)}
	}
	if err := m.checkSparseFeatures(path, want); err != nil {
		return err
	}
	if m.HasLabels {
		want["labels"] = struct {
			dtype string
			count int64
		}{"int32", rows}
	}
	for _, s := range m.Splits {
		for k, c := range [...]int64{s.Train, s.Valid, s.Test} {
			want["split/"+s.Name+"/"+splitParts[k]] = struct {
				dtype string
				count int64
			}{"int64", c}
		}
	}
	seen := map[string]bool{}
	for _, s := range m.Sections {
		w, ok := want[s.Name]
		if !ok || seen[s.Name] {
			return parseErr(path, 0, fmt.Sprintf("corrupt metadata: unexpected section %q", s.Name))
		}
		seen[s.Name] = true
		if dtypeSize[s.DType] == 0 || s.DType != w.dtype || s.Count != w.count || s.Count < 0 || s.Length != s.Count*dtypeSize[s.DType] {
			return parseErr(path, 0, fmt.Sprintf("corrupt metadata: section %q is %d×%s in %d bytes, want %d×%s", s.Name, s.Count, s.DType, s.Length, w.count, w.dtype))
		}
		if s.Offset < binHeaderSize || s.Offset%binAlign != 0 {
			return parseErr(path, 0, fmt.Sprintf("corrupt metadata: section %q at unaligned offset %d", s.Name, s.Offset))
		}
		if s.Offset > size || s.Length > size-s.Offset {
			return &ParseError{Path: path, Msg: fmt.Sprintf("section %s ends at byte %d, past the end of the %d-byte file", s.Name, s.Offset+s.Length, size), Err: ErrTruncated}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !seen[name] {
			return parseErr(path, 0, fmt.Sprintf("corrupt metadata: section %q missing", name))
		}
	}
	return nil
}

// section returns the section of the given name; check guarantees it
// exists for every name binView asks for.
func (m *binMeta) section(name string) binSection {
	for _, s := range m.Sections {
		if s.Name == name {
			return s
		}
	}
	panic("graph: internal error: missing section " + name)
}

// view returns the elements of section s of the mapped file data, aliasing
// data; an empty section gives an empty, non-nil slice.
func view[T int64 | int32 | float64 | float32 | uint16](data []byte, s binSection) []T {
	if s.Count == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&data[s.Offset])), s.Count)
}

// binFile is a mapped binary file whose metadata readBinMeta checked.
type binFile struct {
	path     string
	data     []byte // the mapping
	meta     *binMeta
	noVerify bool            // skip the sections' checksums
	used     map[string]bool // the sections binView returned
}

// binView returns the elements of the section name of f, aliasing the
// mapping, after verifying the section's checksum unless f.noVerify.
func binView[T int64 | int32 | float64 | float32 | uint16](f *binFile, name string) ([]T, error) {
	s := f.meta.section(name)
	if f.used == nil {
		f.used = map[string]bool{}
	}
	f.used[name] = true
	if !f.noVerify && checksum(f.data[s.Offset:s.Offset+s.Length]) != s.CRC32C {
		return nil, &ParseError{Path: f.path, Msg: "section " + s.Name, Err: ErrChecksum}
	}
	return view[T](f.data, s), nil
}

// binArrays are the arrays of a binary file, aliasing its mapping. The
// optional ones are nil when the file lacks them or they were not asked
// for.
type binArrays struct {
	indptr, indices []int64
	values          []float64 // weighted graphs only
	feat            []float32 // n×f row-major
	feat16          []uint16  // or the same in half precision
	sfeat           *featSection
	labels          []int32
}

// arrays returns the adjacency, features and labels sections of f, checking
// that indptr starts at 0 and ends at the edge count. noFeatures and
// noLabels skip those sections.
func (f *binFile) arrays(noFeatures, noLabels bool) (a binArrays, err error) {
	if a.indptr, err = binView[int64](f, "indptr"); err != nil {
		return a, err
	}
	if a.indices, err = binView[int64](f, "indices"); err != nil {
		return a, err
	}
	if n := f.meta.rows(); a.indptr[0] != 0 || a.indptr[n] != f.meta.NumEdges {
		return a, parseErr(f.path, 0, "section indptr: corrupt row pointer")
	}
	if f.meta.Weighted {
		if a.values, err = binView[float64](f, "values"); err != nil {
			return a, err
		}
	}
	if f.meta.HasFeatures && !noFeatures {
		if f.meta.FeatureFormat != "" {
			if a.sfeat, err = f.sparseFeatures(); err != nil {
				return a, err
			}
		} else if f.meta.featureDType() == dtypeHalf {
			if a.feat16, err = binView[uint16](f, "features"); err != nil {
				return a, err
			}
		} else if a.feat, err = binView[float32](f, "features"); err != nil {
			return a, err
		}
	}
	if f.meta.HasLabels && !noLabels {
		if a.labels, err = binView[int32](f, "labels"); err != nil {
			return a, err
		}
	}
	return a, nil
}

// splits returns every split of f, aliasing the mapping, or copied out of
// it when copied is set.
func (f *binFile) splits(copied bool) (map[string]Split, error) {
	splits := map[string]Split{}
	for _, sp := range f.meta.Splits {
		var parts [len(splitParts)][]int64
		for k, part := range splitParts {
			ids, err := binView[int64](f, "split/"+sp.Name+"/"+part)
			if err != nil {
				return nil, err
			}
			if copied {
				ids = append([]int64{}, ids...)
			}
			parts[k] = ids
		}
		splits[sp.Name] = Split{Train: parts[0], Valid: parts[1], Test: parts[2]}
	}
	return splits, nil
}

// binDataset builds the Dataset of a mapped file, verifying checksums
// unless opt.NoVerify. With opt.Keep nil the Dataset aliases data;
// otherwise the kept rows and the splits are copied out of it.
func binDataset(path string, data []byte, meta *binMeta, opt ReadOptions) (*Dataset, error) {
	if p := meta.Part; p != nil {
		return nil, parseErr(path, 0, fmt.Sprintf("is part %d of %d of a partitioned dataset: load its directory", p.Index, p.Parts))
	}
	f := &binFile{path: path, data: data, meta: meta, noVerify: opt.NoVerify}
	a, err := f.arrays(opt.NoFeatures, opt.NoLabels)
	if err != nil {
		return nil, err
	}
	n := meta.NumNodes
	d := &Dataset{Name: meta.Name, NumNodes: n, Symmetric: meta.Symmetric}
	if a.labels != nil {
		d.NumClasses = meta.NumClasses
		if err := checkLabels(path, a.labels, meta.NumClasses); err != nil {
			return nil, err
		}
	}
	if d.Splits, err = f.splits(opt.Keep != nil); err != nil {
		return nil, err
	}
	format, err := opt.FeatureFormat.resolve()
	if err != nil {
		return nil, err
	}
	if opt.Keep != nil {
		d.Rows = keptRows(n, opt.Keep)
		if err := f.copyRows(d, a); err != nil {
			return nil, err
		}
	} else {
		d.Adj = &sparse.CSR{NRows: n, NCols: n, Indptr: a.indptr, Indices: a.indices, Values: a.values}
		if a.feat != nil {
			d.Feat = &dense.Matrix{Rows: int(n), Cols: meta.NumFeatures, Data: a.feat}
		}
		d.Labels = a.labels
	}
	if a.feat != nil || a.feat16 != nil || a.sfeat != nil {
		src := featSource{path: path, dim: meta.NumFeatures, dense: a.feat, half: a.feat16, sp: a.sfeat}
		if d.Feat, d.Feat16, d.FeatCSR, err = src.rows(d.Rows, n, format, opt.KeepHalf); err != nil {
			return nil, err
		}
	}
	if opt.Keep == nil {
		f.releaseUnused()
	}
	return d, nil
}

// releaseUnused drops from the process's resident set the pages of the
// sections that binView did not return (the features of a NoFeatures
// load, say), which the mapping's MAP_POPULATE read in: madvise
// MADV_DONTNEED on the whole pages inside each such section, which a
// later touch reads again from the page cache. The advice's failure is
// ignored: it only leaves the pages resident.
func (f *binFile) releaseUnused() {
	page := int64(syscall.Getpagesize())
	for _, s := range f.meta.Sections {
		if f.used[s.Name] {
			continue
		}
		lo := (s.Offset + page - 1) &^ (page - 1)
		hi := (s.Offset + s.Length) &^ (page - 1)
		if hi > lo {
			_ = syscall.Madvise(f.data[lo:hi], syscall.MADV_DONTNEED)
		}
	}
}

// copyRows sets d.Adj, and d.Labels where a has them, to copies of the
// rows d.Rows of the arrays a of f, checking each copied row's pointers.
// The features are copied by featSource.rows.
func (f *binFile) copyRows(d *Dataset, a binArrays) error {
	held := len(d.Rows)
	ptr := make([]int64, held+1)
	for k, g := range d.Rows {
		lo, hi := a.indptr[g], a.indptr[g+1]
		if lo < 0 || hi < lo || hi > f.meta.NumEdges {
			return parseErr(f.path, 0, fmt.Sprintf("section indptr: corrupt row pointer at row %d", g))
		}
		ptr[k+1] = ptr[k] + hi - lo
	}
	adj := &sparse.CSR{NRows: int64(held), NCols: f.meta.NumNodes, Indptr: ptr, Indices: make([]int64, ptr[held])}
	if a.values != nil {
		adj.Values = make([]float64, ptr[held])
	}
	for k, g := range d.Rows {
		lo, hi := a.indptr[g], a.indptr[g+1]
		copy(adj.Indices[ptr[k]:], a.indices[lo:hi])
		if a.values != nil {
			copy(adj.Values[ptr[k]:], a.values[lo:hi])
		}
	}
	d.Adj = adj
	if a.labels != nil {
		d.Labels = make([]int32, held)
		for k, g := range d.Rows {
			d.Labels[k] = a.labels[g]
		}
	}
	return nil
}

// Load reads a dataset, choosing the reader from what path is:
//
//   - a directory with a manifest.json: a partitioned dataset (WriteParts),
//     read whole (LoadParts) in its relabelled ids, or with opt.Keep only
//     the parts holding kept rows, one at a time;
//   - any other directory: the OGB layout, csv or binary .npz (ReadOGB);
//   - a file starting with the binary magic: OpenBinary;
//   - a file named *.mtx or *.mtx.gz: ReadMatrixMarket, which must give a
//     square matrix;
//   - any other file: a SNAP-style edge list (ReadEdgeList).
//
// Matrix Market files and edge lists give a Dataset without features,
// labels or splits, named after the file. opt applies to every kind (Keep
// selects rows; NoVerify matters for binary files only).
//
// A binary file loaded without Keep stays mapped for the rest of the
// process: the Dataset aliases read-only mapped memory that is never
// unmapped (use OpenBinary to control the mapping's lifetime).
func Load(path string, opt ReadOptions) (*Dataset, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, textfile.OpenError(path, err)
	}
	if st.IsDir() {
		if IsPartDir(path) {
			return loadPartDir(path, opt)
		}
		return ReadOGB(path, opt)
	}
	if isBinary(path) {
		d, _, err := OpenBinary(path, opt) // the mapping lives as long as the process
		return d, err
	}
	var a *sparse.CSR
	lower := strings.ToLower(path)
	if strings.HasSuffix(lower, ".mtx") || strings.HasSuffix(lower, ".mtx.gz") {
		if a, err = ReadMatrixMarket(path); err != nil {
			return nil, err
		}
		if a.NRows != a.NCols {
			return nil, parseErr(path, 0, fmt.Sprintf("adjacency matrix is %d×%d, not square", a.NRows, a.NCols))
		}
	} else if a, err = ReadEdgeList(path); err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".gz")
	name = strings.TrimSuffix(name, filepath.Ext(name))
	d := &Dataset{Name: name, NumNodes: a.NRows, Adj: a, Splits: map[string]Split{}}
	if opt.Keep != nil {
		d.Rows = keptRows(a.NRows, opt.Keep)
		d.Adj = sparse.SelectRows(a, d.Rows)
	}
	return d, nil
}

// isBinary reports whether the file at path starts with the binary magic.
func isBinary(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [len(binMagic)]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && bytes.Equal(b[:], []byte(binMagic))
}
