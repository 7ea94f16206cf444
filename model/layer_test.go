package model

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/internal/testutil"
	"gnnmpi/sparse"
)

// layerCase builds a layer and its block for the gradient and BLAS tests.
type layerCase struct {
	name  string
	fin   int
	block func(rnd *rand.Rand) *sparse.CSR
	make  func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer
	train bool // run Forward in training mode (attention dropout)
}

// Block sizes: 7 destinations, 11 sources, degrees up to 5 with an empty row.
const (
	tnd, tns, tdeg = 7, 11, 5
)

func layerCases() []layerCase {
	plain := func(rnd *rand.Rand) *sparse.CSR { return randBlock(rnd, tnd, tns, tdeg) }
	selfLoops := func(rnd *rand.Rand) *sparse.CSR { return withSelfLoops(randBlock(rnd, tnd, tns, tdeg)) }
	gcn := func(rnd *rand.Rand) *sparse.CSR { return gcnBlock(rnd, tnd, tns, tdeg) }
	return []layerCase{
		{name: "sage", fin: 5, block: plain, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			return NewSAGE(fin, 4, false, rnd, impl)
		}},
		{name: "sage/normalize", fin: 5, block: plain, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			return NewSAGE(fin, 4, true, rnd, impl)
		}},
		{name: "sage/aggregate-first", fin: 5, block: plain, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			s := NewSAGE(fin, 4, false, rnd, impl)
			s.order = 1
			return s
		}},
		{name: "sage/multiply-first", fin: 5, block: plain, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			s := NewSAGE(fin, 4, false, rnd, impl)
			s.order = 2
			return s
		}},
		{name: "sage/multiply-first/normalize", fin: 5, block: plain, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			s := NewSAGE(fin, 4, true, rnd, impl)
			s.order = 2
			return s
		}},
		// Shapes chosen so that GCN aggregates first (fin < fout) ...
		{name: "gcn/aggregate-first", fin: 3, block: gcn, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			return NewGCN(fin, 8, rnd, impl)
		}},
		// ... and multiplies first (fin ≫ fout).
		{name: "gcn/multiply-first", fin: 9, block: gcn, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			return NewGCN(fin, 2, rnd, impl)
		}},
		{name: "gat/1head", fin: 5, block: plain, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			return NewGAT(fin, 4, 1, true, rnd, impl)
		}},
		{name: "gat/concat", fin: 5, block: plain, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			return NewGAT(fin, 3, 3, true, rnd, impl)
		}},
		{name: "gat/mean", fin: 5, block: selfLoops, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			return NewGAT(fin, 3, 2, false, rnd, impl)
		}},
		{name: "gat/concat/attn-dropout", fin: 5, block: plain, train: true, make: func(fin int, rnd *rand.Rand, impl blas.Float32Level3) Layer {
			g := NewGAT(fin, 3, 2, true, rnd, impl)
			g.AttnDropout = 0.3
			return g
		}},
	}
}

// TestLayerGradients checks dL/dW for every Param and dL/dx of every layer
// against central differences, with L = Σ r⊙out for a fixed random r.
func TestLayerGradients(t *testing.T) {
	for ci, tc := range layerCases() {
		for _, bi := range blasImpls {
			t.Run(tc.name+"/"+bi.name, func(t *testing.T) {
				rnd := testRNG(uint64(ci))
				a := tc.block(rnd)
				require.NoError(t, a.Validate())
				x := randMatrix(rnd, tns, tc.fin)
				layer := tc.make(tc.fin, rnd, bi.impl)
				r := randMatrix(rnd, tnd, layer.OutDim())
				// The same seed on every call fixes the dropout mask.
				fwd := func() *dense.Matrix { return layer.Forward(a, x, tc.train, testRNG(100)) }
				f := func() float64 { return weightedSum(fwd(), r) }

				for _, p := range layer.Params() {
					clear(p.Grad())
				}
				fwd()
				dx := layer.Backward(r, true)
				require.Equal(t, tns, dx.Rows)
				require.Equal(t, tc.fin, dx.Cols)
				var want [][]float32
				for _, p := range layer.Params() {
					want = append(want, append([]float32(nil), p.Grad()...))
				}

				// needInput false: no dx, the same parameter gradients,
				// written over stale values that ZeroGrad only marked.
				staleGrads(layer.Params())
				fwd()
				assert.Nil(t, layer.Backward(r, false))
				for i, p := range layer.Params() {
					assert.Equal(t, want[i], p.Grad(), p.Name)
				}
				// Backward accumulates: a second pass doubles G.
				fwd()
				layer.Backward(r, false)
				assertDoubled(t, layer.Params(), want)

				for i, p := range layer.Params() {
					testutil.GradCheck(t, p.Name, f, p.W, want[i], fdEps, fdTol)
				}
				testutil.GradCheck(t, "x", f, x.Data, dx.Data, fdEps, fdTol)
			})
		}
	}
}

