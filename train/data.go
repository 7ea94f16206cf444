package train

import (
	"fmt"
	"gnnmpi/internal/f16"
	"os"
	"slices"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/graph"
	"gnnmpi/internal/memlimit"
	"gnnmpi/metrics"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// Data is what one rank trains on: the topology and labels of the rows it
// holds (all of them when the topology is replicated), the feature rows it
// owns, and the partition book that says who owns the rest.
//
// A dataset loaded whole holds rows [0, n): Adj is n×n and Labels has n
// entries. A partitioned dataset (graph.LoadParts) holds only the rows of
// the rank's part, [RowLo, RowHi): Adj has RowHi−RowLo rows and n columns
// (global ids), Labels and the split members are those of the rows held,
// and the book is contiguous (partition.Contiguous over Offsets).
//
// The feature rows are dense (Feat) or sparse (FeatCSR: ascending columns,
// Values nil for a 0/1 pattern); exactly one of the two is set, the same
// one on every rank (Load's feature format decides by the whole file).
//
// A partitioned dataset (Offsets set) numbers its vertices so that run part
// q owns the contiguous range [Offsets[q], Offsets[q+1]), and a rank holds
// only its part's rows [RowLo, RowHi): Adj has those rows (n columns,
// global ids), Labels their labels and Split only those of its members.
// RunFull trains on such data with no rank holding the whole graph.
type Data struct {
	Name    string
	Adj     *sparse.CSR             // rows [RowLo, RowHi) of the graph, n columns
	Feat    *dense.Matrix           // rows this rank owns, in the book's local-id order; nil when sparse
	FeatCSR *sparse.Matrix[float32] // the same rows, sparse; nil when dense
	// Feat16 holds the dense rows in half precision instead of Feat when
	// a partitioned dataset stores them so and LoadOptions.KeepHalf asked
	// to keep them (maybe read-only mapped memory); nil otherwise.
	Feat16     *dense.Half
	Labels     []int32 // labels of rows [RowLo, RowHi)
	NumClasses int
	SplitName  string
	Split      graph.Split // global ids, ascending; those in [RowLo, RowHi)
	// TrainTotal is the number of training vertices of the split over the
	// whole graph, on every rank (Split.Train holds only this rank's rows'
	// share of them when the dataset is partitioned).
	TrainTotal int
	Book       *partition.Book

	// RowLo and RowHi are the rows held: 0 and n for a whole dataset.
	RowLo, RowHi int64
	// Offsets are the run parts' id ranges of a partitioned dataset
	// (part q owns [Offsets[q], Offsets[q+1])); nil for a whole dataset.
	Offsets []int64
	// PartOffsets are the dataset parts' id ranges of a partitioned
	// dataset (graph.PartManifest.Offsets: dataset part k owns
	// [PartOffsets[k], PartOffsets[k+1]); a run part is a run of
	// consecutive dataset parts); nil for a whole dataset.
	PartOffsets []int64
	// OrigIDs are the original ids of rows [RowLo, RowHi) of a
	// partitioned (relabelled) dataset; nil for a whole dataset, whose
	// ids are the original ones.
	OrigIDs []int64

	// Reciprocity is the fraction of edges (i, j) whose reverse (j, i)
	// is in the graph too (graph.Reciprocity; 1 for a graph without
	// edges). A graph stored with both directions has 1; an undirected
	// graph written one edge per pair has about 0.
	Reciprocity float64
	// Symmetrized says that the reverse of every edge was added on load.
	Symmetrized bool
	// EmptyClasses lists the classes below NumClasses that no vertex
	// has, ascending.
	EmptyClasses []int
	// NonNegative says that no feature entry of any rank is negative:
	// FeatureNormAuto row-normalises such features.
	NonNegative bool
	// FeatOwned says that Feat is memory of the process's own (rows
	// parsed or copied out of a file), which Features may normalise in
	// place; false for rows that alias a read-only mapped file.
	FeatOwned bool
	// normalized says that Features has row-normalised Feat in place.
	normalized bool
}

// NumNodes returns the number of vertices.
func (d *Data) NumNodes() int64 { return d.Adj.NCols }

// Partitioned reports whether d holds only some rows of the graph.
func (d *Data) Partitioned() bool { return d.RowLo != 0 || d.RowHi != d.NumNodes() }

// Label returns the label of vertex gid, one of the rows held.
func (d *Data) Label(gid int64) int32 { return d.Labels[gid-d.RowLo] }

// Row returns the adjacency row of vertex gid, one of the rows held.
func (d *Data) Row(gid int64) []int64 { return d.Adj.Row(gid - d.RowLo) }

// NumFeatures returns the feature dimension, dense or sparse.
func (d *Data) NumFeatures() int {
	if d.FeatCSR != nil {
		return int(d.FeatCSR.NCols)
	}
	if d.Feat16 != nil {
		return d.Feat16.Cols
	}
	return d.Feat.Cols
}

// OwnRows returns the number of feature rows this rank holds.
func (d *Data) OwnRows() int {
	if d.FeatCSR != nil {
		return int(d.FeatCSR.NRows)
	}
	if d.Feat16 != nil {
		return d.Feat16.Rows
	}
	return d.Feat.Rows
}

// Features are one rank's feature rows in the form the feature store
// takes: dense (Dense), dense in half precision (Half) or sparse (CSR),
// exactly one of them set.
type Features struct {
	Dense *dense.Matrix
	Half  *dense.Half
	CSR   *sparse.Matrix[float32]
}

// Features returns the rows this rank owns under the feature
// normalisation norm: d's own rows for FeatureNormNone (aliased, maybe
// read-only mapped memory); for FeatureNormRow each row divided by its sum
// clamped at 1 (dense.RowNormalized or sparse.RowNormalized, which agree
// bitwise; a 0/1 pattern gets values): dense rows that d owns
// (Data.FeatOwned) in place, by dense.NormalizeRows, so that no second
// copy of the features is made, other rows into a copy. Half rows
// (Data.Feat16) are returned as they are for FeatureNormNone; for
// FeatureNormRow they are widened once into rows d owns, in Feat, which
// are then normalised in place.
func (d *Data) Features(norm FeatureNorm) Features {
	if d.Feat16 != nil {
		if norm != FeatureNormRow {
			return Features{Half: d.Feat16}
		}
		d.widenHalf()
	}
	switch {
	case d.FeatCSR != nil && norm == FeatureNormRow:
		return Features{CSR: sparse.RowNormalized(d.FeatCSR)}
	case d.FeatCSR != nil:
		return Features{CSR: d.FeatCSR}
	case norm == FeatureNormRow && d.FeatOwned:
		if !d.normalized { // a second call returns the same rows
			dense.NormalizeRows(d.Feat)
			d.normalized = true
		}
		return Features{Dense: d.Feat}
	case norm == FeatureNormRow:
		return Features{Dense: dense.RowNormalized(d.Feat)}
	}
	return Features{Dense: d.Feat}
}

// Cols returns the feature dimension.
func (f Features) Cols() int {
	if f.CSR != nil {
		return int(f.CSR.NCols)
	}
	if f.Half != nil {
		return f.Half.Cols
	}
	return f.Dense.Cols
}

// Partitioning methods Load runs (LoadOptions.Partition).
const (
	PartitionBlock  = partition.MethodBlock
	PartitionRandom = partition.MethodRandom
	PartitionMetis  = partition.MethodMetis
)

// PartitionMethods lists the partitioning methods Load runs, in the order
// flags and errors list them.
var PartitionMethods = []partition.Method{PartitionBlock, PartitionRandom, PartitionMetis}

// LoadOptions are Load's settings.
type LoadOptions struct {
	// Split names the split ("": the dataset's default).
	Split string
	// Partition is how Load partitions the vertices when Book is empty:
	// PartitionBlock, PartitionRandom or PartitionMetis (multi-constraint:
	// balances the split's train, valid and test vertices; "" means it
	// too).
	Partition partition.Method
	// Book, if not empty, is the path of a partition book written by
	// `gnnmpi partition` (with p/Replication parts), read in place of
	// partitioning; Partition must then be "".
	Book string
	// Symmetrize adds the reverse of every edge to the topology.
	Symmetrize bool
	// Replication is the feature replication factor c (Config.Replication;
	// 0 means 1): the book has p/c parts and rank r holds part r/c (the c
	// ranks of a grid row hold the same part). It must divide p.
	Replication int
	// KeepHalf keeps dense features that a partitioned dataset stores in
	// half precision (graph.PartReadOptions.KeepHalf) unwidened, in
	// Data.Feat16, for a feature store of dtype F16 (Run's store takes
	// them as they are) or F32 (widened once, row by row, into the
	// store). Other datasets ignore it. RunFull and Infer widen such
	// rows first.
	KeepHalf bool
	// Format is how the features are held: dense (Data.Feat) or sparse
	// (Data.FeatCSR); graph.FeatureAuto, or "", picks sparse below
	// graph.SparseDensity nonzeros, decided over the whole file so that
	// every rank agrees.
	Format graph.FeatureFormat
	// Seed seeds the random and METIS partitions.
	Seed uint64
	// Progress, if not nil, receives progress lines.
	Progress func(string, ...any)
	// WholeTopology asks, for a partitioned dataset (a directory written
	// by `gnnmpi partition --out`), for every part's adjacency rows and
	// labels besides the rank's own part (a replicated topology); without
	// it a rank holds only its part's rows. A dataset in one file is
	// always read whole.
	WholeTopology bool
}

// Load reads the dataset at path for rank c.Rank() of c.Size(): topology,
// labels and splits on every rank, and the features of the vertices of the
// rank's part (see LoadOptions). METIS and book files are computed or read
// on rank 0 and broadcast (metrics.PhaseSetup).
//
// With Symmetrize set, the reverse of every edge is added to the topology
// (graph.Dataset.Symmetrized; nothing is done for a .gnn file recorded as
// symmetric). Load measures the fraction of edges that have a reverse
// (Data.Reciprocity, on rank 0, broadcast), the empty classes and whether
// the features are non-negative (over all ranks); the caller decides what
// to warn about.
//
// Load is collective over c.
func Load(c collective.Comm, path string, o LoadOptions) (*Data, error) {
	split, symmetrize, replication, format, progress := o.Split, o.Symmetrize, o.Replication, o.Format, o.Progress
	if replication == 0 {
		replication = 1
	}
	if progress == nil {
		progress = func(string, ...any) {}
	}
	if _, err := graph.ParseFeatureFormat(string(format)); err != nil {
		return nil, err
	}
	if replication < 1 || c.Size()%replication != 0 {
		return nil, fmt.Errorf("train: feature replication %d does not divide the %d ranks", replication, c.Size())
	}
	p, r := c.Size()/replication, c.Rank()/replication
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	if graph.IsPartDir(path) {
		return loadParts(c, path, o, replication, o.WholeTopology)
	}
	progress("loading topology and labels of %s", path)
	g, err := graph.Load(path, graph.ReadOptions{NoFeatures: true})
	if err != nil {
		return nil, err
	}
	if g.Labels == nil || g.NumClasses < 1 {
		return nil, fmt.Errorf("train: %s has no node labels", path)
	}
	symmetrized := symmetrize && !g.Symmetric
	if symmetrize {
		g = g.Symmetrized()
	}
	recip, err := reciprocity(c, g)
	if err != nil {
		return nil, err
	}
	split, s, err := g.SplitNamed(split)
	if err != nil {
		return nil, fmt.Errorf("train: %s %w", path, err)
	}
	if len(s.Train) == 0 {
		return nil, fmt.Errorf("train: split %q of %s has no training vertices", split, path)
	}
	book, err := partitionBook(c, g, split, o, p, progress)
	if err != nil {
		return nil, err
	}
	d := &Data{Name: g.Name, Adj: g.Adj, Labels: g.Labels, NumClasses: g.NumClasses, SplitName: split, Split: s, TrainTotal: len(s.Train), Book: book,
		RowHi: g.NumNodes, Reciprocity: recip, Symmetrized: symmetrized, EmptyClasses: graph.EmptyClasses(graph.ClassCounts(g.Labels, g.NumClasses))}
	progress("loading the features of the vertices each rank owns")
	var keep func(int64) bool
	if p > 1 {
		keep = func(gid int64) bool { return book.Owner(gid) == r }
	}
	f, err := graph.Load(path, graph.ReadOptions{Keep: keep, NoLabels: true, FeatureFormat: format})
	if err != nil {
		return nil, err
	}
	if !f.HasFeatures() {
		return nil, fmt.Errorf("train: %s has no node features", path)
	}
	rows := 0
	if f.FeatCSR != nil {
		rows = int(f.FeatCSR.NRows)
	} else {
		rows = f.Feat.Rows
	}
	if f.NumNodes != g.NumNodes {
		return nil, fmt.Errorf("train: %s changed while loading (%d then %d vertices)", path, g.NumNodes, f.NumNodes)
	}
	if f.Rows != nil {
		// Keep yields rows in ascending gid order, which is the book's
		// local-id order.
		for k, gid := range f.Rows {
			if book.LocalID(gid) != int64(k) {
				return nil, fmt.Errorf("train: row %d of rank %d is vertex %d with local id %d", k, r, gid, book.LocalID(gid))
			}
		}
	} else if p > 1 || rows != int(g.NumNodes) {
		return nil, fmt.Errorf("train: %s: expected %d feature rows, got %d", path, g.NumNodes, rows)
	}
	d.Feat, d.FeatCSR = f.Feat, f.FeatCSR
	if f.Rows == nil && f.Adj != nil {
		// A binary file read whole maps f's topology again, resident
		// (MAP_POPULATE) but unused: g's is the one kept.
		memlimit.ReleaseMapped(byteView(f.Adj.Indptr), byteView(f.Adj.Indices), byteView(f.Adj.Values))
	}
	// Rows kept by a rank are copied out of the file, and a directory
	// (OGB's raw layout) is parsed: only a binary file read whole stays
	// mapped.
	if st, err := os.Stat(path); err == nil && (keep != nil || st.IsDir()) {
		d.FeatOwned = true
	}
	neg := int64(0)
	if !nonNegative(f.Feat) || !nonNegativeCSR(f.FeatCSR) {
		neg = 1
	}
	if err := collective.AllreduceVars(c, collective.Max, &neg); err != nil {
		return nil, err
	}
	d.NonNegative = neg == 0
	return d, nil
}

// reciprocity returns the fraction of g's edges that have their reverse
// (1 without edges, or when g is recorded as symmetric), computed on rank 0
// of c and broadcast: every rank holds the same topology.
func reciprocity(c collective.Comm, g *graph.Dataset) (float64, error) {
	if g.Symmetric {
		return 1, nil
	}
	f := []float64{1}
	if c.Rank() == 0 {
		if r, m := graph.Reciprocity(g.Adj); m > 0 {
			f[0] = float64(r) / float64(m)
		}
	}
	if err := collective.BcastSlice(c, f, 0); err != nil {
		return 0, err
	}
	return f[0], nil
}

// nonNegativeCSR reports whether no stored value of x is negative (nil or
// a pattern: true).
func nonNegativeCSR(x *sparse.Matrix[float32]) bool {
	if x == nil {
		return true
	}
	for _, v := range x.Values {
		if v < 0 {
			return false
		}
	}
	return true
}

// widenHalf replaces half rows (Feat16) by their float32 widening in
// Feat, memory d owns; it does nothing without half rows.
func (d *Data) widenHalf() {
	h := d.Feat16
	if h == nil {
		return
	}
	d.Feat = dense.New(h.Rows, h.Cols)
	f16.Decode(d.Feat.Data, h.Data[:h.Rows*h.Cols])
	d.Feat16, d.FeatOwned = nil, true
}

// nonNegativeHalf reports whether no entry of the half rows x is
// negative (nil: true): whether no word has its sign bit set, but for -0.
func nonNegativeHalf(x *dense.Half) bool {
	if x == nil {
		return true
	}
	for _, w := range x.Data[:x.Rows*x.Cols] {
		if w&0x8000 != 0 && w != 0x8000 {
			return false
		}
	}
	return true
}

// nonNegative reports whether no entry of x is negative (nil: true).
func nonNegative(x *dense.Matrix) bool {
	if x == nil {
		return true
	}
	for _, v := range x.Data[:x.Rows*x.Cols] {
		if v < 0 {
			return false
		}
	}
	return true
}

// PartitionSpec returns the partition as one string spells it (the
// metrics records' partition): the book's path, else the method
// (PartitionMetis when unset).
func (o *LoadOptions) PartitionSpec() string {
	switch {
	case o.Book != "":
		return o.Book
	case o.Partition == "":
		return string(PartitionMetis)
	}
	return string(o.Partition)
}

// partitionBook makes or reads the book of p parts that o asks for and
// gives every rank of c the same one.
func partitionBook(c collective.Comm, g *graph.Dataset, split string, o LoadOptions, p int, progress func(string, ...any)) (*partition.Book, error) {
	method, path, seed := o.Partition, o.Book, o.Seed
	if method == "" && path == "" {
		method = PartitionMetis
	}
	switch {
	case method != "" && path != "":
		return nil, fmt.Errorf("train: partition method %s and book %s; give one", method, path)
	case path == "" && !slices.Contains(PartitionMethods, method):
		return nil, fmt.Errorf("train: partition method %q is not one Load runs (want %s, or a book file)", method, partition.OrList(PartitionMethods))
	}
	if p == 1 && (method == PartitionMetis || method == PartitionRandom) {
		return partition.New(make([]int32, g.NumNodes), 1, string(method))
	}
	switch method {
	case PartitionBlock:
		return partition.Block(g.NumNodes, p), nil
	case PartitionRandom:
		return partition.Random(g.NumNodes, p, seed), nil
	}
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, settingErrorf("train: %s %q is neither a method (%s) nor a readable book: %w", SettingPartition, path, partition.OrList(PartitionMethods), err)
		}
	}
	// METIS runs and book files are read on rank 0 only, then broadcast.
	part := make([]int32, g.NumNodes)
	err := onRoot(c, func() error {
		var b *partition.Book
		var err error
		if path == "" {
			progress("partitioning with METIS into %d parts, balancing split %s", p, split)
			b, err = graph.MetisPartitionOpts(g, p, graph.MetisOptions{Split: split, Seed: int(seed), Fits: MetisFits(0, "--partition", progress)})
		} else {
			b, err = partition.Read(path)
			if err == nil && (b.Parts != p || b.NumNodes() != g.NumNodes) {
				err = fmt.Errorf("train: partition book %s has %d parts over %d vertices; the run has %d parts (ranks / feature replication) and %d vertices", path, b.Parts, b.NumNodes(), p, g.NumNodes)
			}
		}
		if err == nil {
			for gid := range part {
				part[gid] = int32(b.Owner(int64(gid)))
			}
		}
		return err
	}, part)
	if err != nil {
		return nil, err
	}
	name := string(method)
	if path != "" {
		name = "file"
	}
	return partition.New(slices.Clip(part), p, name)
}

