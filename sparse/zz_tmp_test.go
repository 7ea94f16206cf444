package sparse_test

import (
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gnnmpi/graph"
	"gnnmpi/sparse"
)

func TestZZTmp(t *testing.T) {
	s, _ := strconv.Atoi(os.Getenv("SCALE"))
	if s == 0 {
		t.Skip()
	}
	a, err := graph.RMAT(graph.DefaultRMAT(s, 16))
	if err != nil {
		t.Fatal(err)
	}
	a.Values = make([]float64, a.NNZ())
	for i := range a.Values {
		a.Values[i] = 1
	}
	for _, th := range []int{1, 2, 1, 2} {
		var r0, r1 syscall.Rusage
		syscall.Getrusage(0, &r0)
		t0 := time.Now()
		c, _ := sparse.MulSR(sparse.PlusTimes[float64]{}, a, a, &sparse.Options{Threads: th})
		el := time.Since(t0)
		syscall.Getrusage(0, &r1)
		t.Logf("threads %d: %v user %v sys %v nnzC=%d", th, el, time.Duration(r1.Utime.Nano()-r0.Utime.Nano()), time.Duration(r1.Stime.Nano()-r0.Stime.Nano()), c.NNZ())
	}
}

func BenchmarkZZ(b *testing.B) {
	s, _ := strconv.Atoi(os.Getenv("SCALE"))
	th, _ := strconv.Atoi(os.Getenv("TH"))
	a, _ := graph.RMAT(graph.DefaultRMAT(s, 16))
	a.Values = make([]float64, a.NNZ())
	for i := range a.Values {
		a.Values[i] = 1
	}
	for b.Loop() {
		sparse.MulSR(sparse.PlusTimes[float64]{}, a, a, &sparse.Options{Threads: th})
	}
}
