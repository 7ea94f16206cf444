package graph

import (
	"fmt"
	"math"

	"gnnmpi/dense"
	"gnnmpi/internal/byteview"
	"gnnmpi/internal/f16"
	"gnnmpi/sparse"
)

// The sparse feature sections of binary format version 2 (see binMeta).
const (
	secFeatIndptr  = "feat/indptr"
	secFeatIndices = "feat/indices"
	secFeatValues  = "feat/values"
)

// addSparseFeatures appends the sections of the sparse feature rows a:
// the row pointer, the column indices as int32 when the columns fit (a
// copy) or int64, and the values unless a is a pattern matrix.
func (c *binContent) addSparseFeatures(a *sparse.Matrix[float32]) {
	m := &c.meta
	m.HasFeatures, m.NumFeatures = true, int(a.NCols)
	m.FeatureFormat, m.FeatureNNZ, m.FeaturePattern = string(FeatureCSR), a.NNZ(), a.Values == nil
	c.add(secFeatIndptr, "int64", int64(len(a.Indptr)), byteview.Of(a.Indptr))
	if a.NCols <= math.MaxInt32 {
		m.FeatureIndex = "int32"
		idx := make([]int32, len(a.Indices))
		for k, j := range a.Indices {
			idx[k] = int32(j)
		}
		c.add(secFeatIndices, "int32", int64(len(idx)), byteview.Of(idx))
	} else {
		m.FeatureIndex = "int64"
		c.add(secFeatIndices, "int64", int64(len(a.Indices)), byteview.Of(a.Indices))
	}
	if a.Values != nil {
		c.add(secFeatValues, "float32", int64(len(a.Values)), byteview.Of(a.Values))
	}
}

// checkSparseFeatures adds the sparse feature sections that the metadata
// m of the file at path declares to want, after checking the fields that
// describe them.
func (m *binMeta) checkSparseFeatures(path string, want map[string]struct {
	dtype string
	count int64
}) error {
	if m.FeatureFormat == "" {
		if m.FeatureNNZ != 0 || m.FeatureIndex != "" || m.FeaturePattern {
			return parseErr(path, 0, "corrupt metadata: sparse feature fields without sparse features")
		}
		return nil
	}
	switch {
	case m.FeatureFormat != string(FeatureCSR) || !m.HasFeatures:
		return parseErr(path, 0, fmt.Sprintf("corrupt metadata: feature format %q", m.FeatureFormat))
	case m.FeatureIndex != "int32" && m.FeatureIndex != "int64":
		return parseErr(path, 0, fmt.Sprintf("corrupt metadata: feature index dtype %q", m.FeatureIndex))
	case m.FeatureNNZ < 0 || (m.NumFeatures > 0 && m.FeatureNNZ/int64(m.NumFeatures) > m.rows()) ||
		(m.NumFeatures == 0 && m.FeatureNNZ > 0):
		return parseErr(path, 0, fmt.Sprintf("corrupt metadata: %d sparse features in %d×%d", m.FeatureNNZ, m.rows(), m.NumFeatures))
	}
	type sec = struct {
		dtype string
		count int64
	}
	want[secFeatIndptr] = sec{"int64", m.rows() + 1}
	want[secFeatIndices] = sec{m.FeatureIndex, m.FeatureNNZ}
	if !m.FeaturePattern {
		want[secFeatValues] = sec{"float32", m.FeatureNNZ}
	}
	return nil
}

// featSection is the sparse feature rows of a binary file, aliasing its
// mapping: indices in idx32 or idx64, values nil for a pattern.
type featSection struct {
	ptr   []int64
	idx32 []int32
	idx64 []int64
	vals  []float32
}

