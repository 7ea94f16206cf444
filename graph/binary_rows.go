package graph

import (
	"fmt"
	"io"
	"os"
	"unsafe"

	"gnnmpi/internal/byteview"
	"gnnmpi/internal/textfile"
	"gnnmpi/sparse"
)

// BinaryRows reads row blocks of the adjacency of a binary dataset (see
// WriteBinary) with positioned reads, touching only the bytes of the rows
// asked for: a rank of a distributed job reads its 1/p of a file that need
// not fit its memory. OpenBinary, by contrast, maps and (unless NoVerify)
// checksums whole sections.
//
// The header and metadata are verified when opened; the section checksums
// cover whole sections and cannot be verified from a block, so Rows checks
// instead that the row pointers it reads are non-decreasing and within the
// section and that every column lies in [0, NumNodes). A BinaryRows may be
// used by one goroutine at a time.
type BinaryRows struct {
	f    *os.File
	path string
	meta *binMeta
}

// OpenBinaryRows opens the binary dataset at path for reading row blocks.
// A file with the wrong magic, an unknown version, a bad header or
// metadata checksum, or that is truncated gives a *ParseError naming the
// file. It returns an error on big-endian hosts. The caller closes it.
func OpenBinaryRows(path string) (*BinaryRows, error) {
	if !byteview.LittleEndian {
		return nil, errBigEndian
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, textfile.OpenError(path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &ParseError{Path: path, Msg: "cannot stat", Err: err}
	}
	meta, err := readBinMeta(f, path, st.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	return &BinaryRows{f: f, path: path, meta: meta}, nil
}

// Close closes the file.
func (r *BinaryRows) Close() error { return r.f.Close() }

// Name returns the dataset's name.
func (r *BinaryRows) Name() string { return r.meta.Name }

// NumNodes returns the number of vertices n.
func (r *BinaryRows) NumNodes() int64 { return r.meta.NumNodes }

// NumEdges returns the number of stored (directed) edges of the whole
// graph.
func (r *BinaryRows) NumEdges() int64 { return r.meta.NumEdges }

// Symmetric reports whether the file records that every edge's reverse is
// stored too (Dataset.Symmetric).
func (r *BinaryRows) Symmetric() bool { return r.meta.Symmetric }

// Rows returns rows [lo, hi) of the adjacency: a (hi−lo)×n CSR whose row k
// is vertex lo+k's row, with global column ids, and the edge values of a
// weighted graph. The caller owns it. It will panic unless
// 0 ≤ lo ≤ hi ≤ NumNodes. A corrupt row pointer or column gives a
// *ParseError naming the file and the section.
func (r *BinaryRows) Rows(lo, hi int64) (*sparse.CSR, error) {
	n := r.meta.NumNodes
	if lo < 0 || hi < lo || hi > n {
		panic("graph: BinaryRows.Rows: rows out of range")
	}
	ptr := make([]int64, hi-lo+1)
	if err := readSection(r, "indptr", lo, ptr); err != nil {
		return nil, err
	}
	base := ptr[0]
	for k := range ptr {
		if ptr[k] < base || (k > 0 && ptr[k] < ptr[k-1]) || ptr[k] > r.meta.NumEdges {
			return nil, parseErr(r.path, 0, fmt.Sprintf("section indptr: corrupt row pointer at row %d", lo+int64(k)))
		}
		ptr[k] -= base
	}
	if (lo == 0 && base != 0) || (hi == n && ptr[len(ptr)-1]+base != r.meta.NumEdges) {
		return nil, parseErr(r.path, 0, "section indptr: corrupt row pointer")
	}
	nnz := ptr[len(ptr)-1]
	adj := &sparse.CSR{NRows: hi - lo, NCols: n, Indptr: ptr, Indices: make([]int64, nnz)}
	if err := readSection(r, "indices", base, adj.Indices); err != nil {
		return nil, err
	}
	for k, j := range adj.Indices {
		if j < 0 || j >= n {
			return nil, parseErr(r.path, 0, fmt.Sprintf("section indices: column %d of edge %d outside [0,%d)", j, base+int64(k), n))
		}
	}
	if r.meta.Weighted {
		adj.Values = make([]float64, nnz)
		if err := readSection(r, "values", base, adj.Values); err != nil {
			return nil, err
		}
	}
	return adj, nil
}

// readSection reads len(dst) elements of section name of r, starting at
// element first, into dst.
func readSection[T int64 | int32 | float64 | float32 | uint16](r *BinaryRows, name string, first int64, dst []T) error {
	s := r.meta.section(name)
	if len(dst) == 0 {
		return nil
	}
	size := int64(unsafe.Sizeof(dst[0]))
	if first < 0 || first+int64(len(dst)) > s.Count {
		return parseErr(r.path, 0, fmt.Sprintf("section %s: elements [%d,%d) outside its %d", name, first, first+int64(len(dst)), s.Count))
	}
	if _, err := r.f.ReadAt(byteview.Of(dst), s.Offset+first*size); err != nil {
		if err == io.EOF {
			return &ParseError{Path: r.path, Msg: "section " + name, Err: ErrTruncated}
		}
		return &ParseError{Path: r.path, Msg: "cannot read section " + name, Err: err}
	}
	return nil
}
