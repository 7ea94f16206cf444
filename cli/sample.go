package cli

import (
	"flag"
	"fmt"

	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/sampling"
	"gnnmpi/train"
)

func sampleCmd() *Command {
	return &Command{
		Name:    "sample",
		Summary: "sample minibatches (GraphSAGE node-wise or LADIES layer-wise, in bulk) and report their rate",
		Usage:   "--data DIR --sampler sage|ladies --fanouts F1,F2 --batch-size B --bulk K",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			cfg := &train.SampleConfig{Sampler: sampling.KindSAGE, Topology: sampling.LayoutReplicated}
			fs.StringVar(&cfg.Data, "data", "data/cora", "dataset: OGB raw-layout directory or .gnn binary file")
			fs.StringVar(&cfg.Split, "split", "", "split whose training vertices are the seeds (default: the dataset's first; all: every vertex)")
			fs.Var(&cfg.Sampler, "sampler", "sage (node-wise: --fanouts neighbours per vertex), ladies (layer-wise: --fanouts vertices per minibatch and layer) or plain (node-wise, per batch without matrices: the baseline)")
			fanouts := fs.String("fanouts", "25,10", "per hop from the seeds outwards; sage: -1 takes all neighbours")
			fs.IntVar(&cfg.Batch, "batch-size", 1024, "seeds per minibatch (at most)")
			fs.IntVar(&cfg.Bulk, "bulk", 1, "minibatches sampled together (one sparse product per layer for all)")
			fs.IntVar(&cfg.Epochs, "epochs", 1, "passes over the training vertices")
			fs.IntVar(&cfg.MaxBatches, "max-batches", 0, "stop each epoch after this many minibatches over all ranks (0: all)")
			fs.Uint64Var(&cfg.Seed, "seed", 1, "random seed (shuffle and sampling)")
			fs.Var(&cfg.Topology, "topology", "replicated (every rank holds the graph; no communication), 1.5d (rows over p/c grid rows, c copies; P = Q·A by 1.5D SpGEMM) or 2d (√p×√p blocks); with a partitioned dataset (a directory from partition --out) a rank of 1.5d or 2d reads only its grid row's parts")
			fs.IntVar(&cfg.C, "c", 1, "replication factor of the 1.5d topology (divides the number of ranks)")
			fs.BoolVar(&cfg.Symmetrize, "symmetrize", false, symmetrizeUsage)
			fs.StringVar(&cfg.Dump, "dump", "", "write every minibatch to DIR/e<epoch>-b<batch>.txt (format: README, Data formats)")
			return func(env *Env) error {
				fo, err := parseInts(*fanouts)
				if err != nil {
					return fmt.Errorf("sample: --fanouts %q: %w", *fanouts, err)
				}
				cfg.Fanouts = fo
				return runSample(env, cfg)
			}
		},
	}
}

// runSample samples the minibatches of cfg (train.SampleSource) and
// reports what and how fast.
func runSample(env *Env, cfg *train.SampleConfig) error {
	cfg.Loaded = func(g *graph.Dataset, symmetrized bool) { checkDirection(env, cfg.Data, g, symmetrized) }
	cfg.Progress = env.Progress
	src, err := train.NewSampleSource(env.Comm, cfg)
	if err != nil {
		return err
	}
	defer src.Close()
	env.Printf("sampling %s %v on %s (%d vertices, %d training), batch %d, bulk %d, %d ranks, topology %s (c = %d)\n",
		cfg.Sampler, cfg.Fanouts, src.Name, src.N, len(src.Seeds), cfg.Batch, cfg.Bulk, env.Comm.Size(), cfg.Topology, cfg.C)
	res, err := src.Run(env.Comm)
	if err != nil {
		return err
	}
	env.Printf("sampled   %d minibatches, %d edges, %d input vertices in %.3fs (slowest rank)\n", res.Minibatches, res.Edges, res.Vertices, res.Seconds)
	env.Printf("rate      %.1f minibatches/s, %.4g edges/s\n", res.MinibatchesPerS, res.EdgesPerS)
	return env.Finish(&metrics.SampleFinal{Sample: *res})
}
