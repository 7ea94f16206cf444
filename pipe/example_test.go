package pipe_test

import (
	"fmt"

	"gnnmpi/pipe"
	"gnnmpi/sparse"
)

// A plan of a 6-vertex path graph in 2 parts of 2 chunks each, the layers
// of a 3-layer model over a pipeline of 2 stages, and the schedule that
// pipeline runs: the forwards of every chunk, chunk 0 first, then the
// backwards in reverse chunk order. The schedule is pure: it is printed
// here, simulated by the tests, and executed by the trainer.
func Example() {
	// The undirected path 0–1–2–3–4–5.
	var rows, cols []int64
	for v := int64(0); v < 5; v++ {
		rows, cols = append(rows, v, v+1), append(cols, v+1, v)
	}
	adj, err := sparse.FromCOO(6, 6, rows, cols, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	part := []int32{0, 0, 0, 1, 1, 1}
	chunk := []int32{0, 0, 1, 0, 1, 1}
	plan, err := pipe.NewPlan(adj, part, chunk, 2, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("members:", plan.Members)

	l := pipe.Layout{Stages: 2, Pipelines: 2}
	for r := range l.Ranks() {
		lo, hi := pipe.Layers(3, l.Stages, l.Stage(r))
		fmt.Printf("rank %d: pipeline %d stage %d layers [%d, %d)\n", r, l.Pipeline(r), l.Stage(r), lo, hi)
	}

	steps, err := pipe.Schedule(l.Stages, plan.Chunks)
	if err != nil {
		fmt.Println(err)
		return
	}
	for s, st := range steps {
		fmt.Printf("stage %d:\n", s)
		for _, step := range st {
			fmt.Printf("\t%v\n", step)
		}
	}
	// Output:
	// members: [[0 1 2] [3 4 5]]
	// rank 0: pipeline 0 stage 0 layers [1, 3)
	// rank 1: pipeline 0 stage 1 layers [3, 4)
	// rank 2: pipeline 1 stage 0 layers [1, 3)
	// rank 3: pipeline 1 stage 1 layers [3, 4)
	// stage 0:
	// 	fwd mb 0
	// 	send-act mb 0 stage 1
	// 	fwd mb 1
	// 	send-act mb 1 stage 1
	// 	recv-grad mb 1 stage 1
	// 	bwd mb 1
	// 	recv-grad mb 0 stage 1
	// 	bwd mb 0
	// stage 1:
	// 	recv-act mb 0 stage 0
	// 	fwd mb 0
	// 	recv-act mb 1 stage 0
	// 	fwd mb 1
	// 	bwd mb 1
	// 	send-grad mb 1 stage 0
	// 	bwd mb 0
	// 	send-grad mb 0 stage 0
}
