package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"gnnmpi/dense"
	"gnnmpi/internal/byteview"
	"gnnmpi/internal/textfile"
	"gnnmpi/sparse"
)

// PartReadOptions says what LoadParts reads and how.
type PartReadOptions struct {
	// FeatureFormat holds the features dense or sparse; FeatureAuto (or
	// "") decides by the density of the whole dataset's features, which
	// the manifest records, so every rank decides alike.
	FeatureFormat FeatureFormat
	// NoFeatures skips the features: Feat and FeatCSR are nil.
	NoFeatures bool
	// KeepHalf holds dense features that the part files store in half
	// precision (PartManifest.FeatureDType float16) as they are, in
	// Part.Feat16, aliasing the mapping of a single part; without it they
	// are widened to float32 in Feat.
	KeepHalf bool
	// NoLabels skips the labels: Labels is nil and NumClasses 0.
	NoLabels bool
	// Cols, unless zero, keeps only the adjacency entries whose columns
	// lie in [Cols[0], Cols[1]) (a block of a 2D layout); the column ids
	// stay global.
	Cols [2]int64
}

// LoadParts reads the parts [first, last) of the partitioned dataset in
// dir, whose manifest is m (ReadPartManifest), as one Part holding the
// rows [m.Offsets[first], m.Offsets[last]). It opens only those parts'
// files. A single part is memory-mapped and its arrays alias the mapping
// where they are stored as asked (see Part and OpenBinary); several parts
// are copied into one. It allocates no array of the whole graph's size:
// memory and time are in proportion to the parts read.
//
// Every part file is verified: its size and the CRC-32C of its metadata
// against the manifest (so a part from another partitioning is refused),
// its part index, rows, vertex count and other metadata against the
// manifest, the CRC-32C of every section read, the row pointers, column
// ids, labels, split members and original ids. A missing, truncated,
// damaged or mismatched file gives a *ParseError naming it, wrapping
// fs.ErrNotExist, ErrTruncated, ErrChecksum or ErrManifest where one
// applies.
func LoadParts(dir string, m *PartManifest, first, last int, o PartReadOptions) (*Part, error) {
	mpath := filepath.Join(dir, PartManifestName)
	if first < 0 || last > m.Parts || first >= last {
		return nil, fmt.Errorf("graph: parts [%d,%d) of the %d parts of %s", first, last, m.Parts, mpath)
	}
	format, err := o.FeatureFormat.resolve()
	if err != nil {
		return nil, err
	}
	if format == FeatureAuto {
		format = FeatureDense
		if sparseByDensity(m.FeatureNNZ, m.NumNodes, m.NumFeatures) {
			format = FeatureCSR
		}
	}
	cols := o.Cols != [2]int64{}
	if cols && (o.Cols[0] < 0 || o.Cols[1] < o.Cols[0] || o.Cols[1] > m.NumNodes) {
		return nil, fmt.Errorf("graph: columns [%d,%d) of the %d vertices of %s", o.Cols[0], o.Cols[1], m.NumNodes, mpath)
	}
	pieces := make([]*Part, 0, last-first)
	defer func() {
		for _, p := range pieces {
			p.Close()
		}
	}()
	for q := first; q < last; q++ {
		p, err := openPart(filepath.Join(dir, m.Files[q].Name), m, q, o, format)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, p)
	}
	p := pieces[0]
	if len(pieces) > 1 {
		p = mergeParts(pieces)
	} else {
		pieces = nil // the result keeps the mapping
	}
	if cols {
		p.Adj = sparse.SelectCols(p.Adj, o.Cols[0], o.Cols[1])
	}
	return p, nil
}

