package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/internal/testutil"
	"gnnmpi/sparse"
)

// convKinds are the Conv kinds every deep test runs.
var convKinds = []Kind{ConvGCN, ConvSAGE, ConvResGCN, ConvGCNII}

// convCfg returns a small configuration of kind for the Conv tests (α and λ
// large enough that both residual terms matter).
func convCfg(kind Kind) DeepConfig {
	return DeepConfig{Kind: kind, In: 4, Hidden: 5, Out: 3, Layers: 4, Alpha: 0.3, Lambda: 0.5}
}

// convBlock returns an nd×ns block of uneven degrees for kind: GCNNorm of a
// random block, or the random block itself (no Values, an empty row) for
// sage.
func convBlock(rnd *rand.Rand, kind Kind, nd, ns int) *sparse.CSR {
	if kind == ConvSAGE {
		return randBlock(rnd, nd, ns, tdeg)
	}
	return gcnBlock(rnd, nd, ns, tdeg)
}

// convAux returns a random NDst×w aux input when c uses one, else nil.
func convAux(rnd *rand.Rand, c Conv, nd, w int) *dense.Matrix {
	if !c.UsesAux() {
		return nil
	}
	return randMatrix(rnd, nd, w)
}

// randomizeBiases sets every Param named "b" or "ln_b" to values in
// [-0.5, 0.5) and every LayerNorm gain "ln_g" to values in [0.5, 1.5), so
// that the gradient checks do not start from zero biases and unit gains.
func randomizeBiases(rnd *rand.Rand, ps []*Param) {
	for _, p := range ps {
		switch p.Name {
		case "b", "ln_b":
			for i := range p.W {
				p.W[i] = rnd.Float32() - 0.5
			}
		case "ln_g":
			for i := range p.W {
				p.W[i] = rnd.Float32() + 0.5
			}
		}
	}
}

// zeroGrads marks every gradient of ps zero (Param.ZeroGrad).
func zeroGrads(ps []*Param) {
	for _, p := range ps {
		p.ZeroGrad()
	}
}

// staleGrads fills every gradient of ps with NaN and then marks it zero,
// so that a Backward that added into the stale values instead of
// overwriting them would leave NaNs.
func staleGrads(ps []*Param) {
	for _, p := range ps {
		g := p.Grad()
		for i := range g {
			g[i] = float32(math.NaN())
		}
		p.ZeroGrad()
	}
}

func copyGrads(ps []*Param) [][]float32 {
	var g [][]float32
	for _, p := range ps {
		g = append(g, append([]float32(nil), p.Grad()...))
	}
	return g
}

// reluPositive reports, for every element, whether the input of c's ReLU
// in its last Forward was positive (for resgcn the ReLU after the
// LayerNorm, NSrc rows).
func reluPositive(c Conv) []bool {
	var m *reluMask
	switch c := c.(type) {
	case *reluConv[*GCN]:
		m = &c.relu
	case *resConv:
		pos := make([]bool, len(c.xhat))
		for i, h := range c.xhat {
			k := i % c.width
			pos[i] = lnPre(c.gain.W[k], c.bias.W[k], h) > 0
		}
		return pos
	case *reluConv[*SAGE]:
		m = &c.relu
	case *gcniiConv:
		m = &c.relu
	default:
		panic("unknown conv")
	}
	pos := make([]bool, m.rows*m.cols)
	for i := range pos {
		pos[i] = m.positive(i)
	}
	return pos
}

// TestConvGradients checks dL/dW for every Param (resgcn's LayerNorm gain
// and bias included), dL/dx and dL/daux of every Conv kind on a block with
// NDst < NSrc against central differences, with L = Σ r⊙out for a fixed
// random r. ReLU kinks crossed by a perturbation
// are handled by testutil.CheckGrad's one-sided fallbacks.
func TestConvGradients(t *testing.T) {
	for ki, kind := range convKinds {
		for _, bi := range blasImpls {
			t.Run(string(kind)+"/"+bi.name, func(t *testing.T) {
				rnd := testRNG(uint64(200 + ki))
				cfg := convCfg(kind)
				w := cfg.Hidden
				a := convBlock(rnd, kind, tnd, tns)
				require.NoError(t, a.Validate())
				x := randMatrix(rnd, tns, w)
				conv := NewConv(cfg, 2, rnd, bi.impl)
				randomizeBiases(rnd, conv.Params())
				aux := convAux(rnd, conv, tnd, w)
				r := randMatrix(rnd, tnd, w)
				blk := NewBlock(a)
				f := func() float64 { return weightedSum(conv.Forward(blk, x, aux), r) }

				zeroGrads(conv.Params())
				out := conv.Forward(blk, x, aux)
				require.Equal(t, tnd, out.Rows)
				require.Equal(t, w, out.Cols)
				// Both sides of the ReLU are exercised.
				var zeros, pos int
				for _, p := range reluPositive(conv) {
					if p {
						pos++
					} else {
						zeros++
					}
				}
				require.Positive(t, zeros, "some ReLU outputs are 0")
				require.Positive(t, pos, "some ReLU outputs are > 0")

				dx, daux := conv.Backward(r)
				require.Equal(t, tns, dx.Rows)
				require.Equal(t, w, dx.Cols)
				if conv.UsesAux() {
					require.NotNil(t, daux)
					require.Equal(t, tnd, daux.Rows)
					require.Equal(t, w, daux.Cols)
				} else {
					require.Nil(t, daux)
				}
				want := copyGrads(conv.Params())

				// Backward accumulates: a second pass doubles G.
				conv.Forward(blk, x, aux)
				conv.Backward(r)
				assertDoubled(t, conv.Params(), want)

				for i, p := range conv.Params() {
					testutil.GradCheck(t, p.Name, f, p.W, want[i], fdEps, fdTol)
				}
				testutil.GradCheck(t, "x", f, x.Data, dx.Data, fdEps, fdTol)
				if aux != nil {
					testutil.GradCheck(t, "aux", f, aux.Data, daux.Data, fdEps, fdTol)
				}
			})
		}
	}
}

