package spgemm_test

import (
	"fmt"
	"testing"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
)

// BenchmarkMul times A·A of a Graph500 R-MAT graph (edge factor 16, as in
// bench/spgemm) for each algorithm on p in-process ranks, one goroutine
// per local product. Scale 14 is the size of bench/spgemm.sh; run it with
// -bench 'Mul/scale=14'.
func BenchmarkMul(b *testing.B) {
	for _, scale := range []int{11, 14} {
		a, err := graph.RMAT(graph.DefaultRMAT(scale, 16))
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []int{1, 4} {
			pr, pc := collective.GridDims(p)
			for _, v := range []variant{{algo: "local"}, {algo: "1d"}, {algo: "1.5d", c: pr}, {algo: "1.5d", c: pr, staged: true}, {algo: "2d", pr: pr, pc: pc}, {algo: "2d", pr: pr, pc: pc, staged: true}} {
				if v.algo == "local" && p != 1 {
					continue
				}
				b.Run(fmt.Sprintf("scale=%d/%v/p=%d", scale, v, p), func(b *testing.B) {
					benchVariant(b, p, v, a)
				})
			}
		}
	}
}

func benchVariant(b *testing.B, p int, v variant, a *sparse.CSR) {
	sr := sparse.PlusTimes[float64]{}
	if v.algo == "local" {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := sparse.MulSR(sr, a, a, &sparse.Options{Threads: 1}); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	comms := inproc.New(p, inproc.Options{})
	setups := make([]*setup[float64], p)
	bytes := make([]int64, p)
	err := runAll(comms, func(c collective.Comm) error {
		cc := collective.WithStats(c, nil)
		s, err := prepare(cc, v, sr, a, a, nil)
		if err != nil {
			return err
		}
		setups[c.Rank()] = s
		if _, err := s.mul(); err != nil {
			return err
		}
		bytes[c.Rank()] = collective.SnapshotOf(cc).Phase(metrics.PhaseSpGEMM).SentBytes
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, x := range bytes {
		total += x
	}
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		if err := runAll(comms, func(c collective.Comm) error {
			_, err := setups[c.Rank()].mul()
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// runAll runs fn on every rank of comms concurrently.
func runAll(comms []*inproc.Comm, fn func(c collective.Comm) error) error {
	errs := make(chan error, len(comms))
	for _, c := range comms {
		go func() { errs <- fn(c) }()
	}
	var first error
	for range comms {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
