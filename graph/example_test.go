package graph_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"gnnmpi/graph"
)

// ExampleReadOGB reads Cora in the OGB raw layout, converts it to the
// binary format and maps it back.
func ExampleReadOGB() {
	d, err := graph.ReadOGB("../data/cora", graph.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	s := d.Splits["planetoid"]
	fmt.Printf("%s: %d nodes, %d edges, %d features, %d classes\n",
		d.Name, d.NumNodes, d.NumEdges(), d.NumFeatures(), d.NumClasses)
	fmt.Printf("planetoid split: %d/%d/%d\n", len(s.Train), len(s.Valid), len(s.Test))

	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cora.gnnb")
	if err := graph.WriteBinary(path, d); err != nil {
		log.Fatal(err)
	}
	b, m, err := graph.OpenBinary(path, graph.ReadOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close() // b is invalid after this
	fmt.Println("binary:", b.NumNodes, b.NumEdges(), b.NumFeatures())

	// Output:
	// cora: 2708 nodes, 10556 edges, 1433 features, 7 classes
	// planetoid split: 140/500/1000
	// binary: 2708 10556 1433
}

// ExampleReadOGB_partial loads only the rows a rank owns: here rank 1 of 4
// in a block partition.
func ExampleReadOGB_partial() {
	const p, rank, n = 4, 1, 2708
	lo, hi := int64(rank*n/p), int64((rank+1)*n/p)
	d, err := graph.ReadOGB("../data/cora", graph.ReadOptions{
		Keep: func(gid int64) bool { return gid >= lo && gid < hi },
	})
	if err != nil {
		log.Fatal(err)
	}
	// Cora's 0/1 bag-of-words features (1.3% nonzero) are held as a
	// sparse pattern matrix by default (FeatureAuto).
	fmt.Println(len(d.Rows), d.Rows[0], d.Adj.NRows, d.Adj.NCols, d.FeatCSR.NRows, len(d.Labels))
	fmt.Println(d.FeatureFormat(), d.FeatCSR.Values == nil)

	// Output:
	// 677 677 677 2708 677 677
	// csr true
}

// ExampleSymmetrize makes a directed graph undirected and adds self-loops,
// as GCN's Â = A + I.
func ExampleSymmetrize() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "g.txt")
	if err := os.WriteFile(path, []byte("# a path 0→1→2\n0 1\n1 2\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	a, err := graph.ReadEdgeList(path)
	if err != nil {
		log.Fatal(err)
	}
	s := graph.AddSelfLoops(graph.Symmetrize(a))
	for i := int64(0); i < s.NRows; i++ {
		fmt.Println(i, s.Row(i))
	}

	// Output:
	// 0 [0 1]
	// 1 [0 1 2]
	// 2 [1 2]
}
