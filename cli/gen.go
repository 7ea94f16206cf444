package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/enum"
)

func genCmd() *Command {
	return &Command{
		Name:    "gen",
		Summary: "generate a graph: rmat (Graph500 R-MAT), sbm (planted partition with features, labels, split) or papers (papers100M-like, streamed to OGB's binary layout)",
		Usage:   "rmat|sbm|papers --out PATH",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			out := fs.String("out", "", "output: a directory (OGB raw layout, csv.gz), a file ending in .gnn (binary), or .mtx[.gz] (Matrix Market adjacency only)")
			var o graph.GenOptions
			fs.IntVar(&o.Scale, "scale", 14, "rmat: log2 of the number of vertices")
			fs.IntVar(&o.EdgeFactor, "edgefactor", 16, "rmat: edges per vertex before symmetrization")
			fs.BoolVar(&o.Directed, "directed", false, "rmat: keep the generated direction (default: symmetrize)")
			fs.Int64Var(&o.Nodes, "nodes", 100000, "sbm: vertices")
			fs.IntVar(&o.Classes, "classes", 0, "sbm: classes (0: default)")
			fs.Float64Var(&o.Degree, "degree", 0, "sbm: mean degree (0: default)")
			fs.Float64Var(&o.Homophily, "homophily", -1, "sbm: fraction of a vertex's edges within its class (-1: default)")
			fs.IntVar(&o.Features, "features", 0, "sbm: feature dimension (0: default); rmat: add planted labels, features of this dimension and a random split (0: none)")
			fs.Float64Var(&o.TrainFrac, "train-frac", -1, "sbm, rmat with --features: fraction of vertices in the training set (-1: default 0.6)")
			fs.Float64Var(&o.ValidFrac, "valid-frac", -1, "sbm, rmat with --features: fraction in the validation set (-1: default 0.2); the rest is the test set")
			fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
			testFrac := fs.Float64("test-frac", -1, "papers: fraction of vertices in the test set (-1: default 0.002); the rest not in a set is unlabelled")
			dtype := fs.String("feature-dtype", "f32", "papers: dtype of node_feat, f32 or f16")
			return func(env *Env) error {
				args := fs.Args()
				if len(args) == 1 && args[0] == "papers" {
					return genPapers(env, o, *testFrac, *dtype, *out)
				}
				var gen graph.Generator
				if len(args) == 1 {
					gen, _ = graph.ParseGenerator(args[0])
				}
				if gen == "" {
					return fmt.Errorf("gen: want one generator, %s, got %q", enum.Or(graph.Generators), args)
				}
				if *out == "" {
					return fmt.Errorf("gen: --out is required")
				}
				o := o // the flags' options are shared by in-process ranks
				o.Progress = env.Progress
				return collective.RankZero(env.Comm, func() error {
					t0 := time.Now()
					d, err := graph.Generate(gen, o)
					if err != nil {
						return err
					}
					took := time.Since(t0)
					env.Progress("generated %d vertices, %d edges in %.2fs; writing %s", d.NumNodes, d.NumEdges(), took.Seconds(), *out)
					if err := graph.Write(*out, d); err != nil {
						return err
					}
					env.Printf("wrote %s: %d vertices, %d edges (generated in %.2fs, written in %.2fs)\n",
						*out, d.NumNodes, d.NumEdges(), took.Seconds(), time.Since(t0).Seconds()-took.Seconds())
					return nil
				})
			}
		},
	}
}

