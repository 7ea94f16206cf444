package sparse_test

import (
	"fmt"
	"slices"
	"testing"

	"gnnmpi/graph"
	"gnnmpi/sparse"
)

// rmatOnes returns the Graph500 R-MAT graph of the given scale with edge
// factor 16 (A, B, C = .57, .19, .19), as `gnnmpi gen rmat` writes it and
// bench/spgemm feeds to the other libraries, with every value 1.0. It
// checks what graph.RMAT promises: a pattern matrix (nil Values) whose rows
// are sorted and distinct, and which is symmetric.
func rmatOnes(tb testing.TB, scale int) *sparse.CSR {
	tb.Helper()
	a, err := graph.RMAT(graph.DefaultRMAT(scale, 16))
	if err != nil {
		tb.Fatal(err)
	}
	if a.Values != nil {
		tb.Fatal("graph.RMAT returned values, want a pattern matrix")
	}
	for i := range a.NRows {
		row := a.Row(i)
		for p, j := range row {
			if p > 0 && j <= row[p-1] {
				tb.Fatalf("row %d not sorted and distinct", i)
			}
			if _, ok := slices.BinarySearch(a.Row(j), i); !ok {
				tb.Fatalf("(%d,%d) stored but not (%d,%d)", i, j, j, i)
			}
		}
	}
	a.Values = make([]float64, a.NNZ())
	for p := range a.Values {
		a.Values[p] = 1
	}
	return a
}

// flops returns the number of scalar multiply-adds of A·B.
func flops(a, b *sparse.CSR) int64 {
	var f int64
	for _, k := range a.Indices {
		f += b.Degree(k)
	}
	return f
}

// BenchmarkSpGEMM times C = A·A over PlusTimes[float64] for R-MAT graphs
// (rmatOnes) at scales 14 and 16, on 1 and 2 threads, reporting 2·flops per
// second and nnz(C). Only the product is timed. Scale 16 makes a C of 355
// million entries (5.7 GB) and is skipped with -short; select one with
// e.g. -bench 'SpGEMM/AA/scale=14'.
//
// The masked sub-benchmarks time (A·A)⟨A⟩, the triangle-counting product,
// and the selection ones the sampler's Q·A for 4096 random rows.
func BenchmarkSpGEMM(b *testing.B) {
	for _, scale := range []int{14, 16} {
		var a *sparse.CSR // made on first use, so that filters skip it
		get := func(b *testing.B) *sparse.CSR {
			if scale > 14 && testing.Short() {
				b.Skip("scale 16 needs about 8 GB; skipped with -short")
			}
			if a == nil {
				a = rmatOnes(b, scale)
			}
			return a
		}
		for _, threads := range []int{1, 2} {
			o := &sparse.Options{Threads: threads}
			b.Run(fmt.Sprintf("AA/scale=%d/threads=%d", scale, threads), func(b *testing.B) {
				a := get(b)
				var nnz int64
				for b.Loop() {
					c, err := sparse.MulSR(sparse.PlusTimes[float64]{}, a, a, o)
					if err != nil {
						b.Fatal(err)
					}
					nnz = c.NNZ()
				}
				b.ReportMetric(2*float64(flops(a, a))*float64(b.N)/b.Elapsed().Seconds()/1e6, "MFLOP/s")
				b.ReportMetric(float64(nnz), "nnz(C)")
			})
			b.Run(fmt.Sprintf("masked/scale=%d/threads=%d", scale, threads), func(b *testing.B) {
				a := get(b)
				var nnz int64
				for b.Loop() {
					c, err := sparse.MulMaskedSR(sparse.PlusTimes[float64]{}, a, a, a, o)
					if err != nil {
						b.Fatal(err)
					}
					nnz = c.NNZ()
				}
				b.ReportMetric(2*float64(flops(a, a))*float64(b.N)/b.Elapsed().Seconds()/1e6, "MFLOP/s")
				b.ReportMetric(float64(nnz), "nnz(C)")
			})
		}
		b.Run(fmt.Sprintf("selection/scale=%d/rows=4096", scale), func(b *testing.B) {
			a := get(b)
			// Q picks rows by a fixed stride, as a sampler's frontier would
			// (any order, repeats allowed).
			q := &sparse.CSR{NRows: 4096, NCols: a.NRows, Indptr: make([]int64, 4097), Indices: make([]int64, 4096)}
			for i := range q.Indices {
				q.Indptr[i+1] = int64(i + 1)
				q.Indices[i] = int64(i) * 7919 % a.NRows
			}
			b.ReportAllocs()
			var nnz int64
			for b.Loop() {
				c, err := sparse.Mul(q, a)
				if err != nil {
					b.Fatal(err)
				}
				nnz = c.NNZ()
			}
			b.ReportMetric(float64(nnz), "nnz(C)")
		})
	}
}