func TestLinearGradients(t *testing.T) {
	for _, bi := range blasImpls {
		t.Run(bi.name, func(t *testing.T) {
			rnd := testRNG(210)
			x := randMatrix(rnd, 6, 5)
			l := NewLinear(5, 3, rnd, bi.impl)
			randomizeBiases(rnd, l.Params())
			require.Equal(t, 3, l.OutDim())
			r := randMatrix(rnd, 6, 3)
			f := func() float64 { return weightedSum(l.Forward(x), r) }

			zeroGrads(l.Params())
			l.Forward(x)
			dx := l.Backward(r, true)
			require.Equal(t, 6, dx.Rows)
			require.Equal(t, 5, dx.Cols)
			want := copyGrads(l.Params())

			zeroGrads(l.Params())
			l.Forward(x)
			assert.Nil(t, l.Backward(r, false))
			for i, p := range l.Params() {
				assert.Equal(t, want[i], p.Grad(), p.Name)
			}
			assert.Equal(t, "w", l.Params()[0].Name)
			assert.Equal(t, "b", l.Params()[1].Name)
			for i, p := range l.Params() {
				testutil.GradCheck(t, p.Name, f, p.W, want[i], fdEps, fdTol)
			}
			testutil.GradCheck(t, "x", f, x.Data, dx.Data, fdEps, fdTol)
		})
	}
}

// deepStack is a whole deep model as DeepConfig describes it, assembled the
// way a caller would: Linear+ReLU, Layers Convs, Linear, with dropout on
// the input of each.
type deepStack struct {
	cfg   DeepConfig
	in    *Linear
	act   ReLU
	convs []Conv
	out   *Linear
	drops []Dropout // Layers+2: before in, before each Conv, before out

	margin float64 // smallest |ReLU input| in the last forward
}

func newDeepStack(cfg DeepConfig, rnd *rand.Rand, impl blas.Float32Level3) *deepStack {
	s := &deepStack{cfg: cfg, in: NewLinear(cfg.In, cfg.Hidden, rnd, impl), drops: make([]Dropout, cfg.Layers+2)}
	for l := 1; l <= cfg.Layers; l++ {
		s.convs = append(s.convs, NewConv(cfg, l, rnd, impl))
	}
	s.out = NewLinear(cfg.Hidden, cfg.Out, rnd, impl)
	for i := range s.drops {
		s.drops[i].Rate = cfg.Dropout
	}
	return s
}

func (s *deepStack) params() []*Param {
	ps := s.in.Params()
	for _, c := range s.convs {
		ps = append(ps, c.Params()...)
	}
	return append(ps, s.out.Params()...)
}

// forward runs the stack in training mode on a full-graph block a
// (NDst = NSrc), drawing dropout masks from rng. It sets s.margin to the
// smallest |input| of any ReLU.
func (s *deepStack) forward(a *sparse.CSR, x *dense.Matrix, rng *rand.Rand) *dense.Matrix {
	blk := NewBlock(a)
	pre := s.in.Forward(s.drops[0].Forward(x, true, rng))
	s.margin = minAbs(pre)
	h := s.act.Forward(pre)
	h0 := h
	for l, c := range s.convs {
		var aux *dense.Matrix
		switch s.cfg.Kind {
		case ConvResGCN:
			aux = h // the undropped input; all rows are destinations
		case ConvGCNII:
			aux = h0
		}
		xd := s.drops[l+1].Forward(h, true, rng)
		h = c.Forward(blk, xd, aux)
		s.margin = math.Min(s.margin, minAbs(convPre(c, a, xd)))
	}
	return s.out.Forward(s.drops[len(s.drops)-1].Forward(h, true, rng))
}