// openPart maps and verifies part q of the manifest m, stored at path,
// and returns it aliasing the mapping (features converted to format).
func openPart(path string, m *PartManifest, q int, o PartReadOptions, format FeatureFormat) (*Part, error) {
	if !byteview.LittleEndian {
		return nil, errBigEndian
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, textfile.OpenError(path, err)
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, &ParseError{Path: path, Msg: "cannot stat", Err: err}
	}
	want := m.Files[q]
	mpath := filepath.Join(m.Dir, PartManifestName)
	if size := st.Size(); size != want.Bytes {
		e := &ParseError{Path: path, Msg: fmt.Sprintf("%d bytes, but the manifest %s says %d", size, mpath, want.Bytes), Err: ErrManifest}
		if size < want.Bytes {
			e.Err = ErrTruncated
		}
		return nil, e
	}
	meta, err := readBinMeta(f, path, want.Bytes)
	if err != nil {
		return nil, err
	}
	if err := checkPartMeta(path, mpath, meta, m, q); err != nil {
		return nil, err
	}
	if int64(int(want.Bytes)) != want.Bytes {
		return nil, parseErr(path, 0, "file too large to map on this platform")
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(want.Bytes), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, &ParseError{Path: path, Msg: "cannot map", Err: err}
	}
	p := &Part{mapping: &Mapping{data: data}}
	if err := p.fill(&binFile{path: path, data: data, meta: meta}, m, o, format); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// checkPartMeta checks the metadata meta of the file at path against part
// q of the manifest m at mpath.
func checkPartMeta(path, mpath string, meta *binMeta, m *PartManifest, q int) error {
	bad := func(what string, got, want any) error {
		return &ParseError{Path: path, Msg: fmt.Sprintf("%s is %v, but the manifest %s says %v", what, got, mpath, want), Err: ErrManifest}
	}
	if meta.Part == nil {
		return &ParseError{Path: path, Msg: fmt.Sprintf("is not a part file (format version %d), but the manifest %s lists it as part %d", meta.version(), mpath, q), Err: ErrManifest}
	}
	stored := FeatureFormat("")
	if meta.HasFeatures {
		stored = FeatureDense
		if meta.FeatureFormat != "" {
			stored = FeatureCSR
		}
	}
	p, want := meta.Part, m.Files[q]
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"the metadata checksum", fmt.Sprintf("%08x", meta.crc), fmt.Sprintf("%08x", want.Checksum)},
		{"the part index", p.Index, q},
		{"the part count", p.Parts, m.Parts},
		{"the row range", fmt.Sprintf("[%d,%d)", p.Lo, p.Hi), fmt.Sprintf("[%d,%d)", m.Offsets[q], m.Offsets[q+1])},
		{"num_nodes", meta.NumNodes, m.NumNodes},
		{"num_edges", meta.NumEdges, want.Edges},
		{"the name", meta.Name, m.Name},
		{"num_features", meta.NumFeatures, m.NumFeatures},
		{"the feature format", stored, m.FeatureFormat},
		{"the feature dtype", featDTypeTag(meta), m.FeatureDType},
		{"has_labels", meta.HasLabels, m.HasLabels},
		{"num_classes", meta.NumClasses, m.NumClasses},
		{"weighted", meta.Weighted, m.Weighted},
		{"symmetric", meta.Symmetric, m.Symmetric},
		{"the number of splits", len(meta.Splits), len(m.Splits)},
	} {
		if c.got != c.want {
			return bad(c.what, c.got, c.want)
		}
	}
	for k, s := range meta.Splits {
		if s.Name != m.Splits[k].Name {
			return bad(fmt.Sprintf("split %d", k), s.Name, m.Splits[k].Name)
		}
	}
	return nil
}

// featDTypeTag returns the manifest's FeatureDType of a part file with
// metadata meta: "float16" for dense half features, else "".
func featDTypeTag(meta *binMeta) string {
	if meta.HasFeatures && meta.FeatureFormat == "" && meta.featureDType() == dtypeHalf {
		return dtypeHalf
	}
	return ""
}

