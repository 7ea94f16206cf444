package spgemm_test

import (
	"fmt"
	"strings"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// ExampleMul2D squares the adjacency matrix of the path 0–1–2–3 by SUMMA on
// a 2×2 grid of in-process ranks, counting two-step walks, and gathers the
// result on rank 0.
func ExampleMul2D() {
	a := &sparse.CSR{NRows: 4, NCols: 4,
		Indptr:  []int64{0, 1, 3, 5, 6},
		Indices: []int64{1, 0, 2, 1, 3, 2},
	}
	err := inproc.Run(4, inproc.Options{}, func(c collective.Comm) error {
		g, err := collective.NewGrid(c, 2, 2)
		if err != nil {
			return err
		}
		defer g.Free()
		d := spgemm.Distribute2D(g, a) // every rank holds a; no communication
		sq, err := spgemm.Mul2D(g, sparse.PlusTimes[float64]{}, d, d, nil)
		if err != nil {
			return err
		}
		full, err := spgemm.Gather(c, sq, 0)
		if err != nil || c.Rank() != 0 {
			return err
		}
		for i := range full.NRows {
			var row []string
			for q := full.Indptr[i]; q < full.Indptr[i+1]; q++ {
				row = append(row, fmt.Sprintf("(%d,%d) %v", i, full.Indices[q], full.Values[q]))
			}
			fmt.Println(strings.Join(row, "  "))
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// (0,0) 1  (0,2) 1
	// (1,1) 2  (1,3) 1
	// (2,0) 1  (2,2) 2
	// (3,1) 1  (3,3) 1
}
