package cli

import (
	"flag"
	"fmt"
	"math"
	"slices"
	"time"

	"gnnmpi/collective"
	"gnnmpi/gpu"
	"gnnmpi/graph"
	"gnnmpi/partition"
)

func infoCmd() *Command {
	return &Command{
		Name:    "info",
		Summary: "load a dataset distributed over the ranks and print its statistics",
		Usage:   "--data PATH",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			data := fs.String("data", "data/cora", "dataset: OGB raw-layout directory, partitioned dataset directory (gnnmpi partition --out), .gnn binary file, .mtx or edge list")
			book := fs.String("partition", "", "partition book (gnnmpi partition); default: vertex v on rank v mod p")
			showGPU := fs.Bool("gpu", false, "also list the GPUs visible to each node and this rank's binding")
			sym := fs.Bool("symmetrize", false, symmetrizeUsage+"; the statistics are then those of the symmetrized graph")
			format := fs.String("feature-format", string(graph.FeatureAuto), featureFormatUsage)
			return func(env *Env) error {
				ff, err := graph.ParseFeatureFormat(*format)
				if err != nil {
					return fmt.Errorf("info: %w", err)
				}
				return info(env, *data, *book, *sym, ff, *showGPU)
			}
		},
	}
}

// DatasetInfo is the summary `gnnmpi info` prints.
type DatasetInfo struct {
	Path     string `json:"path"`
	Name     string `json:"name"`
	Nodes    int64  `json:"nodes"`
	Edges    int64  `json:"edges"`
	Features int    `json:"features"`
	// FeatureFormat is how the features were loaded (dense or csr; empty
	// without features), Density the fraction of nonzero feature entries
	// over the whole graph and FeatureNNZ their number.
	FeatureFormat graph.FeatureFormat `json:"feature_format"`
	Density       float64             `json:"feature_density"`
	FeatureNNZ    int64               `json:"feature_nnz"`
	Classes       int                 `json:"classes"`
	Splits        map[string][]int    `json:"splits"` // name → train, valid, test sizes
	MinDegree     int64               `json:"min_degree"`
	MaxDegree     int64               `json:"max_degree"`
	MeanDegree    float64             `json:"mean_degree"`
	StdDegree     float64             `json:"std_degree"`
	Isolated      int64               `json:"isolated"`
	SelfLoops     int64               `json:"self_loops"`
	RowsPerRank   []int64             `json:"rows_per_rank"`
	LoadSeconds   float64             `json:"load_seconds_max"`
	// Reciprocity is the fraction of edges whose reverse edge is in the
	// graph (1 when symmetrized or recorded as symmetric).
	Reciprocity  float64 `json:"reciprocity"`
	Symmetrized  bool    `json:"symmetrized"`
	EmptyClasses []int   `json:"empty_classes"` // classes below Classes without a vertex
}

func info(env *Env, path, bookPath string, symmetrize bool, format graph.FeatureFormat, showGPU bool) error {
	c := env.Comm
	p := c.Size()
	env.Progress("loading %s on %d ranks", path, p)
	t0 := time.Now()
	var (
		d     *graph.Dataset
		owner func(int64) int
		m     *graph.PartManifest
		err   error
	)
	if graph.IsPartDir(path) {
		if bookPath != "" {
			return fmt.Errorf("info: %s is a partitioned dataset, whose parts place the rows: --partition does not apply", path)
		}
		d, owner, m, err = infoLoadParts(c, path, format)
	} else {
		d, owner, err = infoLoad(c, path, bookPath, format)
	}
	if err != nil {
		return err
	}
	load := time.Since(t0).Seconds()
	if err := d.Validate(); err != nil {
		return fmt.Errorf("info: %s: %w", path, err)
	}
	defer collective.SetPhase(c, "info")()
	symmetrized := symmetrize && !d.Symmetric
	if d, err = infoDirection(c, d, owner, symmetrize); err != nil {
		return err
	}
	in, err := datasetInfo(c, d, path, load)
	if err != nil {
		return err
	}
	in.Symmetrized = symmetrized
	if in.Reciprocity, err = infoReciprocity(c, d, owner); err != nil {
		return err
	}
	if in.EmptyClasses, err = infoEmptyClasses(c, d); err != nil {
		return err
	}
	warnDirection(env, path, in.Reciprocity, symmetrized)
	warnClasses(env, path, in.EmptyClasses, in.Classes)
	for name, s := range d.Splits {
		in.Splits[name] = []int{len(s.Train), len(s.Valid), len(s.Test)}
	}
	if m != nil { // a rank's splits hold its parts' members only
		for _, s := range m.Splits {
			in.Splits[s.Name] = []int{int(s.Train), int(s.Valid), int(s.Test)}
		}
	}
	env.Printf("dataset   %s (%s)\n", in.Name, path)
	env.Printf("nodes     %d\nedges     %d\nfeatures  %d\nclasses   %d\n", in.Nodes, in.Edges, in.Features, in.Classes)
	if in.FeatureFormat != "" {
		env.Printf("format    %s features, %d nonzero (density %.4g%%)\n", in.FeatureFormat, in.FeatureNNZ, 100*in.Density)
	}
	for _, name := range d.SplitNames() {
		s := in.Splits[name]
		env.Printf("split     %s: %d/%d/%d (train/valid/test)\n", name, s[0], s[1], s[2])
	}
	env.Printf("degree    min %d, max %d, mean %.2f, std %.2f; %d isolated, %d self-loops\n",
		in.MinDegree, in.MaxDegree, in.MeanDegree, in.StdDegree, in.Isolated, in.SelfLoops)
	sym := ""
	if in.Symmetrized {
		sym = " (symmetrized)"
	}
	env.Printf("direction %.1f%% of edges have a reverse edge%s\n", 100*in.Reciprocity, sym)
	env.Printf("ranks     %d (%s), rows per rank %v, load %.3fs (slowest rank)\n", p, env.Backend, in.RowsPerRank, in.LoadSeconds)
	result := map[string]any{"dataset": in}
	if m != nil {
		printManifest(env, m)
		result["parts"] = m
	}
	if showGPU {
		g, err := gpuInfo(env)
		if err != nil {
			return err
		}
		result["gpu"] = g
	}
	return env.Finish(result)
}

