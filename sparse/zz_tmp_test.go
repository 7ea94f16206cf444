package sparse_test

import (
	"testing"
	"time"

	"gnnmpi/graph"
	"gnnmpi/sparse"
)

func TestZZTmp(t *testing.T) {
	for _, s := range []int{14, 16} {
		a, err := graph.RMAT(graph.DefaultRMAT(s, 16))
		if err != nil {
			t.Fatal(err)
		}
		var f, maxd int64
		for i := range a.NRows {
			d := a.Degree(i)
			f += d * d
			maxd = max(maxd, d)
		}
		t.Logf("scale %d n=%d nnz=%d flops=%d maxdeg=%d", s, a.NRows, a.NNZ(), f, maxd)
		if s == 14 {
			a.Values = make([]float64, a.NNZ())
			for i := range a.Values {
				a.Values[i] = 1
			}
			t0 := time.Now()
			c, _ := sparse.Mul(a, a)
			t.Logf("Mul %v nnzC=%d", time.Since(t0), c.NNZ())
		}
	}
}
