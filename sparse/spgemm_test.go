package sparse

// Helpers kept for mul_test.go, which predates MulSR.

// flops returns the number of scalar products of A·B.
func flops(a, b *CSR) int64 {
	var f int64
	for _, k := range a.Indices {
		f += b.Indptr[k+1] - b.Indptr[k]
	}
	return f
}

// mul computes A·B on one goroutine with the dense accumulator (dense) or
// the hash accumulator for every general row; f is ignored.
func mul(a, b *CSR, f int64, dense bool) *CSR {
	_ = f
	o := &Options{Threads: 1, acc: accHash}
	if dense {
		o.acc = accDense
	}
	c, err := MulSR(PlusTimes[float64]{}, a, b, o)
	if err != nil {
		panic(err)
	}
	return c
}

// valueAt returns vals[p], or 1 for a pattern matrix (nil vals).
func valueAt(vals []float64, p int64) float64 {
	if vals == nil {
		return 1
	}
	return vals[p]
}