// Distribute returns part rank's share of a dataset held whole in memory (a
// generated graph, a test fixture): the topology and labels shared, the
// feature rows the part owns under book copied out, dense or sparse as g
// holds them. With feature replication c, rank r of the run takes part
// r/c. It does not communicate.
func Distribute(g *graph.Dataset, split string, book *partition.Book, rank int) (*Data, error) {
	if g.Rows != nil || !g.HasFeatures() || g.Labels == nil {
		return nil, fmt.Errorf("train: Distribute needs a whole dataset with features and labels")
	}
	s, ok := g.Splits[split]
	if !ok {
		return nil, fmt.Errorf("train: %s has no split %q (have %v)", g.Name, split, g.SplitNames())
	}
	if book.NumNodes() != g.NumNodes || rank < 0 || rank >= book.Parts {
		return nil, fmt.Errorf("train: book of %d vertices and %d parts does not fit %d vertices, rank %d", book.NumNodes(), book.Parts, g.NumNodes, rank)
	}
	owned := book.Owned(rank)
	recip := 1.0
	if !g.Symmetric {
		if r, m := graph.Reciprocity(g.Adj); m > 0 {
			recip = float64(r) / float64(m)
		}
	}
	d := &Data{Name: g.Name, Adj: g.Adj, Labels: g.Labels, NumClasses: g.NumClasses, SplitName: split, Split: s, TrainTotal: len(s.Train), Book: book,
		RowHi: g.NumNodes, Reciprocity: recip, EmptyClasses: graph.EmptyClasses(graph.ClassCounts(g.Labels, g.NumClasses)),
		NonNegative: nonNegative(g.Feat) && nonNegativeCSR(g.FeatCSR)}
	if g.FeatCSR != nil {
		d.FeatCSR = sparse.SelectRows(g.FeatCSR, owned)
		return d, nil
	}
	d.Feat = dense.New(len(owned), g.Feat.Cols)
	for k, gid := range owned {
		copy(d.Feat.Row(k), g.Feat.Row(int(gid)))
	}
	return d, nil
}

// onRoot runs f on rank 0 of c, then broadcasts a status word and, if f
// succeeded, the slice out from rank 0, so that a failure there fails every
// rank (with f's error on rank 0, and on the others an error wrapping
// collective.ErrAborted) instead of leaving the others waiting.
// It is collective.
func onRoot(c collective.Comm, f func() error, out []int32) error {
	status := []int64{0}
	var ferr error
	if c.Rank() == 0 {
		if ferr = f(); ferr != nil {
			status[0] = 1
		}
	}
	if err := collective.BcastSlice(c, status, 0); err != nil {
		return err
	}
	if status[0] != 0 {
		if ferr == nil {
			// Wraps ErrAborted: the launcher reports rank 0's error, the cause.
			ferr = fmt.Errorf("train: rank 0 failed (partitioning or reading its input); see its error (%w)", collective.ErrAborted)
		}
		return ferr
	}
	return collective.BcastSlice(c, out, 0)
}
