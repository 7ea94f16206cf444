package graph

import (
	"fmt"
	"sort"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// Split is one train/validation/test split: ascending global vertex ids.
type Split struct {
	Train, Valid, Test []int64
}

// Dataset is a node-classification graph: topology, features, labels and
// named splits.
//
// A Dataset may hold only some rows of the whole graph (a rank's partition):
// then Rows lists their ascending global ids, and row i of Adj, Feat and
// Labels belongs to global vertex Rows[i]. Rows is nil when every vertex is
// held, in which case row i is vertex i. Column indices of Adj are always
// global ids, and NumNodes is always the size of the whole graph. Splits
// always hold global ids of the whole graph.
//
// The features are either dense (Feat) or sparse rows (FeatCSR, with
// strictly ascending columns; Values nil for a pattern matrix whose
// entries are all 1); at most one of the two is set (ReadOptions's
// FeatureFormat picks which).
type Dataset struct {
	Name     string
	NumNodes int64
	Rows     []int64       // held rows' global ids, ascending; nil = all
	Adj      *sparse.CSR   // len(Rows) (or NumNodes) × NumNodes
	Feat     *dense.Matrix // one row per held vertex; nil if absent or sparse
	// Feat16 holds dense features in half precision instead of Feat,
	// as a float16 file stores them, when read with
	// ReadOptions.KeepHalf; nil otherwise.
	Feat16     *dense.Half
	FeatCSR    *sparse.Matrix[float32] // the same rows, sparse; nil if absent or dense
	Labels     []int32                 // one per held vertex; nil if absent
	NumClasses int                     // 1 + the largest label over the whole graph
	Splits     map[string]Split
	// Symmetric records that every edge (i, j) has its reverse (j, i):
	// set by Symmetrized, and by OpenBinary for a file whose metadata
	// says so (WriteBinary records it). False means not known to be
	// symmetric; Reciprocity measures it.
	Symmetric bool
}

// NumEdges returns the number of stored (directed) edges held.
func (d *Dataset) NumEdges() int64 {
	if d.Adj == nil {
		return 0
	}
	return d.Adj.NNZ()
}

// NumFeatures returns the feature dimension, dense or sparse, 0 when there
// are no features.
func (d *Dataset) NumFeatures() int {
	switch {
	case d.Feat != nil:
		return d.Feat.Cols
	case d.Feat16 != nil:
		return d.Feat16.Cols
	case d.FeatCSR != nil:
		return int(d.FeatCSR.NCols)
	}
	return 0
}

// HasFeatures reports whether d holds node features, dense or sparse.
func (d *Dataset) HasFeatures() bool { return d.Feat != nil || d.Feat16 != nil || d.FeatCSR != nil }

// SplitNames returns the split names in sorted order. The first one is the
// default split.
func (d *Dataset) SplitNames() []string {
	names := make([]string, 0, len(d.Splits))
	for k := range d.Splits {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// DefaultSplit returns the split to use when the user names none: the first
// in sorted order (planetoid, random-20-30-seed0 and geom-gcn-0 for the
// datasets shipped in ../shared/data). ok is false when there is no split.
func (d *Dataset) DefaultSplit() (name string, s Split, ok bool) {
	names := d.SplitNames()
	if len(names) == 0 {
		return "", Split{}, false
	}
	return names[0], d.Splits[names[0]], true
}

// SplitNamed returns the split called name, or the default split (see
// DefaultSplit) when name is empty, with its name. The error reads after
// the dataset's name: "has no split …".
func (d *Dataset) SplitNamed(name string) (string, Split, error) {
	if name == "" {
		n, s, ok := d.DefaultSplit()
		if !ok {
			return "", Split{}, fmt.Errorf("has no split (a split/<name>/{train,valid,test}.csv.gz directory)")
		}
		return n, s, nil
	}
	s, ok := d.Splits[name]
	if !ok {
		return "", Split{}, fmt.Errorf("has no split %q (have %v)", name, d.SplitNames())
	}
	return name, s, nil
}

// Validate checks the dataset's internal consistency: matrix structure, row
// counts of features and labels, sparse feature rows (structure, columns
// in range and strictly ascending, at most one of Feat and FeatCSR), label
// range (Unlabelled allowed), split ids in range and, where their labels
// are held, labelled.
func (d *Dataset) Validate() error {
	held := d.NumNodes
	if d.Rows != nil {
		held = int64(len(d.Rows))
		for i, g := range d.Rows {
			if g < 0 || g >= d.NumNodes || (i > 0 && d.Rows[i-1] >= g) {
				return fmt.Errorf("graph: Rows[%d]=%d not ascending in [0,%d)", i, g, d.NumNodes)
			}
		}
	}
	if d.Adj != nil {
		if d.Adj.NRows != held || d.Adj.NCols != d.NumNodes {
			return fmt.Errorf("graph: adjacency is %d×%d, want %d×%d", d.Adj.NRows, d.Adj.NCols, held, d.NumNodes)
		}
		if err := d.Adj.Validate(); err != nil {
			return err
		}
	}
	if d.Feat != nil && int64(d.Feat.Rows) != held {
		return fmt.Errorf("graph: %d feature rows, want %d", d.Feat.Rows, held)
	}
	if d.Feat16 != nil && (d.Feat != nil || d.FeatCSR != nil || int64(d.Feat16.Rows) != held) {
		return fmt.Errorf("graph: %d half feature rows beside other features, or not %d", d.Feat16.Rows, held)
	}
	if d.FeatCSR != nil {
		if d.Feat != nil {
			return fmt.Errorf("graph: both dense and sparse features")
		}
		if err := validateFeatCSR(d.FeatCSR, held); err != nil {
			return err
		}
	}
	if err := validateLabels(d.Labels, held, d.NumClasses); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	for name, s := range d.Splits {
		for _, part := range [][]int64{s.Train, s.Valid, s.Test} {
			for _, v := range part {
				if v < 0 || v >= d.NumNodes {
					return fmt.Errorf("graph: split %s has vertex %d outside [0,%d)", name, v, d.NumNodes)
				}
				if d.Labels == nil {
					continue
				}
				if lid, ok := d.rowOf(v); ok && d.Labels[lid] == Unlabelled {
					return fmt.Errorf("graph: split %s has vertex %d, which is unlabelled", name, v)
				}
			}
		}
	}
	return nil
}

// rowOf returns the index of vertex g among d's held rows and whether it
// is held.
func (d *Dataset) rowOf(g int64) (int64, bool) {
	if d.Rows == nil {
		return g, true
	}
	return searchRow(d.Rows, g)
}

// validateLabels checks labels, if not nil: one per row of rows, each in
// [0, numClasses) or Unlabelled. Its errors have no package prefix.
func validateLabels(labels []int32, rows int64, numClasses int) error {
	if labels == nil {
		return nil
	}
	if int64(len(labels)) != rows {
		return fmt.Errorf("%d labels, want %d", len(labels), rows)
	}
	for i, l := range labels {
		if (l < 0 && l != Unlabelled) || int(l) >= numClasses {
			return fmt.Errorf("label %d of row %d outside [0,%d)", l, i, numClasses)
		}
	}
	return nil
}