// sparseFeatures returns the sparse feature sections of f, verified unless
// f.noVerify, after checking that the row pointer spans the entries.
func (f *binFile) sparseFeatures() (*featSection, error) {
	s := &featSection{}
	var err error
	if s.ptr, err = binView[int64](f, secFeatIndptr); err != nil {
		return nil, err
	}
	if n := f.meta.rows(); s.ptr[0] != 0 || s.ptr[n] != f.meta.FeatureNNZ {
		return nil, parseErr(f.path, 0, "section "+secFeatIndptr+": corrupt row pointer")
	}
	if f.meta.FeatureIndex == "int32" {
		s.idx32, err = binView[int32](f, secFeatIndices)
	} else {
		s.idx64, err = binView[int64](f, secFeatIndices)
	}
	if err != nil {
		return nil, err
	}
	if !f.meta.FeaturePattern {
		if s.vals, err = binView[float32](f, secFeatValues); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// featSource is the features of a binary file, a dense section or a
// sparse one, from which featSource.rows takes the held rows.
type featSource struct {
	path  string
	dim   int
	dense []float32    // n×dim, or nil
	half  []uint16     // or n×dim half words
	sp    *featSection // or the sparse rows
	// whole, when set, describes the whole feature matrix of which these
	// rows are a part (a partitioned dataset's manifest): rows uses it
	// instead of stats, so that every part decides alike.
	whole *featStats
}

// featStats describes a whole feature matrix: its rows, its nonzeros and
// whether every nonzero is 1.
type featStats struct {
	rows, nnz int64
	ones      bool
}

// stats returns the nonzeros of the whole feature matrix of n rows and
// whether all of them are 1. A sparse section's stored entries count as
// nonzeros.
func (s *featSource) stats(n int64) (nnz int64, ones bool) {
	if s.sp != nil {
		if s.sp.vals == nil {
			return s.sp.ptr[n], true
		}
		ones = true
		for _, v := range s.sp.vals {
			ones = ones && v == 1
		}
		return s.sp.ptr[n], ones
	}
	if s.half != nil {
		return halfStats(s.half)
	}
	ones = true
	for _, v := range s.dense {
		if v != 0 {
			nnz++
			ones = ones && v == 1
		}
	}
	return nnz, ones
}

// halfOne is the half-precision word of 1.
const halfOne = 0x3c00

// halfStats returns the nonzeros of the half words h (±0 are zero) and
// whether all of them are 1: what the float32 loop counts of the same
// values widened, as half precision holds 0 and 1 exactly.
func halfStats(h []uint16) (nnz int64, ones bool) {
	ones = true
	for _, w := range h {
		if w&0x7fff != 0 {
			nnz++
			ones = ones && w == halfOne
		}
	}
	return nnz, ones
}

// widen returns the half rows h as float32.
func widen(h []uint16) []float32 {
	out := make([]float32, len(h))
	f16.Decode(out, h)
	return out
}

// rows returns the feature rows rows (nil: all n) in format (auto, dense
// or csr), dense or sparse; dense rows of a half section stay half (the
// *dense.Half) when keepHalf, else are widened to float32. Auto decides by the density of the whole
// file (SparseDensity); sparse rows are a pattern matrix when every
// nonzero of the file is 1. Sparse rows of a sparse section are aliased
// when all rows are taken and the indices are stored as int64; every
// other result is a copy, checked for corrupt row pointers and columns.
func (s *featSource) rows(rows []int64, n int64, format FeatureFormat, keepHalf bool) (*dense.Matrix, *dense.Half, *sparse.Matrix[float32], error) {
	whole := featStats{rows: n, ones: true}
	switch {
	case s.whole != nil:
		whole = *s.whole
	case format != FeatureDense || s.sp != nil:
		whole.nnz, whole.ones = s.stats(n)
	}
	ones := whole.ones
	if format == FeatureAuto {
		format = FeatureDense
		if sparseByDensity(whole.nnz, whole.rows, s.dim) {
			format = FeatureCSR
		}
	}
	held := heldRows(n, rows)
	gid := func(k int64) int64 {
		if rows == nil {
			return k
		}
		return rows[k]
	}
	if s.half != nil && format == FeatureDense {
		dim := s.dim
		if keepHalf {
			if rows == nil {
				return nil, &dense.Half{Rows: int(n), Cols: dim, Data: s.half}, nil, nil
			}
			h := dense.NewHalf(int(held), dim)
			for k := range held {
				g := int(gid(k))
				copy(h.Row(int(k)), s.half[g*dim:(g+1)*dim])
			}
			return nil, h, nil, nil
		}
		m := dense.New(int(held), dim)
		for k := range held {
			g := int(gid(k))
			f16.Decode(m.Row(int(k)), s.half[g*dim:(g+1)*dim])
		}
		return m, nil, nil, nil
	}
	if s.half != nil { // sparse rows of half features: from their float32 values
		w := *s
		w.dense, w.half = widen(s.half), nil
		s = &w
	}
	if format == FeatureDense {
		if s.sp == nil {
			if rows == nil {
				return &dense.Matrix{Rows: int(n), Cols: s.dim, Data: s.dense}, nil, nil, nil
			}
			m := dense.New(int(held), s.dim)
			for k := range held {
				g := int(gid(k))
				copy(m.Row(int(k)), s.dense[g*s.dim:(g+1)*s.dim])
			}
			return m, nil, nil, nil
		}
		m := dense.New(int(held), s.dim)
		for k := range held {
			lo, hi, err := s.span(gid(k))
			if err != nil {
				return nil, nil, nil, err
			}
			row := m.Row(int(k))
			for e := lo; e < hi; e++ {
				j, err := s.col(e)
				if err != nil {
					return nil, nil, nil, err
				}
				row[j] = s.val(e)
			}
		}
		return m, nil, nil, nil
	}
	if s.sp != nil && rows == nil && s.sp.idx64 != nil {
		a := &sparse.Matrix[float32]{NRows: n, NCols: int64(s.dim), Indptr: s.sp.ptr, Indices: s.sp.idx64, Values: s.sp.vals}
		return nil, nil, a, nil
	}
	a := &sparse.Matrix[float32]{NRows: held, NCols: int64(s.dim), Indptr: make([]int64, held+1)}
	for k := range held {
		cnt, err := s.count(gid(k))
		if err != nil {
			return nil, nil, nil, err
		}
		a.Indptr[k+1] = a.Indptr[k] + cnt
	}
	a.Indices = make([]int64, a.Indptr[held])
	if !ones {
		a.Values = make([]float32, a.Indptr[held])
	}
	for k := range held {
		if err := s.fill(a, k, gid(k)); err != nil {
			return nil, nil, nil, err
		}
	}
	return nil, nil, a, nil
}

// span returns the entries of row g of the sparse section, checking them.
func (s *featSource) span(g int64) (lo, hi int64, err error) {
	lo, hi = s.sp.ptr[g], s.sp.ptr[g+1]
	if lo < 0 || hi < lo || hi > s.sp.ptr[len(s.sp.ptr)-1] {
		return 0, 0, parseErr(s.path, 0, fmt.Sprintf("section %s: corrupt row pointer at row %d", secFeatIndptr, g))
	}
	return lo, hi, nil
}

// col returns the column of entry e of the sparse section, checking it.
func (s *featSource) col(e int64) (int, error) {
	j := int64(0)
	if s.sp.idx32 != nil {
		j = int64(s.sp.idx32[e])
	} else {
		j = s.sp.idx64[e]
	}
	if j < 0 || j >= int64(s.dim) {
		return 0, parseErr(s.path, 0, fmt.Sprintf("section %s: column %d of entry %d outside [0,%d)", secFeatIndices, j, e, s.dim))
	}
	return int(j), nil
}

// val returns the value of entry e of the sparse section (1 for a
// pattern).
func (s *featSource) val(e int64) float32 {
	if s.sp.vals == nil {
		return 1
	}
	return s.sp.vals[e]
}

// count returns the nonzeros of row g.
func (s *featSource) count(g int64) (int64, error) {
	if s.sp != nil {
		lo, hi, err := s.span(g)
		return hi - lo, err
	}
	var c int64
	for _, v := range s.dense[int(g)*s.dim : int(g+1)*s.dim] {
		if v != 0 {
			c++
		}
	}
	return c, nil
}

// fill copies the nonzeros of row g into row k of a, whose row pointer is
// set.
func (s *featSource) fill(a *sparse.Matrix[float32], k, g int64) error {
	at := a.Indptr[k]
	if s.sp == nil {
		for j, v := range s.dense[int(g)*s.dim : int(g+1)*s.dim] {
			if v != 0 {
				a.Indices[at] = int64(j)
				if a.Values != nil {
					a.Values[at] = v
				}
				at++
			}
		}
		return nil
	}
	lo, hi, err := s.span(g)
	if err != nil {
		return err
	}
	for e := lo; e < hi; e++ {
		j, err := s.col(e)
		if err != nil {
			return err
		}
		a.Indices[at] = int64(j)
		if a.Values != nil {
			a.Values[at] = s.val(e)
		}
		at++
	}
	return nil
}
