package cli

import (
	"flag"
	"fmt"
	"os"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/train"
)

func partitionCmd() *Command {
	return &Command{
		Name:    "partition",
		Summary: "partition a dataset's vertices (block, random, METIS, or PT-Scotch over all ranks); write a partitioned dataset and/or the partition book",
		Usage:   "--data PATH --parts K --out DIR | --book FILE",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			df := addDatasetFlags(fs, "data/cora", "dataset", symmetrizeUsage+"; METIS partitions the symmetrized graph either way, but the edge cut reported counts the edges loaded",
				featureFormatUsage+"; how the part files store the features")
			parts := fs.Int("parts", 0, "number of parts (default: number of ranks)")
			method := fs.String("method", string(partition.MethodMetis), "block, random, metis (rank 0, whole graph in memory), ptscotch (distributed under mpirun: every rank reads 1/p of the rows of a binary dataset or 1/p of the edges of OGB's binary layout, and --out writes the parts from them), or a partition book file; block on more than one rank with a binary dataset, or on any number with OGB's binary layout, is distributed like ptscotch")
			imbalance := fs.Float64("imbalance", 0, "ptscotch: allowed part size over the mean, minus 1 (0: 0.03)")
			checkGraph := fs.Bool("check-graph", false, "ptscotch: verify the symmetrized graph with SCOTCH_dgraphCheck before partitioning")
			split := fs.String("split", "", "split whose train/valid/test vertices METIS balances (default: the dataset's first; \"none\" balances vertices only)")
			edges := fs.Bool("balance-edges", false, "metis: balance the parts' stored edges too (each vertex weighs its degree), for power-law graphs whose hubs would crowd one part")
			seed := fs.Uint64("seed", 1, "random seed")
			out := fs.String("out", "", "directory to write the partitioned dataset to: relabelled vertices, one .gnn file per part and manifest.json")
			bookPath := fs.String("book", "", "partition book to write (.gz for gzip), for --partition of train, info and fetch")
			return func(env *Env) error {
				k := *parts
				given := false
				fs.Visit(func(f *flag.Flag) { given = given || f.Name == "parts" })
				if given && k < 1 {
					return fmt.Errorf("partition: --parts %d: want at least 1 part", k)
				}
				if k == 0 {
					k = env.Comm.Size()
				}
				if *out == "" && *bookPath == "" {
					return fmt.Errorf("partition: --out DIR or --book FILE is required")
				}
				ff, err := df.featureFormat("partition")
				if err != nil {
					return err
				}
				o := partitionOptions{data: *df.data, parts: k, method: partition.Method(*method), split: *split, seed: *seed, symmetrize: *df.symmetrize,
					edges: *edges, out: *out, book: *bookPath, format: ff}
				// PT-Scotch, blocks of a binary dataset on more than one
				// rank and blocks of OGB's binary layout partition and
				// write from the ranks' row blocks: no rank holds the
				// whole graph.
				if o.method == partition.MethodPTScotch || (o.method == partition.MethodBlock && (env.Comm.Size() > 1 && binaryFile(o.data) || ogbBinaryDir(o.data))) {
					if o.method == partition.MethodPTScotch && *split != "" && *split != "none" {
						return fmt.Errorf("partition: --method ptscotch balances vertex counts only; --split %q needs --method metis", *split)
					}
					return runDistPartition(env, distOptions{partitionOptions: o, imbalance: *imbalance, check: *checkGraph})
				}
				return collective.RankZero(env.Comm, func() error { return runPartition(env, o) })
			}
		},
	}
}

// partitionOptions are the flags of `gnnmpi partition`.
type partitionOptions struct {
	data       string
	parts      int
	method     partition.Method // or a book file's path
	split      string
	seed       uint64
	symmetrize bool
	edges      bool // METIS balances the stored edges too
	out, book  string
	format     graph.FeatureFormat
}

