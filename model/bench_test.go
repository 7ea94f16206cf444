package model

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
)

// Training-path shapes: a minibatch of 8192 destinations; 1433 input
// features (Cora/Citeseer scale), 256 hidden, and a wide 8415-feature input.
var gemmShapes = []struct{ m, k, n int }{
	{8192, 1433, 256},
	{8192, 256, 256},
	{8192, 8415, 256},
}

// BenchmarkGEMM measures raw Sgemm C = A·B (row-major, no transposes).
func BenchmarkGEMM(b *testing.B) {
	for _, bi := range blasImpls {
		impl := blasOrDefault(bi.impl)
		for _, s := range gemmShapes {
			b.Run(fmt.Sprintf("impl=%s/m=%d/k=%d/n=%d", bi.name, s.m, s.k, s.n), func(b *testing.B) {
				rnd := testRNG(1)
				a := randMatrix(rnd, s.m, s.k)
				w := randMatrix(rnd, s.k, s.n)
				c := dense.New(s.m, s.n)
				b.ReportAllocs()
				for b.Loop() {
					gemm(impl, blas.NoTrans, blas.NoTrans, s.m, s.n, s.k, 1, a.Data, w.Data, 0, c.Data)
				}
				b.ReportMetric(2*float64(s.m)*float64(s.k)*float64(s.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// BenchmarkSAGELayer measures Forward+Backward of one SAGE layer on a
// random block of 8192 destinations with 10 neighbours each drawn from
// 16384 sources. GFLOP/s counts only the dense part (2·m·k·n per GEMM: two
// in Forward, two for the weight gradients, two more for dL/dx when dx=true)
// over the whole layer time, for comparison with BenchmarkGEMM.
func BenchmarkSAGELayer(b *testing.B) {
	const nd, ns, deg = 8192, 16384, 10
	for _, bi := range blasImpls {
		for _, s := range []struct {
			fin, fout int
			dx        bool
		}{
			{1433, 256, false}, // input layer
			{256, 256, true},   // hidden layer
			{8415, 256, false}, // wide input layer
		} {
			name := fmt.Sprintf("impl=%s/dst=%d/src=%d/deg=%d/fin=%d/fout=%d/dx=%t", bi.name, nd, ns, deg, s.fin, s.fout, s.dx)
			b.Run(name, func(b *testing.B) {
				rnd := testRNG(2)
				a := randBlock(rnd, nd, ns, 2*deg) // degrees uniform in [0, 20], mean ≈ 10
				x := randMatrix(rnd, ns, s.fin)
				layer := NewSAGE(s.fin, s.fout, false, rnd, bi.impl)
				dy := randMatrix(rnd, nd, s.fout)
				gemms := 4.0
				if s.dx {
					gemms = 6
				}
				b.ReportAllocs()
				for b.Loop() {
					layer.Forward(a, x, true, nil)
					layer.Backward(dy, s.dx)
				}
				flops := gemms * 2 * float64(nd) * float64(s.fin) * float64(s.fout)
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				b.ReportMetric(float64(a.NNZ())*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
			})
		}
	}
}