// convPre returns the input of c's ReLU in its last Forward, on block a and
// input x, without disturbing c's cache.
func convPre(c Conv, a *sparse.CSR, x *dense.Matrix) *dense.Matrix {
	switch c := c.(type) {
	case *reluConv[*GCN]:
		return c.l.shared().Forward(a, x, false, nil)
	case *resConv:
		pre := dense.New(x.Rows, c.width)
		for i, h := range c.xhat {
			k := i % c.width
			pre.Data[i] = lnPre(c.gain.W[k], c.bias.W[k], h)
		}
		return pre
	case *reluConv[*SAGE]:
		return c.l.shared().Forward(a, x, false, nil)
	case *gcniiConv:
		nd, w := int(c.blk.CSR().NRows), c.width
		pre := dense.New(nd, w)
		copy(pre.Data, c.s)
		dense.Gemm(c.impl, blas.NoTrans, blas.NoTrans, nd, w, w, float32(c.beta), c.s, c.w.W, float32(1-c.beta), pre.Data)
		return pre
	}
	panic("unknown conv")
}

// minAbs returns the smallest nonzero |entry| of m (+Inf if none).
func minAbs(m *dense.Matrix) float64 {
	v := math.Inf(1)
	for _, x := range m.Data {
		if x != 0 {
			v = math.Min(v, math.Abs(float64(x)))
		}
	}
	return v
}

// backward back-propagates dlogits through the last forward.
func (s *deepStack) backward(dlogits *dense.Matrix) {
	dh := s.drops[len(s.drops)-1].Backward(s.out.Backward(dlogits, true))
	var dh0 *dense.Matrix
	for l := len(s.convs) - 1; l >= 0; l-- {
		dx, daux := s.convs[l].Backward(dh)
		dh = s.drops[l+1].Backward(dx)
		switch s.cfg.Kind {
		case ConvResGCN:
			dense.Axpy(1, daux.Data, dh.Data)
		case ConvGCNII:
			if dh0 == nil {
				dh0 = dense.New(daux.Rows, daux.Cols)
			}
			dense.Axpy(1, daux.Data, dh0.Data)
		}
	}
	if dh0 != nil {
		dense.Axpy(1, dh0.Data, dh.Data)
	}
	s.in.Backward(s.act.Backward(dh), false)
}

// TestDeepStackGradients checks, for every kind, the gradient of the softmax
// cross-entropy (summed over the rows) of a whole stack (Linear+ReLU, 3
// Convs, Linear, dropout masks fixed by reseeding) on a small full graph
// (NDst = NSrc) against central differences, for every weight at once:
// W_in's gradient passes through every Conv's dx and daux. As in
// checkModelGrad, one CheckGrad over all weights sets the floor by the
// largest gradient of the stack. The weights and inputs are redrawn, from a
// deterministic sequence of seeds, until no nonzero ReLU input lies within
// 0.01 of 0, so that the perturbations (up to 1e-2 in one weight) rarely
// cross a kink and CheckGrad's fallback handles those that do. Exact zeros
// are rows whose inputs are all zero (a dropped or dead neighbourhood), which
// stay zero under the perturbations.
func TestDeepStackGradients(t *testing.T) {
	const (
		n         = 8
		margin    = 0.01
		maxTries  = 1000
		seedFirst = 300
	)
	g := randGraph(31, n, 0.4) // vertex n−1 is isolated
	deg := make([]int64, n)
	for i := range deg {
		deg[i] = g.Degree(int64(i))
	}
	norm := GCNNorm(g, deg, deg)
	for ki, kind := range convKinds {
		for _, bi := range blasImpls {
			t.Run(string(kind)+"/"+bi.name, func(t *testing.T) {
				a := norm
				if kind == ConvSAGE {
					a = g
				}
				cfg := DeepConfig{Kind: kind, In: 4, Hidden: 4, Out: 3, Layers: 3, Dropout: 0.2, Alpha: 0.2, Lambda: 0.5}
				require.NoError(t, cfg.Validate())
				var (
					s      *deepStack
					x      *dense.Matrix
					labels = make([]int32, n)
				)
				// The loss is summed rather than averaged over the rows, so
				// that the gradients stand well above float32 noise.
				f := func() float64 {
					loss, _ := SoftmaxCrossEntropy(s.forward(a, x, testRNG(99)), labels)
					return loss * n
				}
				tries := 0
				for ; tries < maxTries; tries++ {
					rnd := testRNG(uint64(1000*(seedFirst+ki) + tries))
					x = randMatrix(rnd, n, cfg.In)
					for i := range labels {
						labels[i] = int32(rnd.IntN(cfg.Out))
					}
					s = newDeepStack(cfg, rnd, bi.impl)
					randomizeBiases(rnd, s.params())
					f()
					if s.margin >= margin {
						break
					}
				}
				require.Less(t, tries, maxTries, "no draw keeps the ReLU inputs %g away from 0", margin)

				ps := s.params()
				zeroGrads(ps)
				_, dlogits := SoftmaxCrossEntropy(s.forward(a, x, testRNG(99)), labels)
				dense.Scale(n, dlogits.Data)
				s.backward(dlogits)
				for _, p := range s.in.Params() {
					require.NotZero(t, maxAbs(p.Grad()), "in.%s has a gradient", p.Name)
				}

				var w, grad []float32
				var names []string
				for i, p := range ps {
					w = append(w, p.W...)
					grad = append(grad, p.Grad()...)
					for k := range p.W {
						names = append(names, fmt.Sprintf("%s.%s[%d]", s.paramOwner(i), p.Name, k))
					}
				}
				set := func() {
					off := 0
					for _, p := range ps {
						off += copy(p.W, w[off:])
					}
				}
				for _, m := range testutil.CheckGrad(func() float64 { set(); return f() }, w, grad, fdEps, fdTol) {
					t.Errorf("%s: got: %g want: %g (central difference, eps %g)", names[m.Index], m.Got, m.Want, fdEps)
				}
			})
		}
	}
}

