package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/internal/testutil"
	"gnnmpi/sparse"
)

// randSparseRows returns r×c sparse rows with sorted, distinct columns,
// each element stored with probability density, and column i mod c stored
// in a row i that would be empty (an empty row makes a layer's
// pre-activation exactly its bias, 0 at the start, where SAGE's
// normalisation and GAT's LeakyReLU have kinks): a pattern if pattern, else
// with values uniform in ±[0.1, 1) (away from zero, so that stored entries
// are nonzeros, as a loader keeps them).
func randSparseRows(rnd *rand.Rand, r, c int, density float64, pattern bool) *sparse.Matrix[float32] {
	x := &sparse.Matrix[float32]{NRows: int64(r), NCols: int64(c), Indptr: make([]int64, r+1), Indices: []int64{}}
	if !pattern {
		x.Values = []float32{}
	}
	for i := range r {
		empty := true
		for j := range c {
			if rnd.Float64() < density {
				empty = false
				x.Indices = append(x.Indices, int64(j))
				if !pattern {
					v := 0.1 + 0.9*rnd.Float32()
					if rnd.IntN(2) == 0 {
						v = -v
					}
					x.Values = append(x.Values, v)
				}
			}
			if empty && j == c-1 {
				x.Indices = append(x.Indices, int64(i%c))
				if !pattern {
					x.Values = append(x.Values, 0.5)
				}
				slices.Sort(x.Indices[x.Indptr[i]:])
			}
		}
		x.Indptr[i+1] = int64(len(x.Indices))
	}
	return x
}

// densify returns x as a dense matrix (a pattern's entries are 1).
func densify(x *sparse.Matrix[float32]) *dense.Matrix {
	m := dense.New(int(x.NRows), int(x.NCols))
	for i := range x.NRows {
		for e := x.Indptr[i]; e < x.Indptr[i+1]; e++ {
			v := float32(1)
			if x.Values != nil {
				v = x.Values[e]
			}
			m.Data[int(i)*m.Cols+int(x.Indices[e])] += v
		}
	}
	return m
}

// TestSparseLayerGradients checks, for every layer kind, that ForwardSparse
// computes Forward's function of the dense rows, that Backward after it
// gives the dense path's parameter gradients and the central differences of
// L = Σ r⊙out, and that it refuses to compute dL/dx.
func TestSparseLayerGradients(t *testing.T) {
	for ci, tc := range layerCases() {
		for _, pattern := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/pattern=%t", tc.name, pattern), func(t *testing.T) {
				rnd := testRNG(uint64(200 + ci))
				a := tc.block(rnd)
				xs := randSparseRows(rnd, tns, tc.fin, 0.3, pattern)
				xd := densify(xs)
				seed := rnd.Uint64()
				dl := tc.make(tc.fin, testRNG(seed), nil)
				sl := tc.make(tc.fin, testRNG(seed), nil).(SparseLayer)
				r := randMatrix(rnd, tnd, sl.OutDim())

				want := dl.Forward(a, xd, tc.train, testRNG(100))
				dl.Backward(r, false)
				fwd := func() *dense.Matrix { return sl.ForwardSparse(a, xs, tc.train, testRNG(100)) }
				got := fwd()
				assert.Nil(t, sl.Backward(r, false))
				// float32 sums in different orders: a few ulps of O(1) values.
				require.True(t, testutil.Close(got.Data, want.Data, 1e-5), "out: got: %v want: %v", got.Data, want.Data)
				dps := dl.Params()
				for i, p := range sl.Params() {
					assert.True(t, testutil.Close(p.Grad(), dps[i].Grad(), 1e-5), "%s: got: %v want: %v", p.Name, p.Grad(), dps[i].Grad())
				}
				checkParamsGrad(t, sl.Params(), func() float64 { return weightedSum(fwd(), r) })
				fwd()
				assert.Panics(t, func() { sl.Backward(r, true) }, "no dL/dx for sparse input")
				// A dense Forward afterwards forgets the sparse input.
				sl.Forward(a, xd, tc.train, testRNG(100))
				assert.NotNil(t, sl.Backward(r, true))
			})
		}
	}
}