// fill sets p from the mapped part file f of manifest m, verifying the
// sections it reads and their content.
func (p *Part) fill(f *binFile, m *PartManifest, o PartReadOptions, format FeatureFormat) error {
	meta := f.meta
	a, err := f.arrays(o.NoFeatures, o.NoLabels)
	if err != nil {
		return err
	}
	part := meta.Part
	*p = Part{Name: meta.Name, NumNodes: meta.NumNodes, Lo: part.Lo, Hi: part.Hi, Symmetric: meta.Symmetric,
		Weighted: meta.Weighted, mapping: p.mapping}
	rows, n := p.Rows(), p.NumNodes
	for i := range rows {
		if a.indptr[i+1] < a.indptr[i] {
			return parseErr(f.path, 0, fmt.Sprintf("section indptr: corrupt row pointer at row %d", i))
		}
	}
	for e, j := range a.indices {
		if j < 0 || j >= n {
			return parseErr(f.path, 0, fmt.Sprintf("section indices: column %d of entry %d outside [0,%d)", j, e, n))
		}
	}
	p.Adj = &sparse.CSR{NRows: rows, NCols: n, Indptr: a.indptr, Indices: a.indices, Values: a.values}
	if a.labels != nil {
		if err := checkLabels(f.path, a.labels, meta.NumClasses); err != nil {
			return err
		}
		p.Labels, p.NumClasses = a.labels, meta.NumClasses
	}
	if p.Splits, err = f.splits(false); err != nil {
		return err
	}
	for name, s := range p.Splits {
		for k, ids := range [...][]int64{s.Train, s.Valid, s.Test} {
			for i, v := range ids {
				if v < p.Lo || v >= p.Hi || (i > 0 && ids[i-1] >= v) {
					return parseErr(f.path, 0, fmt.Sprintf("section split/%s/%s: member %d not ascending in [%d,%d)", name, splitParts[k], v, p.Lo, p.Hi))
				}
			}
		}
	}
	if p.OrigIDs, err = binView[int64](f, secOrigIDs); err != nil {
		return err
	}
	for i, v := range p.OrigIDs {
		if v < 0 || v >= n {
			return parseErr(f.path, 0, fmt.Sprintf("section %s: row %d has original id %d outside [0,%d)", secOrigIDs, i, v, n))
		}
	}
	if a.feat != nil || a.feat16 != nil || a.sfeat != nil {
		src := featSource{path: f.path, dim: meta.NumFeatures, dense: a.feat, half: a.feat16, sp: a.sfeat,
			whole: &featStats{rows: m.NumNodes, nnz: m.FeatureNNZ, ones: m.FeaturePattern}}
		if p.Feat, p.Feat16, p.FeatCSR, err = src.rows(nil, rows, format, o.KeepHalf); err != nil {
			return err
		}
	}
	return nil
}

// mergeParts returns the consecutive parts as one Part, copied. The
// rows are those of the pieces' arrays (selectRows may hold fewer than
// Hi−Lo).
func mergeParts(parts []*Part) *Part {
	first, last := parts[0], parts[len(parts)-1]
	p := &Part{Name: first.Name, NumNodes: first.NumNodes, Lo: first.Lo, Hi: last.Hi, NumClasses: first.NumClasses,
		Splits: map[string]Split{}, Symmetric: first.Symmetric, Weighted: first.Weighted}
	var rows int64
	for _, q := range parts {
		rows += q.Adj.NRows
	}
	adjs := make([]*sparse.CSR, len(parts))
	for k, q := range parts {
		adjs[k] = q.Adj
	}
	p.Adj = sparse.VStack(adjs, p.NumNodes, p.Weighted)
	switch {
	case first.Feat != nil:
		p.Feat = dense.New(int(rows), first.Feat.Cols)
		at := 0
		for _, q := range parts {
			at += copy(p.Feat.Data[at:], q.Feat.Data[:q.Feat.Rows*q.Feat.Cols])
		}
	case first.Feat16 != nil:
		p.Feat16 = dense.NewHalf(int(rows), first.Feat16.Cols)
		at := 0
		for _, q := range parts {
			at += copy(p.Feat16.Data[at:], q.Feat16.Data[:q.Feat16.Rows*q.Feat16.Cols])
		}
	case first.FeatCSR != nil:
		feats := make([]*sparse.Matrix[float32], len(parts))
		for k, q := range parts {
			feats[k] = q.FeatCSR
		}
		p.FeatCSR = sparse.VStack(feats, first.FeatCSR.NCols, first.FeatCSR.Values != nil)
	}
	if first.Labels != nil {
		p.Labels = make([]int32, 0, rows)
	}
	p.OrigIDs = make([]int64, 0, rows)
	for _, q := range parts {
		p.Labels = append(p.Labels, q.Labels...)
		p.OrigIDs = append(p.OrigIDs, q.OrigIDs...)
	}
	for name := range first.Splits {
		var s Split
		for _, q := range parts {
			t := q.Splits[name]
			s.Train = append(s.Train, t.Train...)
			s.Valid = append(s.Valid, t.Valid...)
			s.Test = append(s.Test, t.Test...)
		}
		for _, ids := range []*[]int64{&s.Train, &s.Valid, &s.Test} {
			if *ids == nil {
				*ids = []int64{}
			}
		}
		p.Splits[name] = s
	}
	return p
}

