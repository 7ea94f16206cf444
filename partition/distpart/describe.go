package distpart

import (
	"fmt"
	"slices"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/partition"
	"gnnmpi/partition/dist"
	"gnnmpi/sparse"
)

// DescribeOptions are the settings of Describe.
type DescribeOptions struct {
	// Book is a partition book file whose parts place the rows on the
	// ranks (one part per rank); empty: vertex v on rank v mod p. It does
	// not apply to a partitioned dataset.
	Book string
	// Symmetrize adds the reverse of every edge before the statistics.
	Symmetrize bool
	// FeatureFormat is how to hold the features (graph.ReadOptions).
	FeatureFormat graph.FeatureFormat
}

// Description is what Describe returns: the statistics of a dataset, and
// the manifest of a partitioned dataset (nil otherwise).
type Description struct {
	Info     graph.Info
	Manifest *graph.PartManifest
}

// Describe loads the dataset at path spread over the ranks of c (a
// partitioned dataset by its parts, PartManifest.RunParts without
// replication; any other by the rows o.Book gives each rank, else vertex
// v on rank v mod p; a single rank without a book maps the whole file)
// and returns its statistics (graph.DistInfo), with the fraction of edges that
// have a reverse edge over all ranks (Info.Reciprocity), the classes no
// vertex has (Info.EmptyClasses), how many vertices have a class and how
// many do not (Info.Labelled, Info.Unlabelled: graph.Unlabelled, or no
// labels at all) and the sizes of its splits. With
// o.Symmetrize the statistics are those of the symmetrized graph.
//
// Describe is collective over c: beyond DistInfo's reductions it sends,
// under metrics.PhaseInfo, one Allreduce of the class counts and, when the rows
// are spread over several ranks and the graph is not recorded as
// symmetric, the reverse of every held edge (two int64 each) to the owner
// of its row: to symmetrize with o.Symmetrize (DistSymmetrized), else to
// count the reciprocated edges (DistReciprocity).
func Describe(c collective.Comm, path string, o DescribeOptions) (Description, error) {
	t0 := time.Now()
	var (
		d     *graph.Dataset
		owner func(int64) int
		m     *graph.PartManifest
		err   error
	)
	if graph.IsPartDir(path) {
		if o.Book != "" {
			return Description{}, fmt.Errorf("info: %s is a partitioned dataset, whose parts place the rows: --partition does not apply", path)
		}
		d, owner, m, err = loadHeldParts(c, path, o.FeatureFormat)
	} else {
		d, owner, err = loadHeld(c, path, o.Book, o.FeatureFormat)
	}
	if err != nil {
		return Description{}, err
	}
	load := time.Since(t0).Seconds()
	if err := d.Validate(); err != nil {
		return Description{}, fmt.Errorf("info: %s: %w", path, err)
	}
	defer collective.SetPhase(c, metrics.PhaseInfo)()
	symmetrized := o.Symmetrize && !d.Symmetric
	if o.Symmetrize {
		if d, err = DistSymmetrized(c, d, owner); err != nil {
			return Description{}, err
		}
	}
	in, err := graph.DistInfo(c, d, path, load)
	if err != nil {
		return Description{}, err
	}
	in.Symmetrized = symmetrized
	if in.Reciprocity, err = DistReciprocity(c, d, owner); err != nil {
		return Description{}, err
	}
	counts := graph.ClassCounts(d.Labels, d.NumClasses)
	if err := collective.AllreduceSlice(c, counts, collective.Sum); err != nil {
		return Description{}, err
	}
	in.EmptyClasses = graph.EmptyClasses(counts)
	for _, k := range counts {
		in.Labelled += k
	}
	in.Unlabelled = in.Nodes - in.Labelled
	for name, s := range d.Splits {
		in.Splits[name] = []int{len(s.Train), len(s.Valid), len(s.Test)}
	}
	if m != nil { // a rank's splits hold its parts' members only
		for _, s := range m.Splits {
			in.Splits[s.Name] = []int{int(s.Train), int(s.Valid), int(s.Test)}
		}
	}
	return Description{Info: in, Manifest: m}, nil
}

// loadHeld loads this rank's rows of the dataset at path: those the book
// at bookPath gives it, else vertex v on rank v mod p (all rows on a
// single rank). owner is the rank of each row, nil when every rank holds
// all.
func loadHeld(c collective.Comm, path, bookPath string, format graph.FeatureFormat) (*graph.Dataset, func(int64) int, error) {
	owner, books, err := heldOwner(c.Size(), bookPath)
	if err != nil {
		return nil, nil, err
	}
	var keep func(int64) bool
	if owner != nil {
		keep = func(g int64) bool { return owner(g) == c.Rank() }
	}
	d, err := graph.Load(path, graph.ReadOptions{Keep: keep, FeatureFormat: format})
	if err != nil {
		return nil, nil, err
	}
	if books >= 0 && books != d.NumNodes {
		// Every rank reads the same book and file: all fail here alike.
		return nil, nil, fmt.Errorf("info: %s has %d vertices, but the book %s has %d", path, d.NumNodes, bookPath, books)
	}
	return d, owner, nil
}

