package sparse_test

import (
	"os"
	"runtime/pprof"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gnnmpi/graph"
	"gnnmpi/sparse"
)

func TestZZProf(t *testing.T) {
	s, _ := strconv.Atoi(os.Getenv("PSCALE"))
	if s == 0 {
		t.Skip()
	}
	th, _ := strconv.Atoi(os.Getenv("TH"))
	reps, _ := strconv.Atoi(os.Getenv("REPS"))
	a, _ := graph.RMAT(graph.DefaultRMAT(s, 16))
	a.Values = make([]float64, a.NNZ())
	for i := range a.Values {
		a.Values[i] = 1
	}
	run := func() {
		var r0, r1 syscall.Rusage
		syscall.Getrusage(0, &r0)
		t0 := time.Now()
		c, _ := sparse.MulSR(sparse.PlusTimes[float64]{}, a, a, &sparse.Options{Threads: th})
		el := time.Since(t0)
		syscall.Getrusage(0, &r1)
		t.Logf("threads %d: %v user %v sys %v nnzC=%d", th, el, time.Duration(r1.Utime.Nano()-r0.Utime.Nano()), time.Duration(r1.Stime.Nano()-r0.Stime.Nano()), c.NNZ())
	}
	run()
	if p := os.Getenv("PROF"); p != "" {
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	for range reps {
		run()
	}
}
