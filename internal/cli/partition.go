package cli

import (
	"flag"
	"fmt"
	"time"

	"gnnmpi/graph"
	"gnnmpi/partition"
)

func partitionCmd() *Command {
	return &Command{
		Name:    "partition",
		Summary: "partition a dataset's vertices (block, random, METIS, or PT-Scotch over all ranks) and write the partition book",
		Usage:   "--data PATH --parts K --out BOOK",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			data := fs.String("data", "data/cora", "dataset")
			parts := fs.Int("parts", 0, "number of parts (default: number of ranks)")
			method := fs.String("method", "metis", "block, random, metis (rank 0, whole graph in memory) or ptscotch (distributed under mpirun: every rank reads 1/p of the rows of a binary dataset)")
			imbalance := fs.Float64("imbalance", 0, "ptscotch: allowed part size over the mean, minus 1 (0: 0.03)")
			checkGraph := fs.Bool("check-graph", false, "ptscotch: verify the symmetrized graph with SCOTCH_dgraphCheck before partitioning")
			split := fs.String("split", "", "split whose train/valid/test vertices METIS balances (default: the dataset's first; \"none\" balances vertices only)")
			seed := fs.Uint64("seed", 1, "random seed")
			out := fs.String("out", "", "partition book to write (.gz for gzip)")
			sym := fs.Bool("symmetrize", false, symmetrizeUsage+"; METIS partitions the symmetrized graph either way, but the edge cut reported counts the edges loaded")
			return func(env *Env) error {
				k := *parts
				if k == 0 {
					k = env.Comm.Size()
				}
				if *out == "" {
					return fmt.Errorf("partition: --out is required")
				}
				if *method == "ptscotch" {
					if *split != "" && *split != "none" {
						return fmt.Errorf("partition: --method ptscotch balances vertex counts only; --split %q needs --method metis", *split)
					}
					return runDistPartition(env, *data, k, *method, *seed, *sym, *imbalance, *checkGraph, *out)
				}
				return RankZero(env.Comm, func() error { return runPartition(env, *data, k, *method, *split, *seed, *sym, *out) })
			}
		},
	}
}

func runPartition(env *Env, data string, k int, method, split string, seed uint64, symmetrize bool, out string) error {
	if k < 1 {
		return fmt.Errorf("partition: --parts %d < 1", k)
	}
	d, err := graph.Load(data, graph.ReadOptions{NoFeatures: true})
	if err != nil {
		return err
	}
	symmetrized := symmetrize && !d.Symmetric
	if symmetrize {
		d = d.Symmetrized()
	}
	checkDirection(env, data, d, symmetrized)
	if split == "" {
		split, _, _ = d.DefaultSplit()
	} else if split == "none" {
		split = ""
	} else if _, ok := d.Splits[split]; !ok {
		return fmt.Errorf("partition: %s has no split %q (have %v)", data, split, d.SplitNames())
	}
	t0 := time.Now()
	var b *partition.Book
	switch method {
	case "block":
		b = partition.Block(d.NumNodes, k)
	case "random":
		b = partition.Random(d.NumNodes, k, seed)
	case "metis":
		if b, err = graph.MetisPartition(d, k, split, int(seed)); err != nil {
			return err
		}
	default:
		return fmt.Errorf("partition: unknown --method %q (want block, random, metis or ptscotch)", method)
	}
	took := time.Since(t0)
	if err := partition.Write(out, b); err != nil {
		return err
	}
	cut := b.EdgeCut(d.Adj)
	env.Printf("partitioned %s into %d parts with %s in %.2fs: edge cut %d of %d (%.1f%%), sizes %v\n",
		data, k, method, took.Seconds(), cut, d.NumEdges(), 100*float64(cut)/float64(max(d.NumEdges(), 1)), b.Sizes())
	if s, ok := d.Splits[split]; ok && split != "" {
		bal := b.Balance(mask(d.NumNodes, s.Train), mask(d.NumNodes, s.Valid), mask(d.NumNodes, s.Test))
		env.Printf("balance (max/mean) of split %s: train %.3f, valid %.3f, test %.3f\n", split, bal[0], bal[1], bal[2])
	}
	env.Printf("wrote %s\n", out)
	return nil
}

func mask(n int64, ids []int64) []bool {
	m := make([]bool, n)
	for _, v := range ids {
		m[v] = true
	}
	return m
}
