package model_test

import (
	"fmt"

	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

func Example() {
	// A 4-vertex path 0–1–2–3 as one full-neighbourhood block (NDst = NSrc = 4),
	// used for both layers; two features, two classes (ends vs middle).
	a := &sparse.CSR{
		NRows: 4, NCols: 4,
		Indptr:  []int64{0, 1, 3, 5, 6},
		Indices: []int64{1, 0, 2, 1, 3, 2},
	}
	x := &dense.Matrix{Rows: 4, Cols: 2, Data: []float32{1, 0, 0, 1, 0, 1, 1, 0}}
	labels := []int32{0, 1, 1, 0}

	// Every rank seeding rng.New(seed, stream) alike builds the same weights;
	// nil selects gonum's pure Go BLAS (main passes OpenBLAS).
	m, err := model.New(model.Config{Kind: "sage", In: 2, Hidden: 8, Out: 2, Layers: 2}, rng.New(1, 0), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	opt := model.NewAdam(0.05, 0)
	blocks := []*sparse.CSR{a, a}
	var first, loss float64
	for step := range 50 {
		m.ZeroGrad()
		var dlogits *dense.Matrix
		loss, dlogits = model.SoftmaxCrossEntropy(m.Forward(blocks, x, true, rng.New(1, 1)), labels)
		if step == 0 {
			first = loss
		}
		m.Backward(dlogits)
		// Across ranks: buf = m.FlattenGrads(buf); Allreduce(buf); m.SetGrads(buf).
		opt.Step(m.Params())
	}
	logits := m.Forward(blocks, x, false, nil)
	fmt.Println("parameters:", m.NumParams()) // (2·8·2 + 8) + (8·2·2 + 2)
	fmt.Println("loss fell:", loss < first/2)
	fmt.Println("correct:", model.Correct(logits, labels), "of", len(labels))
	// Output:
	// parameters: 74
	// loss fell: true
	// correct: 4 of 4
}
