package sparse_test

import (
	"fmt"

	"gnnmpi/sparse"
)

// ExampleMulSR counts walks and finds shortest paths of two hops in the
// weighted directed graph 0→1 (1), 0→2 (4), 1→2 (2), 2→0 (1).
func ExampleMulSR() {
	a := &sparse.CSR{NRows: 3, NCols: 3,
		Indptr:  []int64{0, 2, 3, 4},
		Indices: []int64{1, 2, 2, 0},
		Values:  []float64{1, 4, 2, 1},
	}
	pattern := &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices}

	walks, err := sparse.MulSR(sparse.PlusTimes[float64]{}, pattern, pattern, nil)
	if err != nil {
		panic(err)
	}
	dist, err := sparse.MulSR(sparse.MinPlus[float64]{}, a, a, &sparse.Options{Threads: 1})
	if err != nil {
		panic(err)
	}
	for i := range a.NRows {
		for p := dist.Indptr[i]; p < dist.Indptr[i+1]; p++ {
			fmt.Printf("%d→%d: %v walks, shortest %v\n", i, dist.Indices[p], walks.Values[p], dist.Values[p])
		}
	}
	// Output:
	// 0→0: 1 walks, shortest 5
	// 0→2: 1 walks, shortest 3
	// 1→0: 1 walks, shortest 3
	// 2→1: 1 walks, shortest 2
	// 2→2: 1 walks, shortest 5
}