// heldOwner returns the rank of p that loads each global row: its part
// in the book at bookPath, else vertex v on rank v mod p; nil (every rank
// loads all rows) on a single rank without a book, so that the binary
// format is mapped without a copy. books is the number of vertices of the
// book, -1 without one.
func heldOwner(p int, bookPath string) (owner func(int64) int, books int64, err error) {
	books = -1
	if p > 1 {
		owner = func(g int64) int { return int(g % int64(p)) }
	}
	if bookPath != "" {
		b, err := partition.Read(bookPath)
		if err != nil {
			return nil, 0, err
		}
		if b.Parts != p {
			return nil, 0, fmt.Errorf("info: %s has %d parts for %d ranks", bookPath, b.Parts, p)
		}
		owner = func(g int64) int {
			if g >= b.NumNodes() {
				return -1 // a vertex the book does not know: loaded by no rank
			}
			return b.Owner(g)
		}
		books = b.NumNodes()
	}
	return owner, books, nil
}

// loadHeldParts loads this rank's parts of the partitioned dataset in dir
// (PartManifest.RunParts with no replication): the Dataset holds their
// rows, in the relabelled ids. owner is the rank of each row, nil on a
// single rank.
func loadHeldParts(c collective.Comm, dir string, format graph.FeatureFormat) (*graph.Dataset, func(int64) int, *graph.PartManifest, error) {
	m, err := graph.ReadPartManifest(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	p := c.Size()
	first, last, err := m.RunParts(c.Rank(), p, 1)
	if err != nil {
		return nil, nil, nil, err
	}
	part, err := graph.LoadParts(dir, m, first, last, graph.PartReadOptions{FeatureFormat: format})
	if err != nil {
		return nil, nil, nil, err
	}
	var owner func(int64) int
	if p > 1 {
		per := m.Parts / p
		owner = func(g int64) int {
			q, found := slices.BinarySearch(m.Offsets, g)
			if !found {
				q-- // g lies in part q−1, whose first vertex is below it
			}
			for q+1 < m.Parts && m.Offsets[q+1] == g { // skip empty parts
				q++
			}
			return q / per
		}
	}
	return part.Dataset(), owner, m, nil
}

// DistReciprocity returns the fraction of the edges of a graph whose
// reverse edge is in the graph (1 without edges or when d is recorded as
// symmetric). d holds every row when d.Rows is nil; otherwise the ranks of
// c hold the graph by rows, d those of this rank and owner(g) the rank
// holding row g, and the fraction is that of the whole graph
// (partition/dist.Reciprocity).
//
// DistReciprocity is collective over c when the rows are spread: it sends
// the reverse of every held edge (two int64 each) to the owner of its row.
func DistReciprocity(c collective.Comm, d *graph.Dataset, owner func(int64) int) (float64, error) {
	if d.Symmetric || d.Rows == nil {
		return d.ReciprocityFraction(), nil
	}
	found, edges, err := dist.Reciprocity(c, dist.Rows{Adj: d.Adj, IDs: d.Rows}, owner)
	if err != nil || edges == 0 {
		return 1, err
	}
	return float64(found) / float64(edges), nil
}

// DistSymmetrized returns d with the reverse of every edge added,
// deduplicated and sorted, and Symmetric set: d itself when already
// symmetric, d.Symmetrized() when d holds every row (d.Rows nil).
// Otherwise the ranks of c hold the graph by rows, d those of this rank
// and owner(g) the rank holding row g, and each rank's rows gain the
// reverses of the edges held anywhere (as graph.Symmetrize, but without edge
// values). d is not modified.
//
// DistSymmetrized is collective over c when the rows are spread and d is
// not symmetric: it sends the reverse of every held edge (two int64 each)
// to the owner of its row (partition/dist.ReverseEdges).
func DistSymmetrized(c collective.Comm, d *graph.Dataset, owner func(int64) int) (*graph.Dataset, error) {
	switch {
	case d.Rows == nil:
		return d.Symmetrized(), nil
	case d.Symmetric: // the file's flag: every rank takes this branch alike
		return d, nil
	}
	held := dist.Rows{Adj: d.Adj, IDs: d.Rows}
	recv, err := dist.ReverseEdges(c, held, owner)
	if err != nil {
		return nil, err
	}
	nnz := d.Adj.NNZ()
	for _, pairs := range recv {
		nnz += int64(len(pairs) / 2)
	}
	rows, cols := make([]int64, 0, nnz), make([]int64, 0, nnz)
	for i := int64(0); i < d.Adj.NRows; i++ {
		for _, j := range d.Adj.Row(i) {
			rows, cols = append(rows, i), append(cols, j)
		}
	}
	for _, pairs := range recv {
		for k := 0; k < len(pairs); k += 2 {
			rows, cols = append(rows, held.Index(pairs[k])), append(cols, pairs[k+1])
		}
	}
	a, err := sparse.FromCOO(d.Adj.NRows, d.Adj.NCols, rows, cols, nil)
	if err != nil {
		return nil, err
	}
	s := *d
	s.Adj, s.Symmetric = graph.Dedupe(a), true
	return &s, nil
}
