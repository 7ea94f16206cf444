package model

import (
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

// randGraph returns the CSR of a random undirected simple graph on n
// vertices (sorted rows, no self-loops); vertex n−1 is isolated.
func randGraph(seed uint64, n int, p float64) *sparse.CSR {
	rnd := testRNG(seed)
	adj := make([][]int64, n)
	for i := 0; i < n-1; i++ {
		for j := i + 1; j < n-1; j++ {
			if rnd.Float64() < p {
				adj[i] = append(adj[i], int64(j))
				adj[j] = append(adj[j], int64(i))
			}
		}
	}
	a := &sparse.CSR{NRows: int64(n), NCols: int64(n), Indptr: make([]int64, n+1)}
	for i, row := range adj {
		slices.Sort(row)
		a.Indices = append(a.Indices, row...)
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	return a
}

// toDense returns a as a dense float64 matrix (summing duplicates).
func toDense(a *sparse.CSR) [][]float64 {
	d := make([][]float64, a.NRows)
	for i := range d {
		d[i] = make([]float64, a.NCols)
		for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
			d[i][a.Indices[e]] += a.Values[e]
		}
	}
	return d
}

// TestGCNNormFull checks that GCNNorm of full neighbourhoods is
// D̃^{-1/2}(A+I)D̃^{-1/2}, computed densely, both for the whole graph as one
// block and for a block whose destinations are the first vertices.
func TestGCNNormFull(t *testing.T) {
	const n = 12
	g := randGraph(21, n, 0.3)
	deg := make([]int64, n)
	for i := range deg {
		deg[i] = g.Degree(int64(i))
	}
	want := make([][]float64, n)
	for i := range want {
		want[i] = make([]float64, n)
		want[i][i] = 1 / float64(deg[i]+1)
		for _, j := range g.Row(int64(i)) {
			want[i][j] = 1 / math.Sqrt(float64(deg[i]+1)*float64(deg[j]+1))
		}
	}
	for _, nd := range []int{n, 5} {
		a := &sparse.CSR{NRows: int64(nd), NCols: n, Indptr: g.Indptr[:nd+1], Indices: g.Indices[:g.Indptr[nd]]}
		got := GCNNorm(a, deg[:nd], deg)
		require.NoError(t, got.Validate())
		for i := range int64(nd) {
			assert.True(t, slices.IsSorted(got.Row(i)), "row %d sorted", i)
		}
		d := toDense(got)
		for i := range nd {
			assert.InDeltaSlice(t, want[i], d[i], 1e-15, "row %d", i)
		}
	}
}

func TestGCNNormSampled(t *testing.T) {
	// Row 0 samples 2 of its 4 neighbours and has its self-loop; row 1 samples
	// 1 of 3 and lacks it; row 2 samples none (degree 2).
	a := &sparse.CSR{NRows: 3, NCols: 5, Indptr: []int64{0, 3, 4, 4}, Indices: []int64{0, 3, 4, 0}, Values: []float64{9, 9, 9, 9}}
	degDst := []int64{4, 3, 2}
	degSrc := []int64{4, 3, 2, 1, 5}
	got := GCNNorm(a, degDst, degSrc)
	assert.Equal(t, []int64{0, 3, 5, 6}, got.Indptr)
	assert.Equal(t, []int64{0, 3, 4, 0, 1, 2}, got.Indices)
	want := []float64{
		1. / 5, (4. / 2) / math.Sqrt(5*2), (4. / 2) / math.Sqrt(5*6),
		(3. / 1) / math.Sqrt(4*5), 1. / 4,
		1. / 3,
	}
	assert.InDeltaSlice(t, want, got.Values, 1e-15)
	assert.Equal(t, []float64{9, 9, 9, 9}, a.Values, "input unchanged")
	assert.Panics(t, func() { GCNNorm(a, degDst[:2], degSrc) })
}

func TestGCNNeedsValues(t *testing.T) {
	a := randBlock(testRNG(0), 3, 4, 2)
	g := NewGCN(2, 2, testRNG(0), nil)
	assert.Panics(t, func() { g.Forward(a, randMatrix(testRNG(1), 4, 2), false, nil) })
}

// TestGCNOrder checks the order choice of the gradient test cases.
func TestGCNOrder(t *testing.T) {
	for _, tc := range []struct {
		fin, fout int
		aggFirst  bool
	}{{3, 8, true}, {9, 2, false}} {
		rnd := testRNG(0)
		g := NewGCN(tc.fin, tc.fout, rnd, nil)
		g.Forward(gcnBlock(rnd, tnd, tns, tdeg), randMatrix(rnd, tns, tc.fin), false, nil)
		assert.Equal(t, tc.aggFirst, g.aggFirst, "fin %d fout %d", tc.fin, tc.fout)
	}
}
