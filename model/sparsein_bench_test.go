package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// wideRows returns r sparse rows of c columns, each storing k or k+1
// distinct random columns (sorted, k+1 for every other row, so the mean
// density is (k+0.5)/c) with values 1/nnz(row), as row-normalised
// bag-of-words counts.
func wideRows(rnd *rand.Rand, r, c, k int) *sparse.Matrix[float32] {
	x := &sparse.Matrix[float32]{NRows: int64(r), NCols: int64(c), Indptr: make([]int64, r+1)}
	for i := range r {
		ki := k + i%2
		start := len(x.Indices)
		for len(x.Indices) < start+ki {
			if j := int64(rnd.IntN(c)); !slices.Contains(x.Indices[start:], j) {
				x.Indices = append(x.Indices, j)
			}
		}
		slices.Sort(x.Indices[start:])
		for range ki {
			x.Values = append(x.Values, 1/float32(ki))
		}
		x.Indptr[i+1] = int64(len(x.Indices))
	}
	return x
}

// streamAxpy computes y += a·x over two equal buffers in blocks, split
// over goroutines as the layer's kernels are, with the AVX2 row kernel
// where there is one: the streaming form of the layer's traffic (x read,
// y read and written).
func streamAxpy(y, x []float32) {
	const blk = 1 << 14
	alpha := []float32{0.5}
	parallel(len(x)/blk, 1, int64(len(x)), func(lo, hi int) {
		for b := lo; b < hi; b++ {
			dense.AxpyScatter(y[b*blk:(b+1)*blk], blk, []int64{0}, alpha, x[b*blk:(b+1)*blk])
		}
	})
}

// BenchmarkSparseFirstLayer measures a SAGE first layer on sparse input
// rows, ForwardSparse then Backward (weight gradients only), against the
// bound of its memory traffic, measured in the same run:
//
//   - W-GB/s: the bytes of weight rows the row kernels touch per second of
//     the whole layer. Each stored entry of X[:NDst] and of X moves one
//     row of f floats three times: read from W_self or W_neigh in the
//     forward pass, read and written in dW_self or dW_neigh in the
//     backward pass, 12·f bytes per entry. The layer's other work (the
//     mean aggregation over the block, dL/dZ = Mᵀ·dh, the bias) is in the
//     time but not in the bytes.
//   - stream-GB/s: y += a·x over two buffers of W's size (fin×f floats),
//     12 bytes per element (x read, y read and written): the same traffic
//     streamed, from the cache level that holds W, with the same kernel
//     and goroutines, as many elements as the layer's entries·f. It runs
//     between the layer's iterations, outside their timer, so both see
//     the same machine load.
//   - bound-frac: W-GB/s over stream-GB/s; the target is at least 0.5.
//     cpu-bound-frac is the same ratio from CPU time (getrusage), which
//     a machine shared with other jobs disturbs less than the wall clock.
//
// Shapes: rows=24000/dst=10000 at 0.4% of 8,415 columns is a minibatch of
// coauthor-physics (fanouts 15,10, batch 1024; 33.7 nonzeros per row);
// 1% is a denser bag of words; rows=100000 a larger minibatch.
func BenchmarkSparseFirstLayer(b *testing.B) {
	const fin, fout, maxDeg = physIn, physHidden, physMaxDeg
	for _, s := range []struct {
		nd, ns, k int
	}{
		{10000, 24000, 33},  // 0.4%
		{10000, 24000, 84},  // 1.0%
		{24000, 100000, 33}, // 0.4%
	} {
		density := (float64(s.k) + 0.5) / fin
		b.Run(fmt.Sprintf("dst=%d/rows=%d/in=%d/density=%.3f/out=%d", s.nd, s.ns, fin, density, fout), func(b *testing.B) {
			rnd := testRNG(640)
			a := randBlock(rnd, s.nd, s.ns, maxDeg)
			x := wideRows(rnd, s.ns, fin, s.k)
			layer := NewSAGE(fin, fout, false, rnd, nil)
			dy := randMatrix(rnd, s.nd, fout)
			sx, sy := make([]float32, fin*fout), make([]float32, fin*fout)
			entries := float64(x.Indptr[s.nd] + x.NNZ())
			// As many streamed elements as the layer's row elements, so
			// that both are timed over about as long.
			passes := int(entries) / fin
			var stream, layerCPU, streamCPU time.Duration
			b.ReportAllocs()
			for b.Loop() {
				c0 := cpuTime()
				layer.ForwardSparse(a, x, false, nil)
				layer.Backward(dy, false)
				b.StopTimer()
				c1 := cpuTime()
				t0 := time.Now()
				for range passes {
					streamAxpy(sy, sx)
				}
				stream += time.Since(t0)
				streamCPU += cpuTime() - c1
				layerCPU += c1 - c0
				b.StartTimer()
			}
			wgbs := 12 * entries * fout * float64(b.N) / b.Elapsed().Seconds() / 1e9
			sgbs := 12 * float64(len(sx)*passes) * float64(b.N) / stream.Seconds() / 1e9
			b.ReportMetric(wgbs, "W-GB/s")
			b.ReportMetric(sgbs, "stream-GB/s")
			b.ReportMetric(wgbs/sgbs, "bound-frac")
			b.ReportMetric(entries*fout/float64(passes*len(sx))*streamCPU.Seconds()/layerCPU.Seconds(), "cpu-bound-frac")
			b.ReportMetric(entries, "entries")
		})
	}
}
