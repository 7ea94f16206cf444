package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/train"
)

func fetchCmd() *Command {
	return &Command{
		Name:    "fetch",
		Summary: "measure the feature traffic of the training minibatches under cache policies and sizes, without training",
		Usage:   "--data PATH [--cache none,degree,vip,sim] [--cache-frac 0,0.1,1] [flags]",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			d := train.Defaults("sage")
			data := fs.String("data", "data/cora", "dataset: OGB raw-layout directory or .gnn binary file")
			split := fs.String("split", "", "split whose training vertices are the seeds (default: the dataset's first)")
			part := fs.String("partition", train.PartitionMetis, "vertex partition: block, random, metis, or a book file")
			fanouts := fs.String("fanouts", "15,10", "neighbours sampled per hop, from the seeds outwards")
			batch := fs.Int("batch-size", 1024, "seeds per rank per minibatch (at most)")
			bulk := fs.Int("bulk", 1, "minibatches sampled together")
			epochs := fs.Int("epochs", 1, "epochs of minibatches to replay per configuration")
			policies := fs.String("cache", "none,degree,vip,sim", "cache policies, comma-separated: none, degree, vip, vip-recurrence, sim")
			fracs := fs.String("cache-frac", "0,0.01,0.05,0.1,0.2,0.5,1", "cache sizes α, comma-separated: each rank caches ⌊α·n/parts⌋ remote rows")
			simEpochs := fs.Int("cache-sim-epochs", d.CacheSimEpochs, "simulated epochs that score --cache sim")
			frepl := fs.Int("replication", 1, "feature replication c (divides the number of ranks)")
			dtype := fs.String("feature-dtype", alltoall.F32, "f32 or f16")
			topology := fs.String("topology", d.Topology, "sampler graph: replicated or 1.5d")
			c15 := fs.Int("c", 1, "replication factor of --topology 1.5d")
			seed := fs.Uint64("seed", d.Seed, "random seed (shuffles, sampling, METIS)")
			return func(env *Env) error {
				cfg := train.Defaults("sage")
				fo, err := parseInts(*fanouts)
				if err != nil {
					return fmt.Errorf("fetch: --fanouts %q: %w", *fanouts, err)
				}
				fr, err := parseFloats(*fracs)
				if err != nil {
					return fmt.Errorf("fetch: --cache-frac %q: %w", *fracs, err)
				}
				cfg.Model.Layers, cfg.Fanouts, cfg.BatchSize, cfg.Bulk = len(fo), fo, *batch, *bulk
				cfg.FeatureNorm = "none" // the bytes do not depend on it; saves a copy of the features
				cfg.CacheSimEpochs, cfg.Replication, cfg.FeatureDType = *simEpochs, *frepl, *dtype
				cfg.Topology, cfg.C, cfg.Seed = *topology, *c15, *seed
				cfg.EvalEvery = 0
				return runFetch(env, *data, *split, *part, cfg, *epochs, strings.Split(*policies, ","), fr)
			}
		},
	}
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func runFetch(env *Env, path, split, partition string, cfg train.Config, epochs int, policies []string, fracs []float64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	c := env.Comm
	t0 := time.Now()
	d, err := train.Load(c, path, split, partition, cfg.Replication, cfg.Seed, env.Progress)
	if err != nil {
		return err
	}
	env.Progress("loaded %s in %.2fs: %d vertices, %d features; %d training vertices; %d parts (%s) × replication %d",
		d.Name, time.Since(t0).Seconds(), d.NumNodes(), d.Feat.Cols, len(d.Split.Train), d.Book.Parts, d.Book.Method, cfg.Replication)
	env.Printf("%-15s %6s %10s %12s %12s %12s %12s %9s\n", "cache", "α", "rows/rank", "fetched", "hits", "remote", "bytes", "fetch s")
	var points []train.SweepPoint
	err = train.FetchSweep(c, d, cfg, epochs, policies, fracs, func(pt train.SweepPoint) error {
		points = append(points, pt)
		env.Printf("%-15s %6g %10d %12.0f %12.0f %12.0f %12s %9.3f\n", pt.Cache, pt.CacheFrac, pt.CacheRows, pt.FetchRows, pt.CacheHits, pt.RemoteRows, human(int64(pt.FetchBytes)), pt.FetchSeconds)
		return env.Record(map[string]any{"fetch": pt})
	})
	if err != nil {
		return err
	}
	return env.Finish(map[string]any{"final": true, "points": points, "config": map[string]any{
		"data": path, "split": d.SplitName, "partition": partition, "parts": d.Book.Parts, "fanouts": cfg.Fanouts, "batch_size": cfg.BatchSize,
		"replication": cfg.Replication, "feature_dtype": cfg.FeatureDType, "epochs": epochs, "seed": cfg.Seed, "features": d.Feat.Cols, "nodes": d.NumNodes(),
	}})
}
