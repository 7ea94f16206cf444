package distpart

import (
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/partition/dist"
	"gnnmpi/sparse"
)

// Source is a dataset read in row blocks, what Partition and WriteParts
// read: *graph.BinaryRows (a binary .gnn file) or *OGB (OGB's binary
// layout, whose edges the ranks exchange when it is opened). Rows,
// Labels, SplitMembers and Features are called with this rank's block,
// dist.BlockRange(NumNodes(), p, rank).
type Source interface {
	// Name returns the dataset's name and Path where it was read from.
	Name() string
	Path() string
	// NumNodes returns the number of vertices n.
	NumNodes() int64
	// Symmetric reports whether every edge's reverse is stored too, and
	// Weighted whether the edges have values.
	Symmetric() bool
	Weighted() bool
	// NumFeatures returns the feature dimension, 0 without features;
	// HasLabels whether there are labels, and NumClasses how many
	// classes (0 without labels).
	NumFeatures() int
	HasLabels() bool
	NumClasses() int
	// SplitSizes returns the sizes of the whole splits.
	SplitSizes() []graph.SplitSizes
	// Rows returns rows [lo, hi) of the adjacency with global column ids.
	Rows(lo, hi int64) (*sparse.CSR, error)
	// Labels returns the labels of rows [lo, hi), nil without labels.
	Labels(lo, hi int64) ([]int32, error)
	// SplitMembers returns every split's members in [lo, hi), ascending.
	SplitMembers(lo, hi int64) (map[string]graph.Split, error)
	// Features returns the feature rows [lo, hi), nil without features.
	Features(lo, hi int64) (*graph.FeatureBlock, error)
}

var (
	_ Source = (*graph.BinaryRows)(nil)
	_ Source = (*OGB)(nil)
)

// OGB is a dataset in OGB's binary layout (graph.OpenOGBRows) spread over
// the ranks of a communicator in row blocks, as a Source: OpenOGB reads
// this rank's slice of the edges and sends each edge to the rank owning
// its source's row, and reads the labels and split members of this
// rank's rows; Features reads this rank's feature rows when asked. No
// rank holds the whole edge array or feature matrix.
type OGB struct {
	r          *graph.OGBRows
	lo, hi     int64
	adj        *sparse.CSR
	symmetric  bool
	labels     []int32
	numClasses int
	splits     map[string]graph.Split
	sizes      []graph.SplitSizes
}

// OpenOGB opens the OGB binary layout in dir on every rank of c and
// builds this rank's block of rows, rows dist.BlockRange(n, p, rank): rank
// r reads edges dist.BlockRange(E, p, r) of edge_index, adds their
// reverses when symmetrize, orders them by the owner of their source's row
// in place and sends each to that owner (AlltoallCounts, then one
// Alltoallv of two int64s an edge); each rank's
// rows are then sorted by column and hold no repeated column (as
// graph.Dedupe, or graph.Symmetrize when symmetrize). It reads the
// labels and split members of this rank's rows, and finds the class
// count with one scalar Allreduce.
//
// A rank allocates its E/p edges (twice with symmetrize) to send, 16
// bytes each, those it receives, its rows' CSR (8 bytes an edge, 16 a
// row) and labels, and chunks of at most 512 KiB of the edge array:
// O(E/p + n/p) bytes when the edges are spread evenly over the rows'
// blocks. An error on any rank fails every rank. OpenOGB is
// collective over c. The caller closes it.
func OpenOGB(c collective.Comm, dir string, symmetrize bool) (*OGB, error) {
	r, err := graph.OpenOGBRows(dir)
	if err = collective.Agree(c, err); err != nil {
		if r != nil {
			r.Close()
		}
		return nil, err
	}
	o := &OGB{r: r, symmetric: symmetrize}
	if err := o.load(c, symmetrize); err != nil {
		r.Close()
		return nil, err
	}
	return o, nil
}

