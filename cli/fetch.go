package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"gnnmpi/alltoall"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/train"
)

func fetchCmd() *Command {
	return &Command{
		Name:    "fetch",
		Summary: "measure the feature traffic of the training minibatches under cache policies and sizes, without training",
		Usage:   "--data PATH [--cache none,degree,vip,sim] [--cache-frac 0,0.1,1] [flags]",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			d := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
			// The sweep's one default of its own: minibatches of the size
			// the fetch benchmarks use (bench/fetch.sh).
			d.BatchSize = 1024
			sf := addSampleFlags(fs, d)
			epochs := fs.Int("epochs", 1, "epochs of minibatches to replay per configuration")
			policies := fs.String("cache", "none,degree,vip,sim", "cache policies, comma-separated: none, degree, vip, vip-recurrence, sim")
			fracs := fs.String("cache-frac", "0,0.01,0.05,0.1,0.2,0.5,1", "cache sizes α, comma-separated: each rank caches ⌊α·n/parts⌋ remote rows")
			return func(env *Env) error {
				cfg := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
				if err := sf.config(&cfg, setFlags(fs)); err != nil {
					return fmt.Errorf("fetch: %w", err)
				}
				cfg.Model.Layers = len(cfg.Fanouts)
				if cfg.Sampler == train.SamplerLADIES {
					cfg.Model.Kind = model.KindGCN // the blocks carry GCN's LADIES weights; nothing is trained
				}
				cfg.FeatureNorm = train.FeatureNormNone // the bytes do not depend on it; saves a copy of the features
				cfg.EvalEvery = 0
				var pols []alltoall.CachePolicy
				for _, s := range strings.Split(*policies, ",") {
					pol, err := train.ParseCache(s)
					if err != nil {
						return err
					}
					pols = append(pols, pol)
				}
				fr, err := parseFloats(*fracs)
				if err != nil {
					return fmt.Errorf("fetch: --cache-frac %q: %w", *fracs, err)
				}
				lo, err := sf.loadOptions(env, cfg.Replication)
				if err != nil {
					return fmt.Errorf("fetch: %w", err)
				}
				lo.WholeTopology = cfg.Topology == train.TopologyReplicated
				return runFetch(env, *sf.data, lo, cfg, *epochs, pols, fr)
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

func runFetch(env *Env, path string, lo train.LoadOptions, cfg train.Config, epochs int, policies []alltoall.CachePolicy, fracs []float64) error {
	c := env.Comm
	cfg, err := cfg.Resolve(c.Size())
	if err != nil {
		return err
	}
	d, err := loadData(env, path, lo)
	if err != nil {
		return err
	}
	// The sweep's trainers take the feature rows: describe them first.
	features, format := d.NumFeatures(), d.FeatureFormat()
	env.Printf("%-15s %6s %10s %12s %12s %12s %12s %9s\n", "cache", "α", "rows/rank", "fetched", "hits", "remote", "bytes", "fetch s")
	rec := &metrics.FetchFinal{Final: true, Config: metrics.FetchConfig{
		Data: path, Split: d.SplitName, Partition: lo.PartitionSpec(), Parts: d.Book.Parts, Fanouts: cfg.Fanouts, BatchSize: cfg.BatchSize,
		Replication: cfg.Replication, FeatureDType: string(cfg.FeatureDType), Epochs: epochs, Seed: cfg.Seed, Features: features, Nodes: d.NumNodes(),
		Symmetrize: lo.Symmetrize, Reciprocity: d.Reciprocity, FeatureFormat: string(format),
	}}
	err = train.FetchSweep(c, d, cfg, epochs, policies, fracs, func(pt train.SweepPoint) error {
		env.Printf("%-15s %6g %10d %12.0f %12.0f %12.0f %12s %9.3f\n", pt.Cache, pt.CacheFrac, pt.CacheRows, pt.FetchRows, pt.CacheHits, pt.RemoteRows, human(int64(pt.FetchBytes)), pt.FetchSeconds)
		r := metrics.SweepPoint{Cache: string(pt.Cache), CacheFrac: pt.CacheFrac, CacheRows: pt.CacheRows, FetchRows: pt.FetchRows, CacheHits: pt.CacheHits,
			RemoteRows: pt.RemoteRows, FetchBytes: pt.FetchBytes, FetchSeconds: pt.FetchSeconds, ScoreSeconds: pt.ScoreSeconds, FillSeconds: pt.FillSeconds,
			StoreBytesMax: pt.StoreBytesMax, CachedRowsMax: pt.CachedRowsMax}
		rec.Points = append(rec.Points, r)
		return env.Record(metrics.FetchPoint{Fetch: r})
	})
	if err != nil {
		return err
	}
	return env.Finish(rec)
}