// loadPartDir reads the partitioned dataset in dir as a Dataset in the new
// ids (Load). Without opt.Keep it holds every part, merged; with Keep only
// the parts holding kept rows are read, one at a time, and the kept rows
// copied out of them.
func loadPartDir(dir string, opt ReadOptions) (*Dataset, error) {
	m, err := ReadPartManifest(dir)
	if err != nil {
		return nil, err
	}
	o := PartReadOptions{FeatureFormat: opt.FeatureFormat, NoFeatures: opt.NoFeatures, NoLabels: opt.NoLabels, KeepHalf: opt.KeepHalf}
	if opt.Keep == nil {
		p, err := LoadParts(dir, m, 0, m.Parts, o)
		if err != nil {
			return nil, err
		}
		return p.Dataset(), nil
	}
	rows := keptRows(m.NumNodes, opt.Keep)
	var pieces []*Part
	for q := range m.Parts {
		lo, hi := m.PartRows(q, q+1)
		a, _ := slices.BinarySearch(rows, lo)
		b, _ := slices.BinarySearch(rows, hi)
		if a == b {
			continue
		}
		p, err := LoadParts(dir, m, q, q+1, o)
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, p.selectRows(rows[a:b]))
		p.Close()
	}
	d := &Dataset{Name: m.Name, NumNodes: m.NumNodes, Rows: rows, NumClasses: m.NumClasses, Symmetric: m.Symmetric,
		Splits: map[string]Split{}}
	if opt.NoLabels {
		d.NumClasses = 0
	}
	if len(pieces) == 0 {
		// No row kept: empty arrays of the right shape, splits from no part.
		d.Adj = &sparse.CSR{NRows: 0, NCols: m.NumNodes, Indptr: []int64{0}, Indices: []int64{}}
		for _, s := range m.Splits {
			d.Splits[s.Name] = Split{Train: []int64{}, Valid: []int64{}, Test: []int64{}}
		}
		return d, nil
	}
	p := pieces[0]
	if len(pieces) > 1 {
		p = mergeParts(pieces)
	}
	d.Adj, d.Feat, d.Feat16, d.FeatCSR, d.Labels, d.Splits = p.Adj, p.Feat, p.Feat16, p.FeatCSR, p.Labels, p.Splits
	return d, nil
}

// selectRows returns a copy of p holding only the rows with the given
// new ids (ascending, in [Lo, Hi)); its Lo and Hi are p's, and its splits
// are p's (copied), not only those of the selected rows.
func (p *Part) selectRows(ids []int64) *Part {
	local := make([]int64, len(ids))
	for i, v := range ids {
		local[i] = v - p.Lo
	}
	out := &Part{Name: p.Name, NumNodes: p.NumNodes, Lo: p.Lo, Hi: p.Hi, NumClasses: p.NumClasses, Splits: map[string]Split{},
		Symmetric: p.Symmetric, Weighted: p.Weighted, Adj: sparse.SelectRows(p.Adj, local)}
	out.Feat, out.Feat16, out.FeatCSR, out.Labels = selectRowData(p.Feat, p.Feat16, p.FeatCSR, p.Labels, local)
	out.OrigIDs = make([]int64, len(ids))
	for i, r := range local {
		out.OrigIDs[i] = p.OrigIDs[r]
	}
	for name, s := range p.Splits {
		out.Splits[name] = Split{Train: slices.Clone(s.Train), Valid: slices.Clone(s.Valid), Test: slices.Clone(s.Test)}
	}
	return out
}
