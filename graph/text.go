package graph

import (
	"bufio"
	"bytes"
	"fmt"
	"gnnmpi/internal/textfile"
	"io"
	"math"
	"strconv"
	"strings"

	"gnnmpi/sparse"
)

// rowsPlausible reports whether a text reader may allocate a row pointer
// for nrows rows when the file holds nnz entries. Any matrix with up to 2²⁴
// rows passes; larger ones need at least one entry per 64 rows. This stops
// a corrupt or hostile size (a huge vertex id, a huge declared dimension)
// from exhausting memory.
func rowsPlausible(nrows, nnz int64) bool {
	return nrows <= 1<<24 || nrows/64 <= nnz
}

// ReadEdgeList reads a SNAP-style edge list: one edge "src dst" or
// "src dst weight" a line, fields separated by spaces or tabs, 0-based
// integer vertex ids and a finite real weight. Lines whose first non-blank
// character is '#' or '%' are comments; blank lines are skipped. Either all
// edges have a weight (the result has Values) or none has. A file whose name
// ends in ".gz" is decompressed.
//
// The result is n×n with n = 1 + the largest id, unless a comment before
// the first edge has a SNAP header "Nodes: N" (as in
// "# Nodes: 4039 Edges: 88234"): then n = N and every id must lie in
// [0, N). The header's edge count is not checked, as SNAP files do not
// agree on whether it counts directed lines or undirected edges. Edge
// (src, dst) is the entry in row src and column dst; rows keep file order
// and duplicates (see Dedupe).
//
// Malformed input gives a *ParseError naming the file and line.
//
// BUG(graph): Some SNAP files declare fewer "Nodes:" than their largest id
// (their ids are not contiguous); ReadEdgeList rejects them. Remove the
// header or relabel the ids. Files with more than 2²⁴ vertices and fewer
// than one edge per 64 vertices are rejected as implausible.
func ReadEdgeList(path string) (*sparse.CSR, error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer lr.Close()
	e := edgeList{declared: -1, weighted: -1, maxID: -1}
	for line := range lr.All() {
		t := bytes.TrimLeft(line, " \t\v\f\r")
		switch {
		case len(t) == 0:
		case t[0] == '#' || t[0] == '%':
			err = e.comment(lr, t)
		default:
			err = e.edge(lr, line, t)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := lr.Err(); err != nil {
		return nil, err
	}
	return e.matrix(path)
}

// edgeList collects the edges of an edge list as ReadEdgeList reads it.
type edgeList struct {
	declared   int64 // the vertex count of a SNAP header, -1 without one
	headerLine int   // the line of the SNAP header
	weighted   int   // whether edges have a weight: -1 until the first edge, then 0 or 1
	maxID      int64 // the largest vertex id so far, -1 before the first edge
	srcs, dsts []int64
	vals       []float64 // weights, when weighted
	fields     [3][]byte // scratch for the fields of a line
}

// comment handles the comment line t of lr: before the first edge, a SNAP
// header "Nodes: N" (the first one only) declares the vertex count.
func (e *edgeList) comment(lr *textfile.Lines, t []byte) error {
	if e.declared >= 0 || len(e.srcs) > 0 {
		return nil
	}
	n, ok, err := snapNodes(lr, t)
	if err != nil {
		return err
	}
	if ok {
		e.declared, e.headerLine = n, lr.Line()
	}
	return nil
}

// edge parses the current line of lr, line, whose text from the first
// non-blank character is t, as an edge "src dst" or "src dst weight" and
// appends it.
func (e *edgeList) edge(lr *textfile.Lines, line, t []byte) error {
	f := &e.fields
	k := textfile.Fields(t, f[:])
	if k < 2 || k > 3 {
		return lr.Errorf("malformed edge %s: want \"src dst\" or \"src dst weight\"", textfile.Quote(line))
	}
	w := 0
	if k == 3 {
		w = 1
	}
	if e.weighted < 0 {
		e.weighted = w
	} else if e.weighted != w {
		return lr.Errorf("edge has %d fields, but earlier edges have %d", k, 2+e.weighted)
	}
	var ids [2]int64
	for x := range ids {
		v, err := e.vertexID(lr, f[x])
		if err != nil {
			return err
		}
		ids[x] = v
		e.maxID = max(e.maxID, v)
	}
	if e.weighted == 1 {
		v, ok := textfile.ParseFloat64(f[2])
		if !ok {
			return lr.Errorf("malformed weight %s: want a finite number", textfile.Quote(f[2]))
		}
		e.vals = append(e.vals, v)
	}
	e.srcs = append(e.srcs, ids[0])
	e.dsts = append(e.dsts, ids[1])
	return nil
}

// vertexID parses the vertex id field of the current line of lr, checking
// it against the declared vertex count and maxNodes.
func (e *edgeList) vertexID(lr *textfile.Lines, field []byte) (int64, error) {
	v, ok := textfile.ParseInt(field)
	switch {
	case !ok:
		return 0, lr.Errorf("malformed vertex id %s", textfile.Quote(field))
	case v < 0:
		return 0, lr.Errorf("negative vertex id %d", v)
	case e.declared >= 0 && v >= e.declared:
		return 0, lr.Errorf("vertex id %d out of range [0,%d) declared on line %d", v, e.declared, e.headerLine)
	case v >= maxNodes:
		return 0, lr.Errorf("vertex id %d exceeds the limit of %d", v, int64(maxNodes))
	}
	return v, nil
}

// matrix returns the n×n matrix of the edges read from path, with n the
// declared vertex count or else 1 + the largest id.
func (e *edgeList) matrix(path string) (*sparse.CSR, error) {
	n := e.maxID + 1
	if e.declared >= 0 {
		n = e.declared
	}
	if !rowsPlausible(n, int64(len(e.srcs))) {
		return nil, parseErr(path, 0, fmt.Sprintf("%d vertices for only %d edges; refusing to allocate (relabel the ids)", n, len(e.srcs)))
	}
	vals := e.vals
	if e.weighted == 1 && vals == nil {
		vals = []float64{}
	}
	a, err := sparse.FromCOO(n, n, e.srcs, e.dsts, vals)
	if err != nil {
		return nil, parseErr(path, 0, err.Error()) // unreachable: ids were checked
	}
	return a, nil
}

// snapNodes parses the vertex count of a SNAP header comment
// "# Nodes: N Edges: M". ok is false when the comment has no "Nodes:".
func snapNodes(lr *textfile.Lines, comment []byte) (n int64, ok bool, err error) {
	i := bytes.Index(comment, []byte("Nodes:"))
	if i < 0 {
		return 0, false, nil
	}
	var f [1][]byte
	if textfile.Fields(comment[i+len("Nodes:"):], f[:]) == 0 {
		return 0, false, lr.Errorf("malformed SNAP header %s: want \"# Nodes: N\"", textfile.Quote(comment))
	}
	v, ok := textfile.ParseInt(f[0])
	if !ok || v < 0 {
		return 0, false, lr.Errorf("malformed vertex count %s in SNAP header", textfile.Quote(f[0]))
	}
	if v > maxNodes {
		return 0, false, lr.Errorf("%d nodes exceeds the limit of %d", v, int64(maxNodes))
	}
	return v, true, nil
}

// ReadMatrixMarket reads a sparse matrix in Matrix Market coordinate
// format, "%%MatrixMarket matrix coordinate F S" with field F one of
// pattern, integer or real and symmetry S general or symmetric. Indices are
// 1-based in the file and 0-based in the result. A pattern matrix has nil
// Values. A symmetric matrix is expanded: every off-diagonal entry (i, j) is
// stored at (i, j) and (j, i). Entries keep file order within a row. A file
// whose name ends in ".gz" is decompressed.
//
// The number of entries must equal the count on the size line. Dense
// (array) matrices, complex fields and hermitian or skew-symmetric
// matrices are rejected. Malformed input gives a *ParseError naming the
// file and line.
//
// BUG(graph): Matrices with more than 2²⁴ rows and fewer than one entry per
// 64 rows are rejected as implausible.
func ReadMatrixMarket(path string) (*sparse.CSR, error) {
	lr, err := textfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer lr.Close()
	field, symmetric, err := mmHeader(lr)
	if err != nil {
		return nil, err
	}
	m, n, nnz, err := mmSize(lr, symmetric)
	if err != nil {
		return nil, err
	}
	sizeLine := lr.Line()
	rows, cols, vals, err := mmEntries(lr, field, symmetric, m, n, nnz, sizeLine)
	if err != nil {
		return nil, err
	}
	if !rowsPlausible(m, int64(len(rows))) {
		return nil, parseErr(path, sizeLine, fmt.Sprintf("%d rows for only %d entries; refusing to allocate", m, len(rows)))
	}
	a, err := sparse.FromCOO(m, n, rows, cols, vals)
	if err != nil {
		return nil, parseErr(path, 0, err.Error()) // unreachable: indices were checked
	}
	return a, nil
}

// mmHeader reads a Matrix Market header line and returns its field
// (pattern, integer or real) and whether the matrix is symmetric.
func mmHeader(lr *textfile.Lines) (field string, symmetric bool, err error) {
	line, err := lr.Next()
	if err == io.EOF {
		return "", false, parseErr(lr.Path(), 0, "empty file, want a %%MatrixMarket header")
	}
	if err != nil {
		return "", false, err
	}
	var h [6][]byte
	if k := textfile.Fields(line, h[:]); k != 5 || !bytes.Equal(h[0], []byte("%%MatrixMarket")) {
		return "", false, lr.Errorf("malformed header %s: want \"%%%%MatrixMarket matrix coordinate <field> <symmetry>\"", textfile.Quote(line))
	}
	object, format := strings.ToLower(string(h[1])), strings.ToLower(string(h[2]))
	field, symmetry := strings.ToLower(string(h[3])), strings.ToLower(string(h[4]))
	if object != "matrix" {
		return "", false, lr.Errorf("unsupported object %q: want matrix", object)
	}
	switch format {
	case "coordinate":
	case "array":
		return "", false, lr.Errorf("dense array format is not supported: want coordinate")
	default:
		return "", false, lr.Errorf("unknown format %q: want coordinate", format)
	}
	switch field {
	case "pattern", "integer", "real":
	case "complex":
		return "", false, lr.Errorf("complex matrices are not supported: want pattern, integer or real")
	default:
		return "", false, lr.Errorf("unknown field %q: want pattern, integer or real", field)
	}
	switch symmetry {
	case "general", "symmetric":
	case "hermitian", "skew-symmetric":
		return "", false, lr.Errorf("%s matrices are not supported: want general or symmetric", symmetry)
	default:
		return "", false, lr.Errorf("unknown symmetry %q: want general or symmetric", symmetry)
	}
	return field, symmetry == "symmetric", nil
}

// mmSize reads the size line "rows cols entries", after comments and blank
// lines; lr.Line() is then its line number.
func mmSize(lr *textfile.Lines, symmetric bool) (m, n, nnz int64, err error) {
	var f [4][]byte
	for {
		line, err := lr.Next()
		if err == io.EOF {
			return 0, 0, 0, parseErr(lr.Path(), 0, "missing size line \"rows cols entries\"")
		}
		if err != nil {
			return 0, 0, 0, err
		}
		t := bytes.TrimLeft(line, " \t\v\f\r")
		if len(t) == 0 || t[0] == '%' {
			continue
		}
		if textfile.Fields(t, f[:]) != 3 {
			return 0, 0, 0, lr.Errorf("malformed size line %s: want \"rows cols entries\"", textfile.Quote(line))
		}
		var sz [3]int64
		for x := range sz {
			v, ok := textfile.ParseInt(f[x])
			if !ok || v < 0 {
				return 0, 0, 0, lr.Errorf("malformed size line %s: want three non-negative integers", textfile.Quote(line))
			}
			sz[x] = v
		}
		m, n, nnz = sz[0], sz[1], sz[2]
		if m > maxNodes || n > maxNodes {
			return 0, 0, 0, lr.Errorf("dimension %d×%d exceeds the limit of %d", m, n, int64(maxNodes))
		}
		if symmetric && m != n {
			return 0, 0, 0, lr.Errorf("symmetric matrix is %d×%d, not square", m, n)
		}
		return m, n, nnz, nil
	}
}

// mmEntries reads the nnz entries of an m×n matrix (declared on line
// sizeLine) as 0-based coordinates, each off-diagonal entry of a symmetric
// matrix twice; vals is nil for a pattern matrix.
func mmEntries(lr *textfile.Lines, field string, symmetric bool, m, n, nnz int64, sizeLine int) (rows, cols []int64, vals []float64, err error) {
	path := lr.Path()
	nf := 3 // fields an entry has
	if field == "pattern" {
		nf = 2
	}
	var f [4][]byte
	// Size buffers from the declared count, but never beyond what the
	// file can hold ("1 1\n" is 4 bytes).
	hint := min(nnz, textfile.MaxLines(path)/2)
	if symmetric {
		hint = min(2*hint, textfile.MaxLines(path))
	}
	rows = make([]int64, 0, hint)
	cols = make([]int64, 0, hint)
	if field != "pattern" {
		vals = make([]float64, 0, hint)
	}
	var found int64
	for line := range lr.All() {
		t := bytes.TrimLeft(line, " \t\v\f\r")
		if len(t) == 0 || t[0] == '%' {
			continue
		}
		if k := textfile.Fields(t, f[:]); k != nf {
			return nil, nil, nil, lr.Errorf("malformed entry %s: want %d fields for a %s matrix, have %d", textfile.Quote(line), nf, field, k)
		}
		found++
		if found > nnz {
			return nil, nil, nil, lr.Errorf("more entries than the %d declared on line %d", nnz, sizeLine)
		}
		i, ok1 := textfile.ParseInt(f[0])
		j, ok2 := textfile.ParseInt(f[1])
		if !ok1 || !ok2 {
			return nil, nil, nil, lr.Errorf("malformed entry %s: want integer indices", textfile.Quote(line))
		}
		if i < 1 || i > m || j < 1 || j > n {
			return nil, nil, nil, lr.Errorf("entry (%d,%d) outside the %d×%d matrix (indices are 1-based)", i, j, m, n)
		}
		i--
		j--
		var v float64
		switch field {
		case "integer":
			x, ok := textfile.ParseInt(f[2])
			if !ok {
				return nil, nil, nil, lr.Errorf("malformed integer value %s", textfile.Quote(f[2]))
			}
			v = float64(x)
		case "real":
			x, ok := textfile.ParseFloat64(f[2])
			if !ok {
				return nil, nil, nil, lr.Errorf("malformed value %s: want a finite number", textfile.Quote(f[2]))
			}
			v = x
		}
		rows = append(rows, i)
		cols = append(cols, j)
		if vals != nil {
			vals = append(vals, v)
		}
		if symmetric && i != j {
			rows = append(rows, j)
			cols = append(cols, i)
			if vals != nil {
				vals = append(vals, v)
			}
		}
	}
	if err := lr.Err(); err != nil {
		return nil, nil, nil, err
	}
	if found < nnz {
		return nil, nil, nil, parseErr(path, 0, fmt.Sprintf("%d entries, but line %d declares %d", found, sizeLine, nnz))
	}
	return rows, cols, vals, nil
}

// WriteMatrixMarket writes a to path in Matrix Market coordinate format:
// "pattern general" when a.Values is nil, else "real general" with values
// in the shortest form that reads back exactly. Indices are written
// 1-based, entries in storage order. A path ending in ".gz" is written
// gzip-compressed (modification time 0, no name). The file is replaced
// atomically: it is written under a temporary name in the same directory,
// synced and renamed over path.
//
// WriteMatrixMarket returns an error if a fails Validate or holds a
// non-finite value.
func WriteMatrixMarket(path string, a *sparse.CSR) error {
	if err := a.Validate(); err != nil {
		return fmt.Errorf("graph: WriteMatrixMarket: %w", err)
	}
	for k, v := range a.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("graph: WriteMatrixMarket: entry %d has value %v", k, v)
		}
	}
	return writeText(path, func(w *bufio.Writer) error {
		field := "real"
		if a.Values == nil {
			field = "pattern"
		}
		fmt.Fprintf(w, "%%%%MatrixMarket matrix coordinate %s general\n", field)
		fmt.Fprintf(w, "%d %d %d\n", a.NRows, a.NCols, a.NNZ())
		var buf []byte
		for i := int64(0); i < a.NRows; i++ {
			for k := a.Indptr[i]; k < a.Indptr[i+1]; k++ {
				buf = strconv.AppendInt(buf[:0], i+1, 10)
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, a.Indices[k]+1, 10)
				if a.Values != nil {
					buf = append(buf, ' ')
					buf = strconv.AppendFloat(buf, a.Values[k], 'g', -1, 64)
				}
				buf = append(buf, '\n')
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
