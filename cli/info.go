package cli

import (
	"flag"

	"gnnmpi/gpu"
	"gnnmpi/gpu/gpucheck"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/partition/distpart"
)

func infoCmd() *Command {
	return &Command{
		Name:    "info",
		Summary: "load a dataset distributed over the ranks and print its statistics",
		Usage:   "--data PATH",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			df := addDatasetFlags(fs, "data/cora", "dataset: OGB raw-layout directory, partitioned dataset directory (gnnmpi partition --out), .gnn binary file, .mtx or edge list",
				symmetrizeUsage+"; the statistics are then those of the symmetrized graph", featureFormatUsage)
			book := fs.String("partition", "", "partition book (gnnmpi partition); default: vertex v on rank v mod p")
			showGPU := fs.Bool("gpu", false, "also list the GPUs visible to each node and this rank's binding")
			return func(env *Env) error {
				ff, err := df.featureFormat("info")
				if err != nil {
					return err
				}
				env.Progress("loading %s on %d ranks", *df.data, env.Comm.Size())
				return info(env, *df.data, distpart.DescribeOptions{Book: *book, Symmetrize: *df.symmetrize, FeatureFormat: ff}, *showGPU)
			}
		},
	}
}

func info(env *Env, path string, o distpart.DescribeOptions, showGPU bool) error {
	desc, err := distpart.Describe(env.Comm, path, o)
	if err != nil {
		return err
	}
	in, m := desc.Info, desc.Manifest
	warnDirection(env, path, in.Reciprocity, in.Symmetrized)
	warnClasses(env, path, in.EmptyClasses, in.Classes)
	env.Printf("dataset   %s (%s)\n", in.Name, path)
	env.Printf("nodes     %d\nedges     %d\nfeatures  %d\nclasses   %d\n", in.Nodes, in.Edges, in.Features, in.Classes)
	env.Printf("labels    %d labelled, %d unlabelled\n", in.Labelled, in.Unlabelled)
	if in.FeatureFormat != "" {
		env.Printf("format    %s features, %d nonzero (density %.4g%%)\n", in.FeatureFormat, in.FeatureNNZ, 100*in.Density)
	}
	for _, name := range sortedKeys(in.Splits) {
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
	env.Printf("ranks     %d (%s), rows per rank %v, load %.3fs (slowest rank)\n", env.Comm.Size(), env.Backend, in.RowsPerRank, in.LoadSeconds)
	rec := &metrics.Info{Dataset: in}
	if m != nil {
		printManifest(env, m)
		rec.Parts = m
	}
	if showGPU {
		if rec.GPU, err = gpuInfo(env); err != nil {
			return err
		}
	}
	return env.Finish(rec)
}

// printManifest prints the summary of a partitioned dataset's manifest
// and a line per part.
func printManifest(env *Env, m *graph.PartManifest) {
	env.Printf("parts     %d (%s), edge cut %d of %d (%.1f%%), %d bytes, %s features stored\n", m.Parts, m.Method, m.EdgeCut, m.NumEdges,
		100*float64(m.EdgeCut)/float64(max(m.NumEdges, 1)), manifestBytes(m), featureFormatName(m.FeatureFormat))
	for q, f := range m.Files {
		env.Printf("  %s  vertices [%d,%d) %d, edges %d, %d bytes\n", f.Name, m.Offsets[q], m.Offsets[q+1], m.Offsets[q+1]-m.Offsets[q], f.Edges, f.Bytes)
	}
}

// gpuInfo discovers the GPUs on every rank and binds each rank to one by
// its local rank on the node (gpucheck.Bind); it prints and returns rank
// 0's binding.
func gpuInfo(env *Env) (*metrics.GPUBinding, error) {
	b, err := gpucheck.Bind(env.Comm, getenv, metrics.PhaseInfo)
	if err != nil {
		return nil, err
	}
	out := &metrics.GPUBinding{LocalRank: b.LocalRank, LocalSize: b.LocalSize}
	if env.Comm.Rank() == 0 && !env.JSON {
		gpu.Report(env.Out, b.Devices, b.Err)
	}
	if b.Err != nil {
		out.Error = b.Err.Error()
		return out, nil
	}
	for _, d := range b.Devices {
		out.Devices = append(out.Devices, metrics.GPUDevice(d))
	}
	out.Bound = &b.Bound.Index
	env.Printf("rank 0 is local rank %d of %d and binds to GPU %d (%s)\n", b.LocalRank, b.LocalSize, b.Bound.Index, b.Bound.Name)
	return out, nil
}
