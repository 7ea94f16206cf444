package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
)

func genCmd() *Command {
	return &Command{
		Name:    "gen",
		Summary: "generate a graph: rmat (Graph500 R-MAT) or sbm (planted partition with features, labels, split)",
		Usage:   "rmat|sbm --out PATH",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			out := fs.String("out", "", "output: a directory (OGB raw layout, csv.gz), a file ending in .gnn (binary), or .mtx[.gz] (Matrix Market adjacency only)")
			scale := fs.Int("scale", 14, "rmat: log2 of the number of vertices")
			ef := fs.Int("edgefactor", 16, "rmat: edges per vertex before symmetrization")
			directed := fs.Bool("directed", false, "rmat: keep the generated direction (default: symmetrize)")
			nodes := fs.Int64("nodes", 100000, "sbm: vertices")
			classes := fs.Int("classes", 0, "sbm: classes (0: default)")
			degree := fs.Float64("degree", 0, "sbm: mean degree (0: default)")
			homophily := fs.Float64("homophily", -1, "sbm: fraction of a vertex's edges within its class (-1: default)")
			features := fs.Int("features", 0, "sbm: feature dimension (0: default); rmat: add planted labels, features of this dimension and a random split (0: none)")
			trainFrac := fs.Float64("train-frac", -1, "sbm, rmat with --features: fraction of vertices in the training set (-1: default 0.6)")
			validFrac := fs.Float64("valid-frac", -1, "sbm, rmat with --features: fraction in the validation set (-1: default 0.2); the rest is the test set")
			seed := fs.Uint64("seed", 1, "random seed")
			return func(env *Env) error {
				args := fs.Args()
				if len(args) != 1 || (args[0] != "rmat" && args[0] != "sbm") {
					return fmt.Errorf("gen: want one generator, rmat or sbm, got %q", args)
				}
				if *out == "" {
					return fmt.Errorf("gen: --out is required")
				}
				return collective.RankZero(env.Comm, func() error {
					t0 := time.Now()
					var d *graph.Dataset
					switch args[0] {
					case "rmat":
						p := graph.DefaultRMAT(*scale, *ef)
						p.Seed, p.Directed = *seed, *directed
						env.Progress("generating R-MAT scale %d, edge factor %d", *scale, *ef)
						adj, err := graph.RMAT(p)
						if err != nil {
							return err
						}
						name := fmt.Sprintf("rmat-s%d-e%d", *scale, *ef)
						d = &graph.Dataset{Name: name, NumNodes: adj.NRows, Adj: adj}
						if *features > 0 {
							sp := planted(graph.DefaultSBM(adj.NRows), *classes, *features, *trainFrac, *validFrac, *seed)
							env.Progress("adding planted labels (%d classes) and %d features", sp.Classes, sp.Features)
							if d, err = graph.Planted(name, adj, sp); err != nil {
								return err
							}
						}
					case "sbm":
						p := planted(graph.DefaultSBM(*nodes), *classes, *features, *trainFrac, *validFrac, *seed)
						if *degree > 0 {
							p.AvgDegree = *degree
						}
						if *homophily >= 0 {
							p.Homophily = *homophily
						}
						env.Progress("generating SBM with %d vertices", *nodes)
						var err error
						if d, err = graph.SBM(p); err != nil {
							return err
						}
					}
					gen := time.Since(t0)
					env.Progress("generated %d vertices, %d edges in %.2fs; writing %s", d.NumNodes, d.NumEdges(), gen.Seconds(), *out)
					if err := writeDataset(*out, d); err != nil {
						return err
					}
					env.Printf("wrote %s: %d vertices, %d edges (generated in %.2fs, written in %.2fs)\n",
						*out, d.NumNodes, d.NumEdges(), gen.Seconds(), time.Since(t0).Seconds()-gen.Seconds())
					return nil
				})
			}
		},
	}
}

// writeDataset writes d as binary when path ends in .gnn, as a Matrix
// Market adjacency (topology only: features, labels and splits are not
// written) when it ends in .mtx or .mtx.gz, else as an OGB raw-layout
// directory.
func writeDataset(path string, d *graph.Dataset) error {
	switch {
	case strings.HasSuffix(path, ".gnn"):
		return graph.WriteBinary(path, d)
	case strings.HasSuffix(path, ".mtx"), strings.HasSuffix(path, ".mtx.gz"):
		return graph.WriteMatrixMarket(path, d.Adj)
	}
	return graph.WriteOGB(path, d)
}

func convertCmd() *Command {
	return &Command{
		Name:    "convert",
		Summary: "convert a dataset (OGB csv.gz, .mtx, edge list) to the binary .gnn format, optionally transforming it",
		Usage:   "--data IN --out OUT.gnn",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			in := fs.String("data", "", "input dataset")
			out := fs.String("out", "", "output: .gnn binary file, .mtx[.gz] (Matrix Market adjacency only), or a directory for the OGB raw layout")
			sym := fs.Bool("symmetrize", false, "add the reverse of every edge (deduplicated); a .gnn output records that the graph is symmetric, so later commands need no --symmetrize")
			dedupe := fs.Bool("dedupe", false, "remove duplicate edges")
			drop := fs.Bool("drop-self-loops", false, "remove self-loops")
			add := fs.Bool("add-self-loops", false, "add one self-loop per vertex")
			format := fs.String("feature-format", string(graph.FeatureAuto), "features in the output: auto (sparse rows below "+fmt.Sprintf("%g", 100*graph.SparseDensity)+"% nonzeros), dense or csr; a .gnn file stores sparse rows in a sparse feature section")
			return func(env *Env) error {
				if *in == "" || *out == "" {
					return fmt.Errorf("convert: --data and --out are required")
				}
				ff, err := graph.ParseFeatureFormat(*format)
				if err != nil {
					return fmt.Errorf("convert: %w", err)
				}
				return collective.RankZero(env.Comm, func() error {
					t0 := time.Now()
					d, err := graph.Load(*in, graph.ReadOptions{FeatureFormat: ff})
					if err != nil {
						return err
					}
					read := time.Since(t0)
					symmetrized := *sym && !d.Symmetric
					if *sym {
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
					if err := writeDataset(*out, d); err != nil {
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

// planted returns p with the flags that set classes, features, split
// fractions and seed applied (0 or −1: keep p's).
func planted(p graph.SBMParams, classes, features int, trainFrac, validFrac float64, seed uint64) graph.SBMParams {
	p.Seed = seed
	if classes > 0 {
		p.Classes = classes
	}
	if features > 0 {
		p.Features = features
	}
	if trainFrac >= 0 {
		p.TrainFrac = trainFrac
	}
	if validFrac >= 0 {
		p.ValidFrac = validFrac
	}
	return p
}
