package cli

import (
	"flag"
	"fmt"
	"math"
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
			data := fs.String("data", "data/cora", "dataset: OGB raw-layout directory, .gnn binary file, .mtx or edge list")
			book := fs.String("partition", "", "partition book (gnnmpi partition); default: vertex v on rank v mod p")
			showGPU := fs.Bool("gpu", false, "also list the GPUs visible to each node and this rank's binding")
			format := fs.String("feature-format", string(graph.FeatureAuto), featureFormatUsage)
			return func(env *Env) error {
				ff, err := graph.ParseFeatureFormat(*format)
				if err != nil {
					return fmt.Errorf("info: %w", err)
				}
				return info(env, *data, *book, ff, *showGPU)
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
}

func info(env *Env, path, bookPath string, format graph.FeatureFormat, showGPU bool) error {
	c := env.Comm
	p := c.Size()
	keep, err := infoKeep(c, bookPath)
	if err != nil {
		return err
	}
	env.Progress("loading %s on %d ranks", path, p)
	t0 := time.Now()
	d, err := graph.Load(path, graph.ReadOptions{Keep: keep, FeatureFormat: format})
	if err != nil {
		return err
	}
	load := time.Since(t0).Seconds()
	if err := d.Validate(); err != nil {
		return fmt.Errorf("info: %s: %w", path, err)
	}
	defer collective.SetPhase(c, "info")()
	in, err := datasetInfo(c, d, path, load)
	if err != nil {
		return err
	}
	for name, s := range d.Splits {
		in.Splits[name] = []int{len(s.Train), len(s.Valid), len(s.Test)}
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
	env.Printf("ranks     %d (%s), rows per rank %v, load %.3fs (slowest rank)\n", p, env.Backend, in.RowsPerRank, in.LoadSeconds)
	result := map[string]any{"dataset": in}
	if showGPU {
		g, err := gpuInfo(env)
		if err != nil {
			return err
		}
		result["gpu"] = g
	}
	return env.Finish(result)
}

// infoKeep returns which global rows this rank loads: those of its part
// in the book at bookPath, else vertex v on rank v mod p (nil, all rows, on
// a single rank, so that the binary format is mapped without a copy).
func infoKeep(c collective.Comm, bookPath string) (func(int64) bool, error) {
	p, r := c.Size(), c.Rank()
	var keep func(int64) bool
	if p > 1 {
		keep = func(g int64) bool { return g%int64(p) == int64(r) }
	}
	if bookPath != "" {
		b, err := partition.Read(bookPath)
		if err != nil {
			return nil, err
		}
		if b.Parts != p {
			return nil, fmt.Errorf("info: %s has %d parts for %d ranks", bookPath, b.Parts, p)
		}
		keep = func(g int64) bool { return g < int64(len(b.Part)) && int(b.Part[g]) == r }
	}
	return keep, nil
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