// paramOwner names the layer of the i-th entry of s.params(): "in",
// "conv<l>" or "out".
func (s *deepStack) paramOwner(i int) string {
	if i < len(s.in.Params()) {
		return "in"
	}
	i -= len(s.in.Params())
	for l, c := range s.convs {
		if i < len(c.Params()) {
			return fmt.Sprintf("conv%d", l+1)
		}
		i -= len(c.Params())
	}
	return "out"
}

func maxAbs(v []float32) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(float64(x)))
	}
	return m
}

// TestConvShared runs two Shared copies of a Conv (and of a Linear) on
// different blocks, then back-propagates in reverse order: the Params'
// gradients are the sum of two separate runs, and each copy's outputs and
// input gradients are those of a fresh single run.
func TestConvShared(t *testing.T) {
	for ki, kind := range convKinds {
		for _, bi := range blasImpls {
			t.Run(string(kind)+"/"+bi.name, func(t *testing.T) {
				rnd := testRNG(uint64(230 + ki))
				cfg := convCfg(kind)
				w := cfg.Hidden
				conv := NewConv(cfg, 3, rnd, bi.impl)
				randomizeBiases(rnd, conv.Params())
				type input struct {
					a          *sparse.CSR
					x, aux, dy *dense.Matrix
				}
				in := []input{{a: convBlock(rnd, kind, tnd, tns)}, {a: convBlock(rnd, kind, 5, 9)}}
				for i := range in {
					nd, ns := int(in[i].a.NRows), int(in[i].a.NCols)
					in[i].x = randMatrix(rnd, ns, w)
					in[i].aux = convAux(rnd, conv, nd, w)
					in[i].dy = randMatrix(rnd, nd, w)
				}

				// Separate fresh runs.
				var outs, dxs, dauxs []*dense.Matrix
				sum := make([][]float32, len(conv.Params()))
				for _, c := range in {
					zeroGrads(conv.Params())
					outs = append(outs, conv.Forward(NewBlock(c.a), c.x, c.aux))
					dx, daux := conv.Backward(c.dy)
					dxs, dauxs = append(dxs, dx), append(dauxs, daux)
					for i, p := range conv.Params() {
						if sum[i] == nil {
							sum[i] = make([]float32, len(p.Grad()))
						}
						dense.Axpy(1, p.Grad(), sum[i])
					}
				}

				// Two copies in flight.
				zeroGrads(conv.Params())
				cs := []Conv{conv.Shared(), conv.Shared()}
				assert.Equal(t, conv.UsesAux(), cs[0].UsesAux())
				for i, p := range cs[0].Params() {
					assert.Same(t, conv.Params()[i], p)
					assert.Same(t, conv.Params()[i], cs[1].Params()[i])
				}
				for i, c := range cs {
					out := c.Forward(NewBlock(in[i].a), in[i].x, in[i].aux)
					assert.Equal(t, outs[i].Data, out.Data, "out %d", i)
				}
				for i := len(cs) - 1; i >= 0; i-- {
					dx, daux := cs[i].Backward(in[i].dy)
					assert.Equal(t, dxs[i].Data, dx.Data, "dx %d", i)
					if dauxs[i] == nil {
						assert.Nil(t, daux)
					} else {
						assert.Equal(t, dauxs[i].Data, daux.Data, "daux %d", i)
					}
				}
				for i, p := range conv.Params() {
					assert.True(t, testutil.Close(p.Grad(), sum[i], 1e-6), "%s is the sum", p.Name)
				}
			})
		}
	}
}