// load builds o's block of rows, labels and splits.
func (o *OGB) load(c collective.Comm, symmetrize bool) error {
	p, rank := c.Size(), c.Rank()
	n, m := o.r.NumNodes(), o.r.NumEdges()
	o.lo, o.hi = dist.BlockRange(n, p, rank)
	bounds := make([]int64, p+1)
	for q := range p {
		bounds[q], bounds[q+1] = dist.BlockRange(n, p, q)
	}
	elo, ehi := dist.BlockRange(m, p, rank)
	// This rank's edges as (row, column) pairs, with their reverses when
	// symmetrize, in one buffer of the exact size.
	per := int64(2)
	if symmetrize {
		per = 4
	}
	pairs := make([]int64, 0, per*(ehi-elo))
	err := o.r.EdgeChunks(elo, ehi, func(src, dst []int64) error {
		for i, s := range src {
			pairs = append(pairs, s, dst[i])
			if symmetrize {
				pairs = append(pairs, dst[i], s)
			}
		}
		return nil
	})
	if err = collective.Agree(c, err); err != nil {
		return err
	}
	counts := sortByOwner(pairs, bounds)
	recvCounts, err := collective.AlltoallCounts(c, counts)
	if err != nil {
		return err
	}
	flat, err := collective.AlltoallvFlat(c, pairs, counts, recvCounts)
	if err != nil {
		return err
	}
	pairs = nil
	recv := [][]int64{flat}
	o.adj = dist.RowsFromPairs(o.lo, o.hi, n, nil, recv, false)
	recv = nil

	o.labels, err = o.r.Labels(o.lo, o.hi)
	if err == nil {
		o.splits, o.sizes, err = o.r.SplitMembers(o.lo, o.hi, o.labels)
	}
	if err = collective.Agree(c, err); err != nil {
		return err
	}
	maxLabel := int64(-1)
	for _, l := range o.labels {
		maxLabel = max(maxLabel, int64(l))
	}
	if maxLabel, err = collective.AllreduceScalar(c, maxLabel, collective.Max); err != nil {
		return err
	}
	if o.r.HasLabels() {
		o.numClasses = int(maxLabel + 1)
	}
	return nil
}

// sortByOwner orders the (row, column) pairs in place by the block of
// bounds that holds their row (collective.BlockOf), in place, and returns
// the number of int64s (two a pair) of each block.
func sortByOwner(pairs, bounds []int64) []int {
	p := len(bounds) - 1
	counts := make([]int, p)
	for k := 0; k < len(pairs); k += 2 {
		counts[collective.BlockOf(bounds, pairs[k])] += 2
	}
	next, end := make([]int, p), make([]int, p)
	for q, at := 0, 0; q < p; q++ {
		next[q], end[q] = at, at+counts[q]
		at += counts[q]
	}
	// Cycle each misplaced pair to the next free slot of its block.
	for q := range p {
		for next[q] < end[q] {
			k := next[q]
			d := collective.BlockOf(bounds, pairs[k])
			if d == q {
				next[q] += 2
				continue
			}
			t := next[d]
			pairs[k], pairs[t] = pairs[t], pairs[k]
			pairs[k+1], pairs[t+1] = pairs[t+1], pairs[k+1]
			next[d] += 2
		}
	}
	return counts
}

// Close closes the archive.
func (o *OGB) Close() error { return o.r.Close() }

// Name returns the dataset's name, the base name of its directory.
func (o *OGB) Name() string { return o.r.Name() }

// Path returns the dataset's directory.
func (o *OGB) Path() string { return o.r.Path() }

// NumNodes returns the number of vertices n.
func (o *OGB) NumNodes() int64 { return o.r.NumNodes() }

// Symmetric reports whether the rows were symmetrized when opened. An
// OGB dataset does not record symmetry; WriteParts checks it of rows
// that were not (dist.Reciprocal).
func (o *OGB) Symmetric() bool { return o.symmetric }

// Weighted returns false: the OGB layout has no edge weights.
func (o *OGB) Weighted() bool { return false }

// NumFeatures returns the feature dimension, 0 without node_feat.
func (o *OGB) NumFeatures() int { return o.r.NumFeatures() }

// HasLabels reports whether the dataset has labels.
func (o *OGB) HasLabels() bool { return o.r.HasLabels() }

// NumClasses returns 1 + the largest label of the whole dataset, 0
// without labels.
func (o *OGB) NumClasses() int { return o.numClasses }

// SplitSizes returns the sizes of the whole splits, sorted by name.
func (o *OGB) SplitSizes() []graph.SplitSizes { return o.sizes }

// Rows returns this rank's block of rows, built by OpenOGB; the caller
// must not modify it. Any other range is an error.
func (o *OGB) Rows(lo, hi int64) (*sparse.CSR, error) {
	if err := o.mine(lo, hi); err != nil {
		return nil, err
	}
	return o.adj, nil
}

// Labels returns the labels of this rank's rows, nil without labels. Any
// other range is an error.
func (o *OGB) Labels(lo, hi int64) ([]int32, error) {
	if err := o.mine(lo, hi); err != nil {
		return nil, err
	}
	return o.labels, nil
}

// SplitMembers returns every split's members among this rank's rows. Any
// other range is an error.
func (o *OGB) SplitMembers(lo, hi int64) (map[string]graph.Split, error) {
	if err := o.mine(lo, hi); err != nil {
		return nil, err
	}
	return o.splits, nil
}

// Features reads the feature rows [lo, hi) (graph.OGBRows.Features).
func (o *OGB) Features(lo, hi int64) (*graph.FeatureBlock, error) {
	return o.r.Features(lo, hi)
}

// mine returns an error unless [lo, hi) is this rank's block.
func (o *OGB) mine(lo, hi int64) error {
	if lo != o.lo || hi != o.hi {
		return fmt.Errorf("partition: %s: rows [%d,%d) asked of a rank holding [%d,%d)", o.Path(), lo, hi, o.lo, o.hi)
	}
	return nil
}
