package cli

import (
	"flag"
	"fmt"
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

// DatasetInfo is the summary `gnnmpi info` prints (graph.Info).
type DatasetInfo = graph.Info

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
	in, err := graph.DistInfo(c, d, path, load)
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
