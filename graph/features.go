package graph

import (
	"fmt"
	"slices"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// FeatureFormat says how a reader holds the node features (ReadOptions):
// as a dense matrix (Dataset.Feat) or as sparse rows (Dataset.FeatCSR).
// Its value is the name flags and metadata use.
type FeatureFormat string

// Feature formats.
const (
	// FeatureAuto picks FeatureCSR when fewer than SparseDensity of the
	// feature matrix's entries are nonzero, over the whole file (so that
	// every rank loading a part of it decides alike), else FeatureDense.
	// The empty FeatureFormat means FeatureAuto.
	FeatureAuto FeatureFormat = "auto"
	// FeatureDense holds the features as a dense row-major matrix.
	FeatureDense FeatureFormat = "dense"
	// FeatureCSR holds the features as compressed sparse rows: column
	// indices ascending within a row, no explicit zeros, and no values
	// (a pattern matrix, every stored entry 1) when every nonzero of the
	// file is 1.
	FeatureCSR FeatureFormat = "csr"
)

// FeatureFormats lists the accepted feature formats, the default first.
var FeatureFormats = []FeatureFormat{FeatureAuto, FeatureDense, FeatureCSR}

// SparseDensity is the fraction of nonzero feature entries below which
// FeatureAuto keeps the features sparse. At 10% the sparse rows (a 4-byte
// column and a 4-byte value per nonzero) take at most a fifth of the dense
// matrix's memory and bytes on the wire; the bag-of-words datasets of
// ../shared/data are at 0.4–1.3%, dense ones (Amazon's 35%, generated
// Gaussian features) stay dense.
const SparseDensity = 0.1

// ParseFeatureFormat returns the FeatureFormat named s ("" is auto).
func ParseFeatureFormat(s string) (FeatureFormat, error) {
	if s == "" {
		return FeatureAuto, nil
	}
	if f := FeatureFormat(s); slices.Contains(FeatureFormats, f) {
		return f, nil
	}
	return "", fmt.Errorf("graph: unknown feature format %q (want one of %v)", s, FeatureFormats)
}

// resolve returns f with "" replaced by FeatureAuto, or an error for an
// unknown format.
func (f FeatureFormat) resolve() (FeatureFormat, error) {
	return ParseFeatureFormat(string(f))
}

// Decide returns the format f gives a feature matrix of rows×cols
// entries with nnz nonzeros, as the readers decide it: FeatureCSR or
// FeatureDense for FeatureAuto (or ""), by SparseDensity, else f; an
// unknown format is an error.
func (f FeatureFormat) Decide(nnz, rows int64, cols int) (FeatureFormat, error) {
	f, err := f.resolve()
	if err != nil || f != FeatureAuto {
		return f, err
	}
	if sparseByDensity(nnz, rows, cols) {
		return FeatureCSR, nil
	}
	return FeatureDense, nil
}

// sparseByDensity reports whether FeatureAuto keeps a feature matrix with
// nnz nonzeros out of rows×cols entries sparse.
func sparseByDensity(nnz, rows int64, cols int) bool {
	entries := float64(rows) * float64(cols)
	return entries > 0 && float64(nnz) < SparseDensity*entries
}

// DenseRows returns the feature rows a as a new dense matrix (every entry
// of a pattern matrix 1). It will panic if a has more than 2³¹ columns.
func DenseRows(a *sparse.Matrix[float32]) *dense.Matrix {
	m := dense.New(int(a.NRows), int(a.NCols))
	for i := range int(a.NRows) {
		row := m.Row(i)
		for k := a.Indptr[i]; k < a.Indptr[i+1]; k++ {
			row[a.Indices[k]] = 1
			if a.Values != nil {
				row[a.Indices[k]] = a.Values[k]
			}
		}
	}
	return m
}

// SparseRows returns the nonzeros of m as sparse rows with ascending
// columns: a pattern matrix (Values nil) when every nonzero is 1, else
// with values.
func SparseRows(m *dense.Matrix) *sparse.Matrix[float32] {
	a := sparse.FromDense(m.Rows, m.Cols, m.Data)
	for _, v := range a.Values {
		if v != 1 {
			return a
		}
	}
	a.Values = nil
	return a
}

// FeatureNNZ returns the number of nonzero features of the held rows: the
// stored entries of sparse rows, the nonzeros of dense ones.
func (d *Dataset) FeatureNNZ() int64 {
	switch {
	case d.FeatCSR != nil:
		return d.FeatCSR.NNZ()
	case d.Feat != nil:
		var nz int64
		for _, v := range d.Feat.Data[:d.Feat.Rows*d.Feat.Cols] {
			if v != 0 {
				nz++
			}
		}
		return nz
	case d.Feat16 != nil:
		var nz int64
		for _, h := range d.Feat16.Data[:d.Feat16.Rows*d.Feat16.Cols] {
			if h&0x7fff != 0 { // ±0 are the zeros
				nz++
			}
		}
		return nz
	}
	return 0
}

// Density returns the fraction of the feature entries of the held rows
// that are nonzero, 0 without features or entries.
func (d *Dataset) Density() float64 {
	rows := int64(0)
	switch {
	case d.FeatCSR != nil:
		rows = d.FeatCSR.NRows
	case d.Feat != nil:
		rows = int64(d.Feat.Rows)
	case d.Feat16 != nil:
		rows = int64(d.Feat16.Rows)
	}
	if e := float64(rows) * float64(d.NumFeatures()); e > 0 {
		return float64(d.FeatureNNZ()) / e
	}
	return 0
}

// FeatureFormat returns FeatureCSR or FeatureDense for the features d
// holds, "" without features.
func (d *Dataset) FeatureFormat() FeatureFormat {
	switch {
	case d.FeatCSR != nil:
		return FeatureCSR
	case d.Feat != nil, d.Feat16 != nil:
		return FeatureDense
	}
	return ""
}

// validateFeatCSR checks sparse feature rows: the CSR structure, held
// rows, and strictly ascending columns within each row.
func validateFeatCSR(a *sparse.Matrix[float32], held int64) error {
	if a.NRows != held {
		return fmt.Errorf("graph: %d sparse feature rows, want %d", a.NRows, held)
	}
	if err := a.Validate(); err != nil {
		return fmt.Errorf("graph: sparse features: %w", err)
	}
	for i := range a.NRows {
		row := a.Row(i)
		for k := 1; k < len(row); k++ {
			if row[k] <= row[k-1] {
				return fmt.Errorf("graph: sparse feature row %d: column %d after %d, want strictly ascending", i, row[k], row[k-1])
			}
		}
	}
	return nil
}
