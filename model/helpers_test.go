package model

import (
	"math/rand/v2"
	"slices"
	"strings"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/internal/openblas"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// Finite differences (testutil.CheckGrad): central differences with
// eps = 1e-2 and 5e-3 on float32 parameters of size O(1), Richardson
// extrapolated, the loss accumulated in float64. The truncation error is
// then O(eps⁴) and float32 rounding of the outputs (≈1e-7 relative, divided
// by eps) adds ≈1e-5 relative, so a relative tolerance of 1e-2 separates
// real bugs (errors of order 1) from noise with a wide margin.
const (
	fdEps = 1e-2
	fdTol = 1e-2
)

// blasImpls are the BLAS implementations every numerical test runs with.
var blasImpls = []struct {
	name string
	impl blas.Float32Level3
}{
	{"gonum", nil},
	{openblas.Name(), openblas.Implementation()},
}

// randMatrix returns an r×c matrix with entries uniform in [-1, 1).
func randMatrix(rnd *rand.Rand, r, c int) *dense.Matrix {
	m := dense.New(r, c)
	for i := range m.Data {
		m.Data[i] = 2*rnd.Float32() - 1
	}
	return m
}

// randBlock returns an nd×ns block with sorted, duplicate-free rows of
// uneven degree in [0, maxDeg]: row 0 has maxDeg entries and row 1 (if any)
// none. Rows may or may not contain their own self-loop.
func randBlock(rnd *rand.Rand, nd, ns, maxDeg int) *sparse.CSR {
	a := &sparse.CSR{NRows: int64(nd), NCols: int64(ns), Indptr: make([]int64, nd+1)}
	for i := range nd {
		deg := rnd.IntN(maxDeg + 1)
		switch i {
		case 0:
			deg = maxDeg
		case 1:
			deg = 0
		}
		deg = min(deg, ns)
		start := len(a.Indices)
		for len(a.Indices) < start+deg {
			j := int64(rnd.IntN(ns))
			if !slices.Contains(a.Indices[start:], j) {
				a.Indices = append(a.Indices, j)
			}
		}
		slices.Sort(a.Indices[start:])
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	return a
}

// withSelfLoops returns a copy of a in which every row i < NDst lists i.
func withSelfLoops(a *sparse.CSR) *sparse.CSR {
	out := &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: make([]int64, a.NRows+1)}
	for i := range a.NRows {
		row := slices.Clone(a.Row(i))
		if !slices.Contains(row, i) {
			row = append(row, i)
			slices.Sort(row)
		}
		out.Indices = append(out.Indices, row...)
		out.Indptr[i+1] = int64(len(out.Indices))
	}
	return out
}

// gcnBlock returns GCNNorm of a random block with full-graph degrees at
// least the sampled ones.
func gcnBlock(rnd *rand.Rand, nd, ns, maxDeg int) *sparse.CSR {
	a := randBlock(rnd, nd, ns, maxDeg)
	deg := make([]int64, ns)
	for j := range deg {
		deg[j] = int64(maxDeg + rnd.IntN(4))
	}
	return GCNNorm(a, deg[:nd], deg)
}

// weightedSum returns Σ r⊙y in float64, the scalar loss of the gradient
// checks (so dL/dy = r).
func weightedSum(y, r *dense.Matrix) float64 {
	if y.Rows != r.Rows || y.Cols != r.Cols {
		panic("weightedSum: shape mismatch")
	}
	var s float64
	for i, v := range y.Data {
		s += float64(v) * float64(r.Data[i])
	}
	return s
}

// testRNG returns the seeded stream for test number stream.
func testRNG(stream uint64) *rand.Rand { return rng.New(1, stream) }

// clone returns a deep copy of m.
func clone(m *dense.Matrix) *dense.Matrix {
	return &dense.Matrix{Rows: m.Rows, Cols: m.Cols, Data: slices.Clone(m.Data)}
}

// randomBiases gives m's biases small random values. With zero biases and
// dropout on, a row whose inputs all drop out is exactly 0, on the kinks of
// the next layer (GAT's LeakyReLU) for every perturbation of a bias at
// once, which a finite-difference check cannot follow.
func randomBiases(m *Model, rnd *rand.Rand) {
	for _, p := range m.Params() {
		if strings.HasSuffix(p.Name, ".b") {
			copy(p.W, randMatrix(rnd, 1, len(p.W)).Data)
		}
	}
}
