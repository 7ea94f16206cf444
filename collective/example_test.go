package collective_test

import (
	"fmt"
	"time"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// Four in-process ranks sum a vector with Allreduce: every rank
// contributes its rank and its square, and every rank gets the same sums.
// The same function runs unchanged on the MPI backend under mpirun.
func Example() {
	sums := make([][]float64, 4)
	err := inproc.Run(4, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		r := float64(c.Rank())
		x := []float64{r, r * r}
		if err := collective.AllreduceSlice(c, x, collective.Sum); err != nil {
			return err
		}
		sums[c.Rank()] = x // each rank writes only its own slot
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for r, x := range sums {
		fmt.Printf("rank %d: %v\n", r, x)
	}
	// Output:
	// rank 0: [6 14]
	// rank 1: [6 14]
	// rank 2: [6 14]
	// rank 3: [6 14]
}
