package model

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/sparse"
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
		impl := dense.BLASOrDefault(bi.impl)
		for _, s := range gemmShapes {
			b.Run(fmt.Sprintf("impl=%s/m=%d/k=%d/n=%d", bi.name, s.m, s.k, s.n), func(b *testing.B) {
				rnd := testRNG(1)
				a := randMatrix(rnd, s.m, s.k)
				w := randMatrix(rnd, s.k, s.n)
				c := dense.New(s.m, s.n)
				b.ReportAllocs()
				for b.Loop() {
					dense.Gemm(impl, blas.NoTrans, blas.NoTrans, s.m, s.n, s.k, 1, a.Data, w.Data, 0, c.Data)
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

// Deep-stack shapes: one rank's block of a full-graph run, scaled down from
// a 1M-vertex SBM at 4 ranks (250k destinations, 575k sources with the
// halo, about 11 entries per row with the self-loop) by 12.5, hidden 16 and
// the GCNII depth of 32.
const (
	deepND, deepNS, deepDeg = 20000, 46000, 20 // degrees uniform in [0, 20]
	deepW, deepLayers       = 16, 32
)

// deepRun is a 32-layer stack of one Conv kind on one block, driven the way
// pipe's Trainer drives it: every layer gets a new input matrix, the
// destinations' rows of the previous output followed by fixed halo rows.
type deepRun struct {
	a          *sparse.CSR
	blk        *Block // a, shared by every layer
	convs      []Conv
	h0, halo   *dense.Matrix
	dy         *dense.Matrix
	kind       string
	nd, ns, w  int
	lastOutput *dense.Matrix
}

func newDeepRun(kind string) *deepRun {
	rnd := testRNG(400)
	cfg := DeepConfig{Kind: kind, Hidden: deepW, Layers: deepLayers, Alpha: 0.1, Lambda: 0.5}
	r := &deepRun{kind: kind, nd: deepND, ns: deepNS, w: deepW}
	if kind == ConvSAGE {
		r.a = randBlock(rnd, deepND, deepNS, deepDeg)
	} else {
		r.a = gcnBlock(rnd, deepND, deepNS, deepDeg)
	}
	r.blk = NewBlock(r.a)
	for l := 1; l <= deepLayers; l++ {
		r.convs = append(r.convs, NewConv(cfg, l, rnd, nil))
	}
	r.h0 = randMatrix(rnd, deepND, deepW)
	r.halo = randMatrix(rnd, deepNS-deepND, deepW)
	r.dy = randMatrix(rnd, deepND, deepW)
	return r
}

// forward runs every layer; the stack's caches are then live until backward.
func (r *deepRun) forward() {
	u := r.h0
	for _, c := range r.convs {
		x := dense.New(r.ns, r.w)
		copy(x.Data, u.Data)
		copy(x.Data[r.nd*r.w:], r.halo.Data)
		var aux *dense.Matrix
		switch r.kind {
		case ConvResGCN:
			aux = u
		case ConvGCNII:
			aux = r.h0
		}
		u = c.Forward(r.blk, x, aux)
	}
	r.lastOutput = u
}

// backward back-propagates r.dy through every layer, passing on the
// destinations' rows of dx (plus daux for resgcn).
func (r *deepRun) backward() {
	du := r.dy
	for i := len(r.convs) - 1; i >= 0; i-- {
		dx, daux := r.convs[i].Backward(du)
		dd := dense.New(r.nd, r.w)
		copy(dd.Data, dx.Data)
		if r.kind == ConvResGCN {
			dense.Axpy(1, daux.Data, dd.Data)
		}
		du = dd
	}
	r.lastOutput = nil
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkDeepStack measures Forward and Backward of a 32-layer stack of
// each Conv kind on one block (deepND destinations, deepNS sources) and
// reports the heap the stack keeps per layer after a forward pass in steady
// state (the second forward, so that whatever a Backward retains counts):
// retained-B/layer is the live heap then, less the live heap before the
// first forward, over the layers.
func BenchmarkDeepStack(b *testing.B) {
	for _, kind := range convKinds {
		name := fmt.Sprintf("kind=%s/dst=%d/src=%d/w=%d/layers=%d", kind, deepND, deepNS, deepW, deepLayers)
		b.Run(name, func(b *testing.B) {
			r := newDeepRun(kind)
			base := liveHeap()
			r.forward()
			r.backward()
			r.forward()
			retained := liveHeap() - base
			r.backward()
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				r.forward()
				r.backward()
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(retained)/deepLayers, "retained-B/layer")
			b.ReportMetric(float64(r.a.NNZ()), "nnz")
		})
	}
}

// cpuTime returns the CPU time (user and system) this process has used, for
// timings on a machine shared with other jobs, where the wall clock
// measures the sharing.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