func TestLinearShared(t *testing.T) {
	for _, bi := range blasImpls {
		t.Run(bi.name, func(t *testing.T) {
			rnd := testRNG(240)
			l := NewLinear(5, 3, rnd, bi.impl)
			xs := []*dense.Matrix{randMatrix(rnd, 6, 5), randMatrix(rnd, 4, 5)}
			dys := []*dense.Matrix{randMatrix(rnd, 6, 3), randMatrix(rnd, 4, 3)}
			var dxs []*dense.Matrix
			sum := make([][]float32, 2)
			for i := range xs {
				zeroGrads(l.Params())
				l.Forward(xs[i])
				dxs = append(dxs, l.Backward(dys[i], true))
				for k, p := range l.Params() {
					if sum[k] == nil {
						sum[k] = make([]float32, len(p.Grad()))
					}
					dense.Axpy(1, p.Grad(), sum[k])
				}
			}
			zeroGrads(l.Params())
			ls := []*Linear{l.Shared(), l.Shared()}
			for k, p := range ls[1].Params() {
				assert.Same(t, l.Params()[k], p)
			}
			assert.Equal(t, 3, ls[0].OutDim())
			for i, c := range ls {
				c.Forward(xs[i])
			}
			for i := len(ls) - 1; i >= 0; i-- {
				assert.Equal(t, dxs[i].Data, ls[i].Backward(dys[i], true).Data)
			}
			for k, p := range l.Params() {
				assert.True(t, testutil.Close(p.Grad(), sum[k], 1e-6), p.Name)
			}
		})
	}
}

// TestGCNIIForward checks GCNII's formula on explicit matrices, with α = 0
// and α = 0.5, and that layer l uses β_l = ln(λ/l + 1).
func TestGCNIIForward(t *testing.T) {
	// Row 0 of Â: 0.5 at source 0 and 0.25 at source 2; row 1: 1 at source 1.
	a := &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 2, 3}, Indices: []int64{0, 2, 1}, Values: []float64{0.5, 0.25, 1}}
	x := &dense.Matrix{Rows: 3, Cols: 2, Data: []float32{1, 2, 3, 4, -4, 8}}
	aux := &dense.Matrix{Rows: 2, Cols: 2, Data: []float32{2, -2, 1, 1}}
	wt := []float32{1, 2, 0, -1} // W = [[1, 2], [0, -1]]
	relu := func(v float64) float64 { return math.Max(v, 0) }
	for _, bi := range blasImpls {
		for _, alpha := range []float64{0, 0.5} {
			for _, l := range []int{1, 8} {
				cfg := DeepConfig{Kind: ConvGCNII, Hidden: 2, Layers: 8, Alpha: alpha, Lambda: 0.5}
				c := NewConv(cfg, l, testRNG(0), bi.impl)
				copy(c.Params()[0].W, wt)
				beta := math.Log(0.5/float64(l) + 1)
				require.InDelta(t, beta, c.(*gcniiConv).beta, 1e-15)
				out := c.Forward(NewBlock(a), x, aux)
				// S row 0 = (1−α)·(0.5·(1, 2) + 0.25·(−4, 8)) + α·(2, −2)
				//         = (1−α)·(−0.5, 3) + α·(2, −2);
				// S·W row 0 = (s0, 2·s0 − s1).
				s0, s1 := (1-alpha)*-0.5+alpha*2, (1-alpha)*3+alpha*-2
				want0 := []float64{
					relu((1-beta)*s0 + beta*s0),
					relu((1-beta)*s1 + beta*(2*s0-s1)),
				}
				// Row 1: S = (1−α)·(3, 4) + α·(1, 1).
				t0, t1 := (1-alpha)*3+alpha, (1-alpha)*4+alpha
				want1 := []float64{
					relu((1-beta)*t0 + beta*t0),
					relu((1-beta)*t1 + beta*(2*t0-t1)),
				}
				assert.InDeltaSlice(t, want0, f64(out.Row(0)), 1e-6, "%s α %g l %d row 0", bi.name, alpha, l)
				assert.InDeltaSlice(t, want1, f64(out.Row(1)), 1e-6, "%s α %g l %d row 1", bi.name, alpha, l)
			}
		}
	}
	// With α = 0 row 0 is (0, 3 − 7β): positive at both layers, and layer 8
	// (β = ln(1.0625)) keeps more of S than layer 1 (β = ln 1.5).
	c1 := NewConv(DeepConfig{Kind: ConvGCNII, Hidden: 2, Layers: 8, Lambda: 0.5}, 1, testRNG(0), nil)
	c8 := NewConv(DeepConfig{Kind: ConvGCNII, Hidden: 2, Layers: 8, Lambda: 0.5}, 8, testRNG(0), nil)
	copy(c1.Params()[0].W, wt)
	copy(c8.Params()[0].W, wt)
	blk := NewBlock(a)
	o1, o8 := c1.Forward(blk, x, aux).Row(0), c8.Forward(blk, x, aux).Row(0)
	assert.InDelta(t, 3-7*math.Log(1.5), float64(o1[1]), 1e-6)
	assert.InDelta(t, 3-7*math.Log(1.0625), float64(o8[1]), 1e-6)
	assert.Equal(t, float32(0), o1[0])
}