func runPartition(env *Env, o partitionOptions) error {
	k := o.parts
	if k < 1 {
		return fmt.Errorf("partition: --parts %d < 1", k)
	}
	// The features are needed only for the partitioned dataset.
	// Float16 features stay float16 in the parts (half the bytes).
	d, err := graph.Load(o.data, graph.ReadOptions{NoFeatures: o.out == "", FeatureFormat: o.format, KeepHalf: true})
	if err != nil {
		return err
	}
	symmetrized := o.symmetrize && !d.Symmetric
	if o.symmetrize {
		d = d.Symmetrized()
	}
	checkDirection(env, o.data, d, symmetrized)
	split := o.split
	if split == "" {
		split, _, _ = d.DefaultSplit()
	} else if split == "none" {
		split = ""
	} else if _, ok := d.Splits[split]; !ok {
		return fmt.Errorf("partition: %s has no split %q (have %v)", o.data, split, d.SplitNames())
	}
	if int64(k) > d.NumNodes {
		return fmt.Errorf("partition: --parts %d is more than the %d vertices of %s: every part needs one", k, d.NumNodes, o.data)
	}
	t0 := time.Now()
	var b *partition.Book
	switch o.method {
	case partition.MethodBlock:
		b = partition.Block(d.NumNodes, k)
	case partition.MethodRandom:
		b = partition.Random(d.NumNodes, k, o.seed)
	case partition.MethodMetis:
		if b, err = graph.MetisPartitionOpts(d, k, graph.MetisOptions{Split: split, Edges: o.edges, Seed: int(o.seed), Fits: train.MetisFits(env.Comm.Rank(), "--method", env.Progress)}); err != nil {
			return err
		}
	default:
		if _, err := os.Stat(string(o.method)); err != nil {
			return fmt.Errorf("partition: --method %q is neither block, random, metis, ptscotch nor a readable partition book: %w", o.method, err)
		}
		if b, err = partition.Read(string(o.method)); err != nil {
			return err
		}
		if b.Parts != k || b.NumNodes() != d.NumNodes {
			return fmt.Errorf("partition: book %s has %d parts over %d vertices; want %d parts over the %d vertices of %s", o.method, b.Parts, b.NumNodes(), k, d.NumNodes, o.data)
		}
	}
	took := time.Since(t0)
	cut := b.EdgeCut(d.Adj)
	env.Printf("partitioned %s into %d parts with %s in %.2fs: edge cut %d of %d (%.1f%%), sizes %v\n",
		o.data, k, o.method, took.Seconds(), cut, d.NumEdges(), 100*float64(cut)/float64(max(d.NumEdges(), 1)), b.Sizes())
	env.Printf("edges per part (max/mean) %.3f%s\n", b.EdgeBalance(d.Adj), map[bool]string{true: " (balanced with --balance-edges)"}[o.edges])
	if s, ok := d.Splits[split]; ok && split != "" {
		bal := b.Balance(partition.Mask(d.NumNodes, s.Train), partition.Mask(d.NumNodes, s.Valid), partition.Mask(d.NumNodes, s.Test))
		env.Printf("balance (max/mean) of split %s: train %.3f, valid %.3f, test %.3f\n", split, bal[0], bal[1], bal[2])
	}
	if o.book != "" {
		if err := partition.Write(o.book, b); err != nil {
			return err
		}
		env.Printf("wrote %s\n", o.book)
	}
	if o.out != "" {
		env.Progress("writing the %d parts of %s to %s", k, o.data, o.out)
		m, err := graph.WriteParts(o.out, d, b, string(o.method), env.Progress)
		if err != nil {
			return err
		}
		reportParts(env, o.out, m)
	}
	return nil
}

// reportParts prints what a partitioned dataset written to dir holds.
func reportParts(env *Env, dir string, m *graph.PartManifest) {
	env.Printf("wrote %s: %d parts, %d bytes, %s features\n", dir, m.Parts, manifestBytes(m), featureFormatName(m.FeatureFormat))
}

// manifestBytes returns the bytes of a partitioned dataset's part files.
func manifestBytes(m *graph.PartManifest) int64 {
	var bytes int64
	for _, f := range m.Files {
		bytes += f.Bytes
	}
	return bytes
}

// featureFormatName names a stored feature format, "no" without features.
func featureFormatName(f graph.FeatureFormat) string {
	if f == "" {
		return "no"
	}
	return string(f)
}
