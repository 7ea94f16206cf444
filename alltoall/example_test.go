package alltoall_test

import (
	"fmt"
	"log"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/partition"
)

// ExampleFetch runs two in-process ranks over six vertices split in blocks
// (rank 0 owns 0–2, rank 1 owns 3–5). The features of vertex v are (v, 10v).
// Each rank fetches some rows, repeats and its own rows included, and only
// the distinct rows owned by the other rank cross between them.
func ExampleFetch() {
	book := partition.Block(6, 2)
	want := [][]int64{{4, 0, 4, 5}, {1}}
	results := make([]*dense.Matrix, 2)
	err := inproc.Run(2, inproc.Options{}, func(c collective.Comm) error {
		c = collective.WithStats(c, nil)
		owned := book.Owned(c.Rank())
		local := dense.New(len(owned), 2)
		for lid, gid := range owned {
			copy(local.Row(lid), []float32{float32(gid), float32(10 * gid)})
		}
		x, err := alltoall.Fetch(c, want[c.Rank()], book, local)
		results[c.Rank()] = x
		a2a := collective.SnapshotOf(c)["fetch"]["alltoallv"]
		fmt.Printf("rank %d: %d calls, sent %d bytes\n", c.Rank(), a2a.Calls, a2a.SentBytes)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	for r, x := range results {
		for i, gid := range want[r] {
			fmt.Printf("rank %d: vertex %d → %v\n", r, gid, x.Row(i))
		}
	}
	// Rank 0 sends 8 (its count) + 2·8 (ids 4 and 5) + 1·2·4 (row of 1)
	// = 32 bytes; rank 1 sends 8 + 1·8 + 2·2·4 = 32 bytes.

	// Unordered output:
	// rank 0: 3 calls, sent 32 bytes
	// rank 1: 3 calls, sent 32 bytes
	// rank 0: vertex 4 → [4 40]
	// rank 0: vertex 0 → [0 0]
	// rank 0: vertex 4 → [4 40]
	// rank 0: vertex 5 → [5 50]
	// rank 1: vertex 1 → [1 10]
}