// TestResGCNForward checks the resgcn formula on explicit matrices: 2
// destinations, 3 sources, width 3, with γ, β, W and b set by hand, so that
// each output row is worked out below from the LayerNorm of the rows of x.
func TestResGCNForward(t *testing.T) {
	// Row 0 of Â: 0.5 at source 0 and 0.25 at source 2; row 1: 1 at source 1.
	a := &sparse.CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 2, 3}, Indices: []int64{0, 2, 1}, Values: []float64{0.5, 0.25, 1}}
	x := &dense.Matrix{Rows: 3, Cols: 3, Data: []float32{
		1, 2, 3, // mean 2, variance 2/3
		-1, -1, 2, // mean 0, variance 2
		4, 0, 2, // mean 2, variance 8/3
	}}
	aux := &dense.Matrix{Rows: 2, Cols: 3, Data: []float32{1, -1, 2, 0.5, 0, -0.5}}
	for _, bi := range blasImpls {
		c := NewConv(DeepConfig{Kind: ConvResGCN, Hidden: 3, Layers: 1}, 1, testRNG(0), bi.impl)
		ps := c.Params()
		copy(ps[0].W, []float32{1, 0, -1, 2, 1, 0, 0, 1, 1}) // W = [[1, 0, −1], [2, 1, 0], [0, 1, 1]]
		copy(ps[1].W, []float32{0.1, 0.2, 0.3})              // b
		copy(ps[2].W, []float32{1, 2, 0.5})                  // γ
		copy(ps[3].W, []float32{0.5, -0.5, 0})               // β
		out := c.Forward(NewBlock(a), x, aux)
		r0 := 1 / math.Sqrt(2.0/3+1e-5)
		r1 := 1 / math.Sqrt(2+1e-5)
		r2 := 1 / math.Sqrt(8.0/3+1e-5)
		// γ⊙x̂ + β, then ReLU:
		//   source 0: x̂ = (−1, 0, 1)·r0  → (0.5 − r0, −0.5, 0.5·r0)     → z = (0, 0, 0.5·r0)
		//   source 1: x̂ = (−1, −1, 2)·r1 → (0.5 − r1, −0.5 − 2·r1, r1)  → z = (0, 0, r1)
		//   source 2: x̂ = (2, −2, 0)·r2  → (0.5 + 2·r2, −0.5 − 4·r2, 0) → z = (0.5 + 2·r2, 0, 0)
		// (r0 ≈ 1.22, r1 ≈ 0.71, r2 ≈ 0.61).
		// Row 0: s = 0.5·z_0 + 0.25·z_2 = (0.25·(0.5 + 2·r2), 0, 0.25·r0),
		// s·W = (s0, s2, s2 − s0), out = aux_0 + s·W + b.
		s0, s2 := 0.25*(0.5+2*r2), 0.25*r0
		want0 := []float64{1 + s0 + 0.1, -1 + s2 + 0.2, 2 + s2 - s0 + 0.3}
		// Row 1: s = z_1 = (0, 0, r1), s·W = (0, r1, r1).
		want1 := []float64{0.5 + 0.1, r1 + 0.2, -0.5 + r1 + 0.3}
		assert.InDeltaSlice(t, want0, f64(out.Row(0)), 1e-6, "%s row 0", bi.name)
		assert.InDeltaSlice(t, want1, f64(out.Row(1)), 1e-6, "%s row 1", bi.name)
	}
}

// TestResGCNStable stacks 32 resgcn layers (one block, the full graph, no
// dropout, aux the layer's input) with Glorot weights from a fixed seed on
// inputs of unit scale: the pre-activation residual keeps the output's RMS
// within 10× the input's, where the former out = aux + ReLU(Â·x·W + b) grew
// it by more than 1000×.
func TestResGCNStable(t *testing.T) {
	const n, w, layers = 300, 32, 32
	g := randGraph(280, n, 0.03)
	deg := make([]int64, n)
	for i := range deg {
		deg[i] = g.Degree(int64(i))
	}
	a := GCNNorm(g, deg, deg)
	rnd := testRNG(281)
	x := dense.New(n, w)
	for i := range x.Data {
		x.Data[i] = float32(rnd.NormFloat64())
	}
	rms := func(m *dense.Matrix) float64 {
		var s float64
		for _, v := range m.Data {
			s += float64(v) * float64(v)
		}
		return math.Sqrt(s / float64(len(m.Data)))
	}
	cfg := DeepConfig{Kind: ConvResGCN, Hidden: w, Layers: layers}
	h := x
	blk := NewBlock(a)
	for l := 1; l <= layers; l++ {
		h = NewConv(cfg, l, rnd, nil).Forward(blk, h, h)
	}
	in, out := rms(x), rms(h)
	t.Logf("RMS: input %.3f, after %d layers %.3f", in, layers, out)
	assert.Less(t, out, 10*in)
}