// TestSparseLayerShapes checks the shape checks of ForwardSparse.
func TestSparseLayerShapes(t *testing.T) {
	rnd := testRNG(210)
	a := randBlock(rnd, tnd, tns, tdeg)
	s := NewSAGE(5, 4, false, rnd, nil)
	for _, tc := range []struct {
		name string
		x    *sparse.Matrix[float32]
	}{
		{"rows", randSparseRows(rnd, tns-1, 5, 0.3, false)},
		{"cols", randSparseRows(rnd, tns, 6, 0.3, false)},
		{"values", func() *sparse.Matrix[float32] {
			x := randSparseRows(rnd, tns, 5, 0.3, false)
			x.Values = x.Values[1:]
			return x
		}()},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Panics(t, func() { s.ForwardSparse(a, tc.x, false, nil) })
		})
	}
}

// TestLinearSparse checks Linear.ForwardSparse against Forward on the dense
// rows (within rounding: the dense path sums through a GEMM) and its
// gradients against the dense path's and central differences.
func TestLinearSparse(t *testing.T) {
	for _, pattern := range []bool{false, true} {
		t.Run(fmt.Sprintf("pattern=%t", pattern), func(t *testing.T) {
			rnd := testRNG(220)
			xs := randSparseRows(rnd, 9, 7, 0.3, pattern)
			dl := NewLinear(7, 5, testRNG(221), nil)
			sl := NewLinear(7, 5, testRNG(221), nil)
			r := randMatrix(rnd, 9, 5)
			want := dl.Forward(densify(xs))
			dl.Backward(r, false)
			got := sl.ForwardSparse(xs)
			assert.Nil(t, sl.Backward(r, false))
			require.True(t, testutil.Close(got.Data, want.Data, 1e-6))
			for i, p := range sl.Params() {
				assert.True(t, testutil.Close(p.Grad(), dl.Params()[i].Grad(), 1e-6), p.Name)
			}
			checkParamsGrad(t, sl.Params(), func() float64 { return weightedSum(sl.ForwardSparse(xs), r) })
			sl.ForwardSparse(xs)
			assert.Panics(t, func() { sl.Backward(r, true) })
			assert.Panics(t, func() { sl.ForwardSparse(randSparseRows(rnd, 9, 6, 0.3, pattern)) })
		})
	}
}

// TestSparseKernels checks sparseMulAdd and sparseTMulAdd against dense
// reference products, bitwise independence of GOMAXPROCS, and that a
// pattern gives bitwise the result of the same entries with values 1.
func TestSparseKernels(t *testing.T) {
	rnd := testRNG(230)
	// Large enough that both kernels run on several goroutines
	// (nnz·f ≫ minParallelWork).
	const n, k, f = 400, 300, 152
	x := randSparseRows(rnd, n, k, 0.05, false)
	w := randMatrix(rnd, k, f)
	dy := randMatrix(rnd, n, f)
	xd := densify(x)
	run := func(x *sparse.Matrix[float32], procs int) (mul, tmul []float32) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		mul = make([]float32, n*f)
		sparseMulAdd(mul, x, n, w.Data, f)
		tmul = make([]float32, k*f)
		sparseTMulAdd(tmul, x, n, dy.Data, f)
		return mul, tmul
	}
	mul1, tmul1 := run(x, 1)
	assert.True(t, testutil.Close(mul1, gemmRef(xd, w, false), 1e-5), "x·w")
	assert.True(t, testutil.Close(tmul1, gemmRef(xd, dy, true), 1e-5), "xᵀ·dy")
	for _, p := range []int{2, 3, 8} {
		mul, tmul := run(x, p)
		assert.Equal(t, mul1, mul, "x·w, GOMAXPROCS %d", p)
		assert.Equal(t, tmul1, tmul, "xᵀ·dy, GOMAXPROCS %d", p)
	}
	// A pattern reads as ones without materialising them.
	pat := &sparse.Matrix[float32]{NRows: x.NRows, NCols: x.NCols, Indptr: x.Indptr, Indices: x.Indices}
	ones := &sparse.Matrix[float32]{NRows: x.NRows, NCols: x.NCols, Indptr: x.Indptr, Indices: x.Indices, Values: make([]float32, x.NNZ())}
	for i := range ones.Values {
		ones.Values[i] = 1
	}
	mp, tp := run(pat, 4)
	mo, to := run(ones, 4)
	assert.Equal(t, mo, mp)
	assert.Equal(t, to, tp)
	// Accumulation: a second call doubles.
	sparseMulAdd(mul1, x, n, w.Data, f)
	mul2, _ := run(x, 1)
	for i := range mul2 {
		mul2[i] *= 2
	}
	assert.True(t, testutil.Close(mul1, mul2, 1e-6))
}

