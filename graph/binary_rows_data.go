package graph

import (
	"fmt"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// This file reads the rest of a row block of a binary dataset (features,
// labels, split members) with positioned reads, for a rank of a job that
// writes a partitioned dataset without any rank holding the whole graph.

// NumFeatures returns the feature dimension, 0 without features.
func (r *BinaryRows) NumFeatures() int {
	if !r.meta.HasFeatures {
		return 0
	}
	return r.meta.NumFeatures
}

// HasLabels reports whether the file holds labels.
func (r *BinaryRows) HasLabels() bool { return r.meta.HasLabels }

// NumClasses returns the number of classes, 0 without labels.
func (r *BinaryRows) NumClasses() int {
	if !r.meta.HasLabels {
		return 0
	}
	return r.meta.NumClasses
}

// Weighted reports whether the edges have values.
func (r *BinaryRows) Weighted() bool { return r.meta.Weighted }

// Path returns the path the file was opened from.
func (r *BinaryRows) Path() string { return r.path }

// SplitSizes returns the sizes of the file's splits, by name.
func (r *BinaryRows) SplitSizes() []SplitSizes {
	out := make([]SplitSizes, len(r.meta.Splits))
	for k, s := range r.meta.Splits {
		out[k] = SplitSizes(s)
	}
	return out
}

// Labels returns the labels of rows [lo, hi), nil when the file has none.
// A label outside [0, NumClasses), other than Unlabelled, gives a
// *ParseError naming the file. It
// will panic unless 0 ≤ lo ≤ hi ≤ NumNodes.
func (r *BinaryRows) Labels(lo, hi int64) ([]int32, error) {
	r.checkRange(lo, hi)
	if !r.meta.HasLabels {
		return nil, nil
	}
	labels := make([]int32, hi-lo)
	if err := readSection(r, "labels", lo, labels); err != nil {
		return nil, err
	}
	for k, l := range labels {
		if (l < 0 && l != Unlabelled) || int(l) >= r.meta.NumClasses {
			return nil, parseErr(r.path, 0, fmt.Sprintf("section labels: vertex %d has label %d outside [0,%d) (num_classes)", lo+int64(k), l, r.meta.NumClasses))
		}
	}
	return labels, nil
}

// splitChunk is how many split members SplitMembers reads at a time.
const splitChunk = 1 << 16

// SplitMembers returns, for every split of the file, its train,
// validation and test members in [lo, hi), in file order. It reads every
// split section in chunks, holding one chunk and the members kept. A
// member outside [0, NumNodes) gives a *ParseError naming the file and
// the split. It will panic unless 0 ≤ lo ≤ hi ≤ NumNodes.
func (r *BinaryRows) SplitMembers(lo, hi int64) (map[string]Split, error) {
	r.checkRange(lo, hi)
	out := map[string]Split{}
	buf := make([]int64, splitChunk)
	for _, sp := range r.meta.Splits {
		var kept [len(splitParts)][]int64
		for k, part := range splitParts {
			name := "split/" + sp.Name + "/" + part
			count := r.meta.section(name).Count
			kept[k] = []int64{}
			for first := int64(0); first < count; first += splitChunk {
				chunk := buf[:min(splitChunk, count-first)]
				if err := readSection(r, name, first, chunk); err != nil {
					return nil, err
				}
				for _, v := range chunk {
					if v < 0 || v >= r.meta.NumNodes {
						return nil, parseErr(r.path, 0, fmt.Sprintf("section %s: vertex %d outside [0,%d)", name, v, r.meta.NumNodes))
					}
					if v >= lo && v < hi {
						kept[k] = append(kept[k], v)
					}
				}
			}
		}
		out[sp.Name] = Split{Train: kept[0], Valid: kept[1], Test: kept[2]}
	}
	return out, nil
}

// checkRange panics unless 0 ≤ lo ≤ hi ≤ NumNodes.
func (r *BinaryRows) checkRange(lo, hi int64) {
	if lo < 0 || hi < lo || hi > r.meta.NumNodes {
		panic("graph: BinaryRows: rows out of range")
	}
}

// FeatureBlock is a row block of a binary dataset's features as the file
// stores them (dense or sparse), read by BinaryRows.Features.
type FeatureBlock struct {
	src  featSource
	rows int64
}

// Features returns the feature rows [lo, hi) as stored, or nil without
// features. A corrupt sparse row pointer gives a *ParseError naming the
// file. It will panic unless 0 ≤ lo ≤ hi ≤ NumNodes.
func (r *BinaryRows) Features(lo, hi int64) (*FeatureBlock, error) {
	r.checkRange(lo, hi)
	m := r.meta
	if !m.HasFeatures {
		return nil, nil
	}
	b := &FeatureBlock{src: featSource{path: r.path, dim: m.NumFeatures}, rows: hi - lo}
	if m.FeatureFormat == "" && m.featureDType() == dtypeHalf {
		b.src.half = make([]uint16, (hi-lo)*int64(m.NumFeatures))
		if err := readSection(r, "features", lo*int64(m.NumFeatures), b.src.half); err != nil {
			return nil, err
		}
		return b, nil
	}
	if m.FeatureFormat == "" {
		b.src.dense = make([]float32, (hi-lo)*int64(m.NumFeatures))
		if err := readSection(r, "features", lo*int64(m.NumFeatures), b.src.dense); err != nil {
			return nil, err
		}
		return b, nil
	}
	s := &featSection{ptr: make([]int64, hi-lo+1)}
	if err := readSection(r, secFeatIndptr, lo, s.ptr); err != nil {
		return nil, err
	}
	base := s.ptr[0]
	for k := range s.ptr {
		if s.ptr[k] < base || (k > 0 && s.ptr[k] < s.ptr[k-1]) || s.ptr[k] > m.FeatureNNZ {
			return nil, parseErr(r.path, 0, fmt.Sprintf("section %s: corrupt row pointer at row %d", secFeatIndptr, lo+int64(k)))
		}
		s.ptr[k] -= base
	}
	nnz := s.ptr[hi-lo]
	var err error
	if m.FeatureIndex == "int32" {
		s.idx32 = make([]int32, nnz)
		err = readSection(r, secFeatIndices, base, s.idx32)
	} else {
		s.idx64 = make([]int64, nnz)
		err = readSection(r, secFeatIndices, base, s.idx64)
	}
	if err != nil {
		return nil, err
	}
	if !m.FeaturePattern {
		s.vals = make([]float32, nnz)
		if err := readSection(r, secFeatValues, base, s.vals); err != nil {
			return nil, err
		}
	}
	b.src.sp = s
	return b, nil
}

// Stats returns the nonzeros of the block as stored (a sparse block's
// stored entries) and whether all of them are 1. Summed (and ANDed) over
// the blocks of every rank, they are what Rows needs.
func (b *FeatureBlock) Stats() (nnz int64, ones bool) { return b.src.stats(b.rows) }

// Rows returns the block's rows in format (auto, dense or csr) as Load
// would give them for the whole file: auto decides by the density of the
// whole feature matrix, n rows with nnz nonzeros, and sparse rows are a
// pattern matrix when ones (every nonzero of the whole matrix is 1); half
// features are widened to float32. The result may alias the block. Corrupt columns give a *ParseError naming
// the file.
func (b *FeatureBlock) Rows(format FeatureFormat, n, nnz int64, ones bool) (*dense.Matrix, *sparse.Matrix[float32], error) {
	format, err := format.resolve()
	if err != nil {
		return nil, nil, err
	}
	src := b.src
	src.whole = &featStats{rows: n, nnz: nnz, ones: ones}
	m, _, a, err := src.rows(nil, b.rows, format, false)
	return m, a, err
}

// FeatureStats returns the nonzero features of p's rows and whether all of
// them are 1, as the manifest records them for the whole dataset (summed
// over the parts, and ANDed).
func (p *Part) FeatureStats() (nnz int64, ones bool) {
	return featureStats(&Dataset{Feat: p.Feat, Feat16: p.Feat16, FeatCSR: p.FeatCSR})
}