func convertCmd() *Command {
	return &Command{
		Name:    "convert",
		Summary: "convert a dataset (OGB csv.gz, .mtx, edge list) to the binary .gnn format, optionally transforming it",
		Usage:   "--data IN --out OUT.gnn",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			df := addDatasetFlags(fs, "", "input dataset", "add the reverse of every edge (deduplicated); a .gnn output records that the graph is symmetric, so later commands need no --symmetrize",
				"features in the output: auto (sparse rows below "+fmt.Sprintf("%g", 100*graph.SparseDensity)+"% nonzeros), dense or csr; a .gnn file stores sparse rows in a sparse feature section")
			in := df.data
			out := fs.String("out", "", "output: .gnn binary file, .mtx[.gz] (Matrix Market adjacency only), or a directory for the OGB raw layout")
			dedupe := fs.Bool("dedupe", false, "remove duplicate edges")
			drop := fs.Bool("drop-self-loops", false, "remove self-loops")
			add := fs.Bool("add-self-loops", false, "add one self-loop per vertex")
			return func(env *Env) error {
				if *in == "" || *out == "" {
					return fmt.Errorf("convert: --data and --out are required")
				}
				ff, err := df.featureFormat("convert")
				if err != nil {
					return err
				}
				return collective.RankZero(env.Comm, func() error {
					t0 := time.Now()
					// A .gnn keeps float16 features float16 (half the bytes;
					// exact): the npz's node_feat, or a .gnn's section.
					d, err := graph.Load(*in, graph.ReadOptions{FeatureFormat: ff, KeepHalf: strings.HasSuffix(*out, ".gnn")})
					if err != nil {
						return err
					}
					read := time.Since(t0)
					symmetrized := *df.symmetrize && !d.Symmetric
					if *df.symmetrize {
						d = d.Symmetrized()
					}
					if checkDirection(env, *in, d, symmetrized) == 1 {
						d.Symmetric = true // WriteBinary records it without checking again
					}
					if *dedupe {
						d.Adj = graph.Dedupe(d.Adj)
					}
					if *drop {
						d.Adj = graph.DropSelfLoops(d.Adj)
					}
					if *add {
						d.Adj = graph.AddSelfLoops(d.Adj)
					}
					t1 := time.Now()
					if err := graph.Write(*out, d); err != nil {
						return err
					}
					feat := "no features"
					if d.HasFeatures() {
						feat = fmt.Sprintf("%d %s features (%.3g%% nonzero)", d.NumFeatures(), d.FeatureFormat(), 100*d.Density())
					}
					env.Printf("converted %s → %s: %d vertices, %d edges, %s (read %.2fs, wrote %.2fs)\n",
						*in, *out, d.NumNodes, d.NumEdges(), feat, read.Seconds(), time.Since(t1).Seconds())
					return nil
				})
			}
		},
	}
}

// genPapers runs `gen papers`: graph.WritePapers of o's parameters (the
// defaults of graph.DefaultPapers where o has none) to the directory out,
// on rank 0.
func genPapers(env *Env, o graph.GenOptions, testFrac float64, dtype, out string) error {
	if out == "" {
		return fmt.Errorf("gen: --out is required")
	}
	p := graph.DefaultPapers(o.Nodes)
	switch dtype {
	case "f32":
	case "f16":
		p.Half = true
	default:
		return fmt.Errorf("gen papers: --feature-dtype %q, want f32 or f16", dtype)
	}
	if o.Classes > 0 {
		p.Classes = o.Classes
	}
	if o.Degree > 0 {
		p.Degree = o.Degree
	}
	if o.Homophily >= 0 {
		p.Homophily = o.Homophily
	}
	if o.Features > 0 {
		p.Features = o.Features
	}
	if o.TrainFrac >= 0 {
		p.TrainFrac = o.TrainFrac
	}
	if o.ValidFrac >= 0 {
		p.ValidFrac = o.ValidFrac
	}
	if testFrac >= 0 {
		p.TestFrac = testFrac
	}
	p.Seed = o.Seed
	return collective.RankZero(env.Comm, func() error {
		t0 := time.Now()
		if err := graph.WritePapers(out, p); err != nil {
			return err
		}
		env.Printf("wrote %s: papers graph of %d vertices, %d features (%s), in %.2fs\n", out, p.Nodes, p.Features, dtype, time.Since(t0).Seconds())
		return nil
	})
}