// checkParamsGrad checks the gradients G of ps against central
// differences of f over all their weights at once, so that the floor of
// testutil.CheckGrad is set by the largest gradient of the layer (GAT's
// a_l gets gradients only through the LeakyReLU's kink, far below float32
// noise relative to f, when a pattern input makes many rows equal).
func checkParamsGrad(t *testing.T, ps []*Param, f func() float64) {
	t.Helper()
	var w, g []float32
	for _, p := range ps {
		w = append(w, p.W...)
		g = append(g, p.Grad()...)
	}
	set := func() {
		off := 0
		for _, p := range ps {
			off += copy(p.W, w[off:])
		}
	}
	bad := testutil.CheckGrad(func() float64 { set(); return f() }, w, g, fdEps, fdTol)
	set()
	for _, b := range bad {
		t.Errorf("weight %d: got: %g want: %g (central difference)", b.Index, b.Got, b.Want)
	}
}

// gemmRef returns x·b (or xᵀ·b if trans) in float64.
func gemmRef(x, b *dense.Matrix, trans bool) []float32 {
	r, k := x.Rows, x.Cols
	if trans {
		r, k = k, r
	}
	out := make([]float32, r*b.Cols)
	for i := range r {
		for j := range b.Cols {
			var s float64
			for l := range k {
				xv := x.Data[i*x.Cols+l]
				if trans {
					xv = x.Data[l*x.Cols+i]
				}
				s += float64(xv) * float64(b.Data[l*b.Cols+j])
			}
			out[i*b.Cols+j] = float32(s)
		}
	}
	return out
}

// TestDropoutSparseParallel checks ForwardSparse on rows enough for
// several goroutines, with stored zeros and an Indptr that starts past 0:
// under GOMAXPROCS 1 and 3 it keeps, bitwise, the entries Forward with
// SkipZeros keeps on the dense rows, and leaves x as it was.
func TestDropoutSparseParallel(t *testing.T) {
	for _, pattern := range []bool{false, true} {
		t.Run(fmt.Sprintf("pattern=%t", pattern), func(t *testing.T) {
			xs := randSparseRows(testRNG(243), 6000, 200, 0.3, pattern)
			if !pattern {
				for e := range xs.Values {
					if e%7 == 0 {
						xs.Values[e] = 0 // stored zeros draw nothing
					}
				}
			}
			want := (&Dropout{Rate: 0.4, SkipZeros: true}).Forward(densify(xs), true, testRNG(244)).Data
			// The same rows behind a leading entry that row 0 does not own.
			shifted := &sparse.Matrix[float32]{NRows: xs.NRows, NCols: xs.NCols,
				Indices: append([]int64{5}, xs.Indices...)}
			if !pattern {
				shifted.Values = append([]float32{3}, xs.Values...)
			}
			for _, p := range xs.Indptr {
				shifted.Indptr = append(shifted.Indptr, p+1)
			}
			before := slices.Clone(xs.Indices)
			for _, procs := range []int{1, 3} {
				prev := runtime.GOMAXPROCS(procs)
				ys := (&Dropout{Rate: 0.4}).ForwardSparse(xs, true, testRNG(244))
				runtime.GOMAXPROCS(prev)
				require.NoError(t, ys.Validate())
				assert.Equal(t, want, densify(ys).Data, "GOMAXPROCS %d", procs)
				assert.Less(t, ys.NNZ(), xs.NNZ())
			}
			assert.Equal(t, before, xs.Indices, "x unchanged")
			ys := (&Dropout{Rate: 0.4}).ForwardSparse(shifted, true, testRNG(244))
			require.Equal(t, int64(0), ys.Indptr[0])
			assert.Equal(t, want, densify(ys).Data, "Indptr from 1")
		})
	}
}