// TestLayerBLASAgree runs every layer with gonum's BLAS and with
// internal/openblas on the same input and compares outputs and gradients.
func TestLayerBLASAgree(t *testing.T) {
	for ci, tc := range layerCases() {
		t.Run(tc.name, func(t *testing.T) {
			var outs, dxs [][]float32
			var grads [][][]float32
			for _, bi := range blasImpls {
				rnd := testRNG(uint64(ci))
				a := tc.block(rnd)
				x := randMatrix(rnd, tns, tc.fin)
				layer := tc.make(tc.fin, rnd, bi.impl)
				r := randMatrix(rnd, tnd, layer.OutDim())
				out := layer.Forward(a, x, tc.train, testRNG(100))
				dx := layer.Backward(r, true)
				outs = append(outs, out.Data)
				dxs = append(dxs, dx.Data)
				var g [][]float32
				for _, p := range layer.Params() {
					g = append(g, p.Grad())
				}
				grads = append(grads, g)
			}
			// float32 products summed in different orders: a few ulps of O(1) values.
			const tol = 1e-5
			assert.True(t, testutil.Close(outs[1], outs[0], tol), "out")
			assert.True(t, testutil.Close(dxs[1], dxs[0], tol), "dx")
			for i := range grads[0] {
				assert.True(t, testutil.Close(grads[1][i], grads[0][i], tol), "param %d", i)
			}
		})
	}
}

// TestLayerDeterministic checks that equal seeds give bit-identical results.
func TestLayerDeterministic(t *testing.T) {
	for ci, tc := range layerCases() {
		t.Run(tc.name, func(t *testing.T) {
			run := func() ([]float32, []float32) {
				rnd := testRNG(uint64(ci))
				a := tc.block(rnd)
				x := randMatrix(rnd, tns, tc.fin)
				layer := tc.make(tc.fin, rnd, nil)
				out := layer.Forward(a, x, true, testRNG(7))
				dx := layer.Backward(out, true)
				return out.Data, dx.Data
			}
			o1, d1 := run()
			o2, d2 := run()
			assert.Equal(t, o1, o2)
			assert.Equal(t, d1, d2)
		})
	}
}

func TestSAGEForward(t *testing.T) {
	// One destination with neighbours {1, 2}, identity weights (fin = fout = 2):
	// out_0 = x_0 + (x_1 + x_2)/2 + b; destination 1 has no neighbours.
	a := &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 2, 2}, Indices: []int64{1, 2}}
	x := &dense.Matrix{Rows: 3, Cols: 2, Data: []float32{1, 2, 3, 4, 5, 6}}
	s := NewSAGE(2, 2, false, testRNG(0), nil)
	copy(s.wSelf.W, []float32{1, 0, 0, 1})
	copy(s.wNeigh.W, []float32{1, 0, 0, 1})
	copy(s.b.W, []float32{0.5, -0.5})
	out := s.Forward(a, x, false, nil)
	assert.Equal(t, []float32{1 + 4 + 0.5, 2 + 5 - 0.5, 3 + 0.5, 4 - 0.5}, out.Data)

	s.Normalize = true
	out = s.Forward(a, x, false, nil)
	// (5.5, 6.5)/√72.5 and (3.5, 3.5)/√24.5.
	assert.InDeltaSlice(t, []float32{0.645942, 0.763386, 0.707107, 0.707107}, out.Data, 1e-6)
}

// Both SAGE orders compute the same function and the same gradients.
func TestSAGEOrdersAgree(t *testing.T) {
	rnd := testRNG(7)
	a := randBlock(rnd, tnd, tns, tdeg)
	x := randMatrix(rnd, tns, 6)
	dy := randMatrix(rnd, tnd, 3)
	var outs, dxs []*dense.Matrix
	var grads [][]float32
	for _, order := range []int{1, 2} {
		s := NewSAGE(6, 3, false, testRNG(1), nil)
		s.order = order
		outs = append(outs, s.Forward(a, x, false, nil))
		dxs = append(dxs, s.Backward(dy, true))
		var g []float32
		for _, p := range s.Params() {
			g = append(g, p.Grad()...)
		}
		grads = append(grads, g)
	}
	require.True(t, testutil.Close(outs[0].Data, outs[1].Data, 1e-5))
	require.True(t, testutil.Close(dxs[0].Data, dxs[1].Data, 1e-5))
	require.True(t, testutil.Close(grads[0], grads[1], 1e-5))
	// Full-neighbour inference on wide features multiplies first;
	// sampled blocks aggregate first.
	require.True(t, sageOrder(34493, 34493, 495924, 8415, 128))
	require.False(t, sageOrder(1024, 12000, 11000, 8415, 128))
}

// assertDoubled checks that every Param's gradient is twice want: what a
// second forward and backward pass accumulates onto the first.
func assertDoubled(t *testing.T, ps []*Param, want [][]float32) {
	t.Helper()
	for i, p := range ps {
		twice := make([]float32, len(want[i]))
		for k, v := range want[i] {
			twice[k] = 2 * v
		}
		assert.True(t, testutil.Close(p.Grad(), twice, 1e-6), "%s accumulates", p.Name)
	}
}
