//go:build !nompi

package mpi

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"gnnmpi/collective"
)

// BenchmarkGradSum compares a float32 sum over the ranks by
// MPI_Allreduce (in place) with collective.SharedSum, for a vector of
// GNNMPI_BENCH_N elements (default 4.3M: SAGE's 17 MB of gradients on
// coauthor-physics). It runs only under mpirun, every rank with the same
// fixed count, e.g.
//
//	go test -c -o /tmp/mpi.test ./collective/mpi
//	mpirun -np 2 --bind-to none /tmp/mpi.test -test.run '^$' -test.bench GradSum -test.benchtime 50x
//
// Besides ns/op it reports the process's CPU milliseconds per sum
// (cpu-ms/op; user and system, all of the rank's threads) and the fastest
// single sum (best-ms), which a loaded machine disturbs less than the
// mean, and memcpy's over the same bytes for scale.
func BenchmarkGradSum(b *testing.B) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" && os.Getenv("PMI_SIZE") == "" {
		b.Skip("run under mpirun")
	}
	c, err := Init()
	if err != nil {
		b.Fatal(err)
	}
	n := 4_300_000
	if s := os.Getenv("GNNMPI_BENCH_N"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatal(err)
		}
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i%1000) / 7
	}
	y := make([]float32, n)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	run := func(b *testing.B, sum func() error) {
		if err := c.Barrier(); err != nil {
			b.Fatal(err)
		}
		c0 := cpu()
		best := time.Duration(1 << 62)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			if err := sum(); err != nil {
				b.Fatal(err)
			}
			best = min(best, time.Since(t0))
		}
		b.StopTimer()
		b.ReportMetric(float64(cpu()-c0)/1e6/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(best)/1e6, "best-ms")
		b.SetBytes(int64(4 * n))
	}
	b.Run("memcpy", func(b *testing.B) {
		run(b, func() error { copy(y, x); return nil })
	})
	b.Run("MPI_Allreduce", func(b *testing.B) {
		run(b, func() error { return collective.AllreduceSlice(c, x, collective.Sum) })
	})
	s, err := collective.NewSharedSum(c, n)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Free()
	b.Run("SharedSum", func(b *testing.B) {
		run(b, func() error { copy(s.Local(), x); return s.Sum() })
	})
	b.Run("SharedSum-nocopy", func(b *testing.B) {
		run(b, s.Sum)
	})
}