// TestDropoutSparse checks that ForwardSparse on CSR rows draws exactly
// the random numbers of Forward on the dense rows and keeps the same
// entries, bitwise, for values and patterns; that zeros draw nothing on the
// dense path; that ForwardSparse has no Backward; and that reusing its
// arrays changes no result.
func TestDropoutSparse(t *testing.T) {
	for _, pattern := range []bool{false, true} {
		t.Run(fmt.Sprintf("pattern=%t", pattern), func(t *testing.T) {
			xs := randSparseRows(testRNG(240), 50, 40, 0.1, pattern)
			xd := densify(xs)
			dd := &Dropout{Rate: 0.3, SkipZeros: true}
			rd := testRNG(241)
			yd := dd.Forward(xd, true, rd)
			ds := &Dropout{Rate: 0.3}
			rs := testRNG(241)
			ys := ds.ForwardSparse(xs, true, rs)
			require.NoError(t, ys.Validate())
			assert.Equal(t, yd.Data, densify(ys).Data)
			next := rd.Uint64()
			assert.Equal(t, next, rs.Uint64(), "the same number of draws")
			assert.Less(t, ys.NNZ(), xs.NNZ(), "dropped entries are not stored")
			// One key from the caller's rng; the rows draw from their own
			// streams, so the mask does not depend on GOMAXPROCS.
			r := testRNG(241)
			r.Uint64()
			assert.Equal(t, r.Uint64(), next)
			for _, procs := range []int{1, 3} {
				prev := runtime.GOMAXPROCS(procs)
				y := (&Dropout{Rate: 0.3, SkipZeros: true}).Forward(xd, true, testRNG(241))
				runtime.GOMAXPROCS(prev)
				assert.Equal(t, yd.Data, y.Data, "GOMAXPROCS %d", procs)
			}
			assert.Panics(t, func() { ds.Backward(yd) })
			// The Dropout reuses its arrays: a smaller input after a
			// larger one, and the larger again, give what fresh Dropouts
			// give.
			small := randSparseRows(testRNG(245), 20, 40, 0.1, pattern)
			for _, in := range []*sparse.Matrix[float32]{small, xs} {
				got := ds.ForwardSparse(in, true, testRNG(246))
				require.NoError(t, got.Validate())
				want := (&Dropout{Rate: 0.3}).ForwardSparse(in, true, testRNG(246))
				assert.Equal(t, want, got, "reused arrays, %d rows", in.NRows)
			}
			// Evaluation and rate 0 return x itself.
			assert.Same(t, xs, ds.ForwardSparse(xs, false, nil))
			assert.Same(t, xs, (&Dropout{}).ForwardSparse(xs, true, nil))
			assert.Same(t, yd, ds.Backward(yd), "identity after an identity forward")
		})
	}
	// With SkipZeros a zero's mask is 0: it passes no gradient. Without, a
	// zero draws as before (the stream of hidden layers is unchanged).
	x := &dense.Matrix{Rows: 1, Cols: 5, Data: []float32{0, 1, 0, 2, 0}}
	ones := &dense.Matrix{Rows: 1, Cols: 5, Data: []float32{1, 1, 1, 1, 1}}
	d := &Dropout{Rate: 0.5, SkipZeros: true}
	d.Forward(x, true, testRNG(242))
	assert.Equal(t, []float32{0, 0, 0}, []float32{d.mask[0], d.mask[2], d.mask[4]})
	plain := &Dropout{Rate: 0.5}
	plain.Forward(x, true, testRNG(242))
	want := &Dropout{Rate: 0.5}
	want.Forward(ones, true, testRNG(242))
	assert.Equal(t, want.mask, plain.mask)
}

// sparseTrainCases are the models of TestSparseTrainingMatchesDense.
var sparseTrainCases = []struct {
	name string
	cfg  Config
}{
	{"sage", Config{Kind: "sage", In: 60, Hidden: 16, Out: 4, Layers: 2, Dropout: 0.5}},
	{"sage/normalize", Config{Kind: "sage", In: 60, Hidden: 16, Out: 4, Layers: 2, Dropout: 0.5, Normalize: true}},
	{"gcn", Config{Kind: "gcn", In: 60, Hidden: 16, Out: 4, Layers: 2, Dropout: 0.5}},
	{"gat", Config{Kind: "gat", In: 60, Hidden: 8, Heads: 2, OutHeads: 1, Out: 4, Layers: 2, Dropout: 0.5, AttnDropout: 0.3}},
}

