package sampling_test

import (
	"fmt"
	"log"

	"gnnmpi/sampling"
	"gnnmpi/sparse"
)

// ExampleNodeWise samples a two-layer minibatch from a ring of eight
// vertices with chords, with fanouts 2 (output layer) and 1 (input layer).
func ExampleNodeWise() {
	// Vertex v is joined to v±1 and v+4 (mod 8): every vertex has degree 3.
	var rows, cols []int64
	for v := range int64(8) {
		for _, d := range []int64{1, 7, 4} {
			rows = append(rows, v)
			cols = append(cols, (v+d)%8)
		}
	}
	adj, err := sparse.FromCOO(8, 8, rows, cols, nil)
	if err != nil {
		log.Fatal(err)
	}
	s, err := sampling.NewNodeWise(adj, []int{2, 1})
	if err != nil {
		log.Fatal(err)
	}
	// One minibatch, seeds 0 and 5, with key 1.
	ms, err := s.Sample([][]int64{{0, 5}}, []uint64{1})
	if err != nil {
		log.Fatal(err)
	}
	m := ms[0]
	for l, b := range m.Blocks {
		fmt.Printf("block %d: dst %v src %v\n", l, b.Dst, b.Src)
		for i, v := range b.Dst {
			fmt.Printf("  %d ←", v)
			for _, j := range b.Adj.Row(int64(i)) {
				fmt.Printf(" %d", b.Src[j])
			}
			fmt.Println()
		}
	}
	fmt.Println("fetch features of", m.Input())
	// Output:
	// block 0: dst [0 5 1 4] src [0 5 1 4 6 2 3]
	//   0 ← 4
	//   5 ← 6
	//   1 ← 2
	//   4 ← 3
	// block 1: dst [0 5] src [0 5 1 4]
	//   0 ← 1 4
	//   5 ← 1 4
	// fetch features of [0 5 1 4 6 2 3]
}