// infoLoad loads this rank's rows of the dataset at path: those the book
// at bookPath gives it, else vertex v on rank v mod p (all rows on a
// single rank). owner is the rank of each row, nil when every rank holds
// all.
func infoLoad(c collective.Comm, path, bookPath string, format graph.FeatureFormat) (*graph.Dataset, func(int64) int, error) {
	owner, books, err := infoOwner(c, bookPath)
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

// infoLoadParts loads this rank's parts of the partitioned dataset in dir
// (graph.PartManifest.RunParts with no replication): the Dataset holds
// their rows, in the relabelled ids. owner is the rank of each row, nil
// on a single rank.
func infoLoadParts(c collective.Comm, dir string, format graph.FeatureFormat) (*graph.Dataset, func(int64) int, *graph.PartManifest, error) {
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

// printManifest prints the summary of a partitioned dataset's manifest
// and a line per part.
func printManifest(env *Env, m *graph.PartManifest) {
	var bytes int64
	for _, f := range m.Files {
		bytes += f.Bytes
	}
	env.Printf("parts     %d (%s), edge cut %d of %d (%.1f%%), %d bytes, %s features stored\n", m.Parts, m.Method, m.EdgeCut, m.NumEdges,
		100*float64(m.EdgeCut)/float64(max(m.NumEdges, 1)), bytes, featureFormatName(m.FeatureFormat))
	for q, f := range m.Files {
		env.Printf("  %s  vertices [%d,%d) %d, edges %d, %d bytes\n", f.Name, m.Offsets[q], m.Offsets[q+1], m.Offsets[q+1]-m.Offsets[q], f.Edges, f.Bytes)
	}
}

// infoOwner returns the rank that loads each global row: its part in the
// book at bookPath, else vertex v on rank v mod p; nil (every rank loads
// all rows) on a single rank without a book, so that the binary format is
// mapped without a copy.
//
// books is the number of vertices of the book, -1 without one.
func infoOwner(c collective.Comm, bookPath string) (owner func(int64) int, books int64, err error) {
	p := c.Size()
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

// infoDirection returns d, symmetrized when asked (over all ranks when
// the rows are spread: see distSymmetrized). It is collective over c.
func infoDirection(c collective.Comm, d *graph.Dataset, owner func(int64) int, symmetrize bool) (*graph.Dataset, error) {
	switch {
	case !symmetrize:
		return d, nil
	case d.Rows == nil:
		return d.Symmetrized(), nil
	}
	// Every rank takes the same branch: the file's flag is the same.
	if d.Symmetric {
		return d, nil
	}
	return distSymmetrized(c, d, owner)
}

// infoReciprocity returns the fraction of the edges of the graph held by
// rows over c that have a reverse edge. It is collective over c.
func infoReciprocity(c collective.Comm, d *graph.Dataset, owner func(int64) int) (float64, error) {
	switch {
	case d.Symmetric:
		return 1, nil
	case d.Rows == nil:
		r, m := graph.Reciprocity(d.Adj)
		if m == 0 {
			return 1, nil
		}
		return float64(r) / float64(m), nil
	}
	return distReciprocity(c, d, owner)
}

// infoEmptyClasses returns the classes that no vertex of any rank has. It
// is collective over c.
func infoEmptyClasses(c collective.Comm, d *graph.Dataset) ([]int, error) {
	counts := graph.ClassCounts(d.Labels, d.NumClasses)
	if err := collective.AllreduceSlice(c, counts, collective.Sum); err != nil {
		return nil, err
	}
	return graph.EmptyClasses(counts), nil
}

// datasetInfo returns the statistics of the dataset whose rows d holds on
// each rank (loaded from path in load seconds): degree statistics of the
// rows over all ranks, sizes, rows per rank and the slowest load.
//
// datasetInfo is collective over c.
func datasetInfo(c collective.Comm, d *graph.Dataset, path string, load float64) (DatasetInfo, error) {
	held := int64(len(d.Rows))
	if d.Rows == nil {
		held = d.NumNodes
	}
	var edges, selfLoops, isolated int64
	nnz := d.FeatureNNZ()
	var sumSq float64
	minDeg, maxDeg := int64(math.MaxInt64), int64(0)
	for i := int64(0); i < held; i++ {
		deg := d.Adj.Degree(i)
		g := i
		if d.Rows != nil {
			g = d.Rows[i]
		}
		edges += deg
		sumSq += float64(deg) * float64(deg)
		minDeg, maxDeg = min(minDeg, deg), max(maxDeg, deg)
		if deg == 0 {
			isolated++
		}
		for _, j := range d.Adj.Row(i) {
			if j == g {
				selfLoops++
			}
		}
	}
	total := held // rows over all ranks
	if err := collective.AllreduceVars(c, collective.Sum, &edges, &selfLoops, &isolated, &total, &nnz); err != nil {
		return DatasetInfo{}, err
	}
	// Minima as maxima of negations: one Allreduce for all.
	negMinDeg, features, classes, nodes, negNodes := -minDeg, int64(d.NumFeatures()), int64(d.NumClasses), d.NumNodes, -d.NumNodes
	if err := collective.AllreduceVars(c, collective.Max, &maxDeg, &negMinDeg, &features, &classes, &nodes, &negNodes); err != nil {
		return DatasetInfo{}, err
	}
	if err := collective.AllreduceVars(c, collective.Sum, &sumSq); err != nil {
		return DatasetInfo{}, err
	}
	if err := collective.AllreduceVars(c, collective.Max, &load); err != nil {
		return DatasetInfo{}, err
	}
	rows, _, err := collective.AllgatherSlice(c, []int64{held})
	if err != nil {
		return DatasetInfo{}, err
	}
	if nodes != -negNodes {
		return DatasetInfo{}, fmt.Errorf("info: ranks disagree on the number of vertices of %s", path)
	}
	n := nodes
	if total != n {
		return DatasetInfo{}, fmt.Errorf("info: ranks hold %d rows of %d vertices", total, n)
	}
	mean := float64(edges) / float64(max(n, 1))
	in := DatasetInfo{
		Path: path, Name: d.Name, Nodes: n, Edges: edges, Features: int(features), Classes: int(classes),
		Splits: map[string][]int{}, MinDegree: -negMinDeg, MaxDegree: maxDeg, MeanDegree: mean,
		StdDegree: math.Sqrt(math.Max(sumSq/float64(max(n, 1))-mean*mean, 0)),
		Isolated:  isolated, SelfLoops: selfLoops, RowsPerRank: rows, LoadSeconds: load,
	}
	if n == 0 {
		in.MinDegree = 0
	}
	if features > 0 {
		in.FeatureFormat, in.FeatureNNZ = d.FeatureFormat(), nnz
		in.Density = float64(nnz) / (float64(n) * float64(features))
	}
	return in, nil
}

// gpuInfo discovers the GPUs on every rank and binds each rank to one by
// its local rank on the node.
func gpuInfo(env *Env) (map[string]any, error) {
	c := env.Comm
	devs, derr := gpu.DiscoverSystem()
	localRank, localSize, ok := gpu.LocalRankFromEnv(getenv)
	if !ok {
		var err error
		if localRank, localSize, err = collective.LocalRank(c); err != nil {
			return nil, err
		}
	}
	out := map[string]any{"local_rank": localRank, "local_size": localSize}
	if c.Rank() == 0 && !env.JSON {
		gpu.Report(env.Out, devs, derr)
	}
	if derr != nil {
		out["error"] = derr.Error()
		return out, nil
	}
	out["devices"] = devs
	dev, err := gpu.Bind(localRank, devs)
	if err != nil {
		return nil, err
	}
	out["bound"] = dev.Index
	env.Printf("rank 0 is local rank %d of %d and binds to GPU %d (%s)\n", localRank, localSize, dev.Index, dev.Name)
	return out, nil
}
