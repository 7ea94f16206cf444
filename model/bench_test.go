package model

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
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
	kind       Kind
	nd, ns, w  int
	lastOutput *dense.Matrix
}

func newDeepRun(kind Kind) *deepRun {
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

// Physics-like first layer: a 2-layer minibatch of coauthor-physics
// (fanouts 15,10, batch 1024) gathers about 24,000 input rows of 8,415
// bag-of-words features, 0.4% nonzero (33.7 per row), for about 10,000
// destinations of the first layer, each with up to 15 sampled neighbours
// (randBlock's degrees are uniform in [0, 30], mean 15); hidden 256.
const (
	physNS, physND, physIn, physHidden = 24000, 10000, 8415, 256
	physMaxDeg                         = 30
	physHeads                          = 4 // GAT: 4 heads of 64
)

// physRows returns the physics-like input rows: row i stores 34 distinct
// random columns, or 33 for every third row (0.4% of 8415), sorted; a
// pattern if pattern, else with values 1/nnz (row-normalised counts).
func physRows(pattern bool) *sparse.Matrix[float32] {
	rnd := testRNG(600)
	x := &sparse.Matrix[float32]{NRows: physNS, NCols: physIn, Indptr: make([]int64, physNS+1)}
	for i := range physNS {
		k := 34
		if i%3 == 0 {
			k = 33
		}
		start := len(x.Indices)
		for len(x.Indices) < start+k {
			j := int64(rnd.IntN(physIn))
			if !slices.Contains(x.Indices[start:], j) {
				x.Indices = append(x.Indices, j)
			}
		}
		slices.Sort(x.Indices[start:])
		if !pattern {
			for range k {
				x.Values = append(x.Values, 1/float32(k))
			}
		}
		x.Indptr[i+1] = int64(len(x.Indices))
	}
	return x
}

// limits are this machine's measured limits: the best SGEMM rate of the
// benchmarks' BLAS on a large square product and the copy bandwidth.
type limits struct {
	gflops float64 // SGEMM, 2·n³ flops per product
	gbs    float64 // copy(), bytes read plus bytes written, per second
}

// limitN is the order of the square SGEMM and limitMiB the size of the
// slice copied when measuring limits: large enough to run at the BLAS's
// peak and far beyond the caches.
const limitN, limitMiB = 3072, 256

// machineLimits measures the limits once per test binary, so that every
// benchmark of one `go test -bench` run divides by the same numbers. It
// takes the best of several repetitions, the least disturbed by other jobs.
var machineLimits = sync.OnceValue(func() limits {
	impl := dense.BLASOrDefault(blasImpls[len(blasImpls)-1].impl) // OpenBLAS where built with it
	rnd := testRNG(610)
	a := randMatrix(rnd, limitN, limitN)
	bm := randMatrix(rnd, limitN, limitN)
	c := dense.New(limitN, limitN)
	var l limits
	for range 3 {
		t0 := time.Now()
		dense.Gemm(impl, blas.NoTrans, blas.NoTrans, limitN, limitN, limitN, 1, a.Data, bm.Data, 0, c.Data)
		l.gflops = max(l.gflops, 2*math.Pow(limitN, 3)/time.Since(t0).Seconds()/1e9)
	}
	src := make([]byte, limitMiB<<20)
	dst := make([]byte, len(src))
	for i := range src {
		src[i] = byte(i)
	}
	for range 5 {
		t0 := time.Now()
		copy(dst, src)
		l.gbs = max(l.gbs, 2*float64(len(src))/time.Since(t0).Seconds()/1e9)
	}
	return l
})

// BenchmarkMachineLimits reports the limits the kernel benchmarks compare
// with: SGEMM GFLOP/s of the last BLAS in blasImpls (OpenBLAS where built
// with it) on a 3072² product, and copy() bandwidth over 256 MiB.
func BenchmarkMachineLimits(b *testing.B) {
	b.Run(fmt.Sprintf("impl=%s/sgemm/n=%d", blasImpls[len(blasImpls)-1].name, limitN), func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(machineLimits().gflops, "GFLOP/s")
	})
	b.Run(fmt.Sprintf("copy/MiB=%d", limitMiB), func(b *testing.B) {
		for b.Loop() {
		}
		b.ReportMetric(machineLimits().gbs, "GB/s")
	})
}

// reportRates reports flops and bytes per op as GFLOP/s and GB/s, and as
// fractions of the machine's limits (peak-frac: of SGEMM GFLOP/s;
// bw-frac: of copy GB/s).
func reportRates(b *testing.B, flops, bytes float64) {
	l := machineLimits()
	sec := b.Elapsed().Seconds() / float64(b.N)
	gf, gb := flops/sec/1e9, bytes/sec/1e9
	b.ReportMetric(gf, "GFLOP/s")
	b.ReportMetric(gf/l.gflops, "peak-frac")
	b.ReportMetric(gb, "GB/s")
	b.ReportMetric(gb/l.gbs, "bw-frac")
}