func f64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestConvForward checks the gcn, resgcn and sage kinds against the layers
// they wrap: ReLU of GCN, aux + GCN of ReLU(LayerNorm(x)) for resgcn (the
// LayerNorm computed here in float64, γ = 1 and β = 0 as initialised) and
// ReLU of SAGE without normalisation.
func TestConvForward(t *testing.T) {
	for ki, kind := range []Kind{ConvGCN, ConvResGCN, ConvSAGE} {
		rnd := testRNG(uint64(250 + ki))
		cfg := convCfg(kind)
		a := convBlock(rnd, kind, tnd, tns)
		x := randMatrix(rnd, tns, cfg.Hidden)
		aux := randMatrix(rnd, tnd, cfg.Hidden)
		var ref Layer
		if kind == ConvSAGE {
			ref = NewSAGE(cfg.Hidden, cfg.Hidden, false, testRNG(1), nil)
		} else {
			ref = NewGCN(cfg.Hidden, cfg.Hidden, testRNG(1), nil)
		}
		c := NewConv(cfg, 1, testRNG(1), nil)
		ps := c.Params()
		if kind == ConvResGCN {
			require.Len(t, ps, 4)
			for i, name := range []string{"ln_g", "ln_b"} {
				p := ps[2+i]
				assert.Equal(t, name, p.Name)
				assert.Equal(t, 1, p.Rows)
				assert.Equal(t, cfg.Hidden, p.Cols)
				for _, v := range p.W {
					assert.Equal(t, float32(1-i), v, "%s initialised to %d", name, 1-i)
				}
			}
			ps = ps[:2]
		}
		require.Equal(t, len(ref.Params()), len(ps), kind)
		for i, p := range ps {
			assert.Equal(t, ref.Params()[i].Name, p.Name, kind)
			assert.Equal(t, ref.Params()[i].W, p.W, "%s: same draws from rng", kind)
		}
		got := c.Forward(NewBlock(a), x, aux)
		if kind == ConvResGCN {
			z := dense.New(x.Rows, x.Cols)
			for j := range x.Rows {
				row := f64(x.Row(j))
				var mean, vr float64
				for _, v := range row {
					mean += v
				}
				mean /= float64(len(row))
				for _, v := range row {
					vr += (v - mean) * (v - mean)
				}
				vr /= float64(len(row))
				for k, v := range row {
					z.Data[j*x.Cols+k] = float32(math.Max((v-mean)/math.Sqrt(vr+1e-5), 0))
				}
			}
			want := ref.Forward(a, z, false, nil)
			dense.Axpy(1, aux.Data, want.Data)
			assert.True(t, testutil.Close(got.Data, want.Data, 1e-5), kind)
		} else {
			// gcn and sage ignore aux.
			want := (&ReLU{}).Forward(ref.Forward(a, x, false, nil))
			assert.Equal(t, want.Data, got.Data, kind)
		}
		assert.Equal(t, kind == ConvResGCN, c.UsesAux(), kind)
	}
	c := NewConv(convCfg(ConvGCNII), 1, testRNG(1), nil)
	assert.True(t, c.UsesAux())
	require.Len(t, c.Params(), 1)
	assert.Equal(t, "w", c.Params()[0].Name)
	assert.Equal(t, 5, c.Params()[0].Rows)
	assert.Equal(t, 5, c.Params()[0].Cols)
}

// TestConvGOMAXPROCS checks that Conv results are bit-identical with one and
// with several goroutines, on a block large enough for the sparse kernels
// to split.
func TestConvGOMAXPROCS(t *testing.T) {
	const n, w = 3000, 24
	for ki, kind := range convKinds {
		t.Run(string(kind), func(t *testing.T) {
			rnd := testRNG(uint64(260 + ki))
			a := convBlock(rnd, kind, n, n)
			x := randMatrix(rnd, n, w)
			aux := randMatrix(rnd, n, w)
			dy := randMatrix(rnd, n, w)
			cfg := convCfg(kind)
			cfg.Hidden = w
			run := func(procs int) (out, dx []float32, g [][]float32) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				c := NewConv(cfg, 1, testRNG(1), nil)
				var ax *dense.Matrix
				if c.UsesAux() {
					ax = aux
				}
				o := c.Forward(NewBlock(a), x, ax)
				d, _ := c.Backward(dy)
				return o.Data, d.Data, copyGrads(c.Params())
			}
			o1, d1, g1 := run(1)
			o4, d4, g4 := run(4)
			assert.Equal(t, o1, o4)
			assert.Equal(t, d1, d4)
			assert.Equal(t, g1, g4)
		})
	}
}

