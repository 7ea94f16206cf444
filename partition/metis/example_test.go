package metis_test

import (
	"fmt"

	"gnnmpi/partition/metis"
)

func ExamplePartGraph() {
	// Two triangles {0,1,2} and {3,4,5} joined by the edge 2–3, in CSR
	// form with both directions of every edge.
	xadj := []int64{0, 2, 4, 7, 10, 12, 14}
	adjncy := []int64{
		1, 2, // 0
		0, 2, // 1
		0, 1, 3, // 2
		2, 4, 5, // 3
		3, 5, // 4
		3, 4, // 5
	}
	part, edgecut, err := metis.PartGraph(xadj, adjncy, nil, 1, 2, metis.Options{Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("edge cut:", edgecut)
	fmt.Println("triangles apart:", part[0] == part[1] && part[1] == part[2] &&
		part[3] == part[4] && part[4] == part[5] && part[0] != part[3])
	// Output:
	// edge cut: 1
	// triangles apart: true
}