// BenchmarkFirstLayerKernels measures the kernels of a physics-like first
// layer and of the hidden layer after it, each against the machine's
// limits (machineLimits, measured in the same run):
//
//   - gemm: the dense input layer's X·W (24000×8415 by 8415×256) and a
//     hidden layer's H·W (10000×256 by 256×256), with the benchmarks' BLAS
//     (OpenBLAS where built with it); bytes count A, B and C once;
//   - spmm-agg: the mean aggregation of 256-wide projected rows over the
//     block (one source row read per stored entry, plus its index, and
//     the output written);
//   - sparse-mul: X·W with X as CSR rows (one row of W read per nonzero,
//     plus its index and value, and the output written);
//   - sparse-tmul: the weight gradient Xᵀ·dZ (one row of dZ read and one
//     row of dW read and written per nonzero).
//
// A stored entry's multiply-add counts 2 flops. Bytes are those the
// kernel touches, cached or not: a bw-frac above 1 means its gathers hit
// the caches (W, 8.6 MB, mostly does for sparse-mul and sparse-tmul).
func BenchmarkFirstLayerKernels(b *testing.B) {
	impl := dense.BLASOrDefault(blasImpls[len(blasImpls)-1].impl)
	implName := blasImpls[len(blasImpls)-1].name
	const f = physHidden
	for _, s := range []struct{ m, k int }{{physNS, physIn}, {physND, physHidden}} {
		b.Run(fmt.Sprintf("op=gemm/impl=%s/m=%d/k=%d/n=%d", implName, s.m, s.k, f), func(b *testing.B) {
			rnd := testRNG(620)
			a := randMatrix(rnd, s.m, s.k)
			w := randMatrix(rnd, s.k, f)
			c := dense.New(s.m, f)
			b.ReportAllocs()
			for b.Loop() {
				dense.Gemm(impl, blas.NoTrans, blas.NoTrans, s.m, f, s.k, 1, a.Data, w.Data, 0, c.Data)
			}
			reportRates(b, 2*float64(s.m)*float64(s.k)*f, 4*float64(s.m*s.k+s.k*f+s.m*f))
		})
	}
	b.Run(fmt.Sprintf("op=spmm-agg/dst=%d/src=%d/maxdeg=%d/f=%d", physND, physNS, physMaxDeg, f), func(b *testing.B) {
		rnd := testRNG(621)
		a := randBlock(rnd, physND, physNS, physMaxDeg)
		inv := NewBlock(a).meanWeights().rowScale
		z := randMatrix(rnd, physNS, f)
		out := make([]float32, physND*f)
		b.ReportAllocs()
		for b.Loop() {
			spmm(out, a, nil, inv, z.Data, f)
		}
		nnz := float64(a.NNZ())
		reportRates(b, 2*nnz*f, nnz*(4*f+8)+float64(physND)*(4*f+8))
	})
	x := physRows(false)
	nnz := float64(x.NNZ())
	b.Run(fmt.Sprintf("op=sparse-mul/rows=%d/in=%d/nnz=%d/f=%d", physNS, physIn, x.NNZ(), f), func(b *testing.B) {
		w := randMatrix(testRNG(622), physIn, f)
		out := make([]float32, physNS*f)
		b.ReportAllocs()
		for b.Loop() {
			clear(out)
			sparseMulAdd(out, x, physNS, w.Data, f)
		}
		reportRates(b, 2*nnz*f, nnz*(4*f+12)+float64(physNS)*4*f)
	})
	b.Run(fmt.Sprintf("op=sparse-tmul/rows=%d/in=%d/nnz=%d/f=%d", physNS, physIn, x.NNZ(), f), func(b *testing.B) {
		dz := randMatrix(testRNG(623), physNS, f)
		dw := make([]float32, physIn*f)
		b.ReportAllocs()
		for b.Loop() {
			sparseTMulAdd(dw, x, physNS, dz.Data, f)
		}
		reportRates(b, 2*nnz*f, nnz*(12*f+12))
	})
}

// BenchmarkFirstLayer measures Forward and Backward (weight gradients
// only, as for an input layer) of a physics-like first layer of each kind
// on dense input rows (808 MB of them, multiplied by GEMMs), on the same
// rows as CSR with values, and as a pattern (ForwardSparse). dense-GFLOP/s
// counts the dense path's GEMM flops over the time of the variant, so the
// sparse variants' figure is the dense-equivalent rate.
func BenchmarkFirstLayer(b *testing.B) {
	for _, kind := range []string{"sage", "gcn", "gat"} {
		for _, input := range []string{"dense", "csr", "pattern"} {
			name := fmt.Sprintf("kind=%s/input=%s/dst=%d/src=%d/in=%d/hidden=%d", kind, input, physND, physNS, physIn, physHidden)
			b.Run(name, func(b *testing.B) {
				rnd := testRNG(630)
				var a *sparse.CSR
				if kind == "gcn" {
					a = gcnBlock(rnd, physND, physNS, physMaxDeg)
				} else {
					a = randBlock(rnd, physND, physNS, physMaxDeg)
				}
				impl := blasImpls[len(blasImpls)-1].impl
				var layer SparseLayer
				gemms := 0.0 // dense-path GEMMs of m×8415×256, m = NDst or NSrc
				switch kind {
				case "sage": // aggregate first: 2 forward, 2 weight gradients, on NDst rows
					layer = NewSAGE(physIn, physHidden, false, rnd, impl)
					gemms = 4 * physND
				case "gcn": // aggregate first, on NDst rows
					layer = NewGCN(physIn, physHidden, rnd, impl)
					gemms = 2 * physND
				case "gat": // X·W and its gradient on NSrc rows
					layer = NewGAT(physIn, physHidden/physHeads, physHeads, true, rnd, impl)
					gemms = 2 * physNS
				}
				x := physRows(input == "pattern")
				dy := randMatrix(rnd, physND, layer.OutDim())
				var xd *dense.Matrix
				if input == "dense" {
					xd = densify(x)
				}
				b.ReportAllocs()
				for b.Loop() {
					if xd != nil {
						layer.Forward(a, xd, false, nil)
					} else {
						layer.ForwardSparse(a, x, false, nil)
					}
					layer.Backward(dy, false)
				}
				flops := 2 * gemms * physIn * physHidden
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "dense-GFLOP/s")
				b.ReportMetric(float64(x.NNZ()), "nnz")
			})
		}
	}
}