func TestConvPanics(t *testing.T) {
	rnd := testRNG(270)
	for _, kind := range convKinds {
		cfg := convCfg(kind)
		assert.Panics(t, func() { NewConv(cfg, 0, rnd, nil) }, kind)
		assert.Panics(t, func() { NewConv(cfg, cfg.Layers+1, rnd, nil) }, kind)
		bad := cfg
		bad.Hidden = 0
		assert.Panics(t, func() { NewConv(bad, 1, rnd, nil) }, kind)
		c := NewConv(cfg, 1, rnd, nil)
		assert.Panics(t, func() { c.Backward(dense.New(tnd, cfg.Hidden)) }, "%s: Backward before Forward", kind)
		a := NewBlock(convBlock(rnd, kind, tnd, tns))
		x := randMatrix(rnd, tns, cfg.Hidden)
		aux := randMatrix(rnd, tnd, cfg.Hidden)
		assert.Panics(t, func() { c.Forward(a, randMatrix(rnd, tns, cfg.Hidden+1), aux) }, "%s: x width", kind)
		if c.UsesAux() {
			assert.Panics(t, func() { c.Forward(a, x, nil) }, "%s: nil aux", kind)
			assert.Panics(t, func() { c.Forward(a, x, randMatrix(rnd, tnd+1, cfg.Hidden)) }, "%s: aux rows", kind)
		}
		if kind != ConvSAGE {
			plain := NewBlock(randBlock(rnd, tnd, tns, tdeg))
			assert.Panics(t, func() { c.Forward(plain, x, aux) }, "%s: no Values", kind)
		}
		c.Forward(a, x, aux)
		assert.Panics(t, func() { c.Backward(dense.New(tnd+1, cfg.Hidden)) }, "%s: dy shape", kind)
	}
	assert.Panics(t, func() { NewConv(DeepConfig{Kind: "gat", Hidden: 2, Layers: 1}, 1, rnd, nil) })
	assert.Panics(t, func() { NewConv(DeepConfig{Kind: ConvGCNII, Hidden: 2, Layers: 1, Alpha: 0.1}, 1, rnd, nil) }, "lambda 0")
	assert.Panics(t, func() { NewConv(DeepConfig{Kind: ConvGCNII, Hidden: 2, Layers: 1, Alpha: 2, Lambda: 1}, 1, rnd, nil) }, "alpha 2")
	assert.Panics(t, func() { NewLinear(0, 2, rnd, nil) })
	l := NewLinear(3, 2, rnd, nil)
	assert.Panics(t, func() { l.Backward(dense.New(1, 2), true) }, "Backward before Forward")
	assert.Panics(t, func() { l.Forward(dense.New(1, 4)) })
	l.Forward(dense.New(1, 3))
	assert.Panics(t, func() { l.Backward(dense.New(2, 2), true) })
}

func TestDeepConfig(t *testing.T) {
	for _, kind := range convKinds {
		c := DefaultDeep(kind)
		assert.Equal(t, DeepConfig{Kind: kind, Hidden: 100, Layers: 32, Dropout: 0.5, Alpha: 0.1, Lambda: 0.5}, c)
		assert.ErrorIs(t, c.Validate(), ErrConfig, "%s: In and Out unset", kind)
		c.In, c.Out = 10, 3
		assert.NoError(t, c.Validate(), kind)
	}
	good := DeepConfig{Kind: ConvGCNII, In: 3, Hidden: 4, Out: 2, Layers: 1, Alpha: 0.1, Lambda: 0.5}
	require.NoError(t, good.Validate())
	edge := good
	edge.Alpha, edge.Dropout = 1, 0
	assert.NoError(t, edge.Validate(), "α = 1, no dropout")
	edge.Alpha = 0
	assert.NoError(t, edge.Validate(), "α = 0")
	for _, tc := range []struct {
		name string
		mod  func(*DeepConfig)
	}{
		{"kind", func(c *DeepConfig) { c.Kind = "gat" }},
		{"empty kind", func(c *DeepConfig) { c.Kind = "" }},
		{"layers", func(c *DeepConfig) { c.Layers = 0 }},
		{"in", func(c *DeepConfig) { c.In = 0 }},
		{"hidden", func(c *DeepConfig) { c.Hidden = 0 }},
		{"out", func(c *DeepConfig) { c.Out = -1 }},
		{"dropout 1", func(c *DeepConfig) { c.Dropout = 1 }},
		{"dropout negative", func(c *DeepConfig) { c.Dropout = -0.1 }},
		{"dropout NaN", func(c *DeepConfig) { c.Dropout = float32(math.NaN()) }},
		{"alpha negative", func(c *DeepConfig) { c.Alpha = -0.1 }},
		{"alpha > 1", func(c *DeepConfig) { c.Alpha = 1.5 }},
		{"alpha NaN", func(c *DeepConfig) { c.Alpha = math.NaN() }},
		{"lambda 0", func(c *DeepConfig) { c.Lambda = 0 }},
		{"lambda negative", func(c *DeepConfig) { c.Lambda = -1 }},
		{"lambda inf", func(c *DeepConfig) { c.Lambda = math.Inf(1) }},
	} {
		c := good
		tc.mod(&c)
		err := c.Validate()
		assert.True(t, errors.Is(err, ErrConfig), "%s: %v", tc.name, err)
	}
	// α and λ matter only for gcnii.
	other := good
	other.Kind, other.Alpha, other.Lambda = ConvResGCN, 5, 0
	assert.NoError(t, other.Validate())
}