// TestSparseTrainingMatchesDense trains two identical models with dropout
// on, one on dense input rows and one on the same rows as CSR (values and
// pattern), and checks that every step's loss agrees to 1e-5 relative
// (float32 rounding of sums taken in different orders, over 8 Adam steps),
// and that layer-wise inference agrees too.
func TestSparseTrainingMatchesDense(t *testing.T) {
	for ci, tc := range sparseTrainCases {
		for _, pattern := range []bool{false, true} {
			for _, bi := range blasImpls {
				t.Run(fmt.Sprintf("%s/pattern=%t/%s", tc.name, pattern, bi.name), func(t *testing.T) {
					rnd := testRNG(uint64(250 + ci))
					sizes := []int{40, 20, 10}
					blocks := chainBlocks(rnd, tc.cfg.Kind, sizes)
					// About 5% nonzero, as bag-of-words rows.
					xs := randSparseRows(rnd, sizes[0], tc.cfg.In, 0.05, pattern)
					xd := densify(xs)
					labels := make([]int32, sizes[2])
					for i := range labels {
						labels[i] = int32(rnd.IntN(tc.cfg.Out))
					}
					md, err := New(tc.cfg, testRNG(260), bi.impl)
					require.NoError(t, err)
					ms, err := New(tc.cfg, testRNG(260), bi.impl)
					require.NoError(t, err)
					od, os := NewAdam(0.01, 5e-4), NewAdam(0.01, 5e-4)
					rd, rs := testRNG(261), testRNG(261)
					for step := range 8 {
						md.ZeroGrad()
						ld, gd := SoftmaxCrossEntropy(md.Forward(blocks, xd, true, rd), labels)
						md.Backward(gd)
						od.Step(md.Params())
						ms.ZeroGrad()
						ls, gs := SoftmaxCrossEntropy(ms.ForwardSparse(blocks, xs, true, rs), labels)
						ms.Backward(gs)
						os.Step(ms.Params())
						require.InEpsilon(t, ld, ls, 1e-5, "step %d", step)
					}
					// Layer-wise inference: layer 0 on the sparse rows.
					hd := md.ForwardLayer(0, blocks[0], xd)
					hs := ms.ForwardLayerSparse(0, blocks[0], xs)
					require.True(t, testutil.Close(hs.Data, hd.Data, 1e-4))
					yd := md.ForwardLayer(1, blocks[1], hd)
					ys := ms.ForwardLayerSparse(1, blocks[1], sparse.FromDense(hs.Rows, hs.Cols, hs.Data))
					require.True(t, testutil.Close(ys.Data, yd.Data, 1e-4))
				})
			}
		}
	}
}

// TestSparseModelGradients checks dL/dW of whole models run by
// ForwardSparse (dropout on, masks fixed by reseeding) against central
// differences.
func TestSparseModelGradients(t *testing.T) {
	for ci, tc := range modelCases {
		t.Run(tc.name, func(t *testing.T) {
			rnd := testRNG(uint64(270 + ci))
			blocks := chainBlocks(rnd, tc.cfg.Kind, tc.sizes)
			xs := randSparseRows(rnd, tc.sizes[0], tc.cfg.In, 0.4, false)
			m, err := New(tc.cfg, rnd, nil)
			require.NoError(t, err)
			randomBiases(m, rnd)
			r := randMatrix(rnd, tc.sizes[len(tc.sizes)-1], tc.cfg.Out)
			fwd := func() *dense.Matrix { return m.ForwardSparse(blocks, xs, true, testRNG(99)) }
			f := func() float64 { return weightedSum(fwd(), r) }
			m.ZeroGrad()
			fwd()
			m.Backward(r)
			checkModelGrad(t, m, f)
		})
	}
}

// TestSparseMulTo checks that sparseMulTo overwrites whatever dst held
// with, bit for bit, clear and then sparseMulAdd, on values and patterns
// and on widths with and without a tail past the 8-column blocks.
func TestSparseMulTo(t *testing.T) {
	for _, pattern := range []bool{false, true} {
		for _, f := range []int{5, 16, 70} {
			rnd := testRNG(245)
			xs := randSparseRows(rnd, 300, 60, 0.1, pattern)
			w := randMatrix(rnd, 60, f).Data
			n := 250
			want := make([]float32, n*f)
			sparseMulAdd(want, xs, n, w, f)
			got := randMatrix(rnd, n, f).Data
			sparseMulTo(got, xs, n, w, f)
			assert.Equal(t, bitsOf(want), bitsOf(got), "pattern=%t f=%d", pattern, f)
		}
	}
}

// bitsOf returns the bit patterns of x (+0 and −0 differ).
func bitsOf(x []float32) []uint32 {
	b := make([]uint32, len(x))
	for i, v := range x {
		b[i] = math.Float32bits(v)
	}
	return b
}
