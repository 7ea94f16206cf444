package model

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoSteps runs opt on one 1×2 parameter W = (1, −2) with gradients
// (0.5, 0.1) and then (−0.3, 0.2), returning W after each step.
func twoSteps(opt Optimizer) [][]float32 {
	p := &Param{Name: "w", Rows: 1, Cols: 2, W: []float32{1, -2}, g: make([]float32, 2)}
	var out [][]float32
	for _, g := range [][]float32{{0.5, 0.1}, {-0.3, 0.2}} {
		copy(p.Grad(), g)
		opt.Step([]*Param{p})
		out = append(out, append([]float32(nil), p.W...))
	}
	return out
}

func TestOptimizerHandComputed(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Optimizer
		want [][]float64
	}{
		// torch.optim.Adam(lr=0.1, weight_decay=0.01) by hand, in float64:
		// step 1: g = (0.51, 0.08), m̂ = g, v̂ = g², so W moves by lr·sign(g);
		// step 2: g = (−0.291, 0.179), m = (0.0168, 0.0251),
		// v = (0.000344521, 0.0000384346), bias corrections 0.19 and 0.001999.
		{"adam", NewAdam(0.1, 0.01), [][]float64{
			{0.9000000019607843, -2.0999999875000017},
			{0.8787012438702138, -2.195271992145888},
		}},
		// torch.optim.SGD(lr=0.1, momentum=0.9, weight_decay=0.01):
		// step 1: b = g = (0.51, 0.08); step 2: b = 0.9·b + (−0.29051, 0.17992).
		{"sgd", NewSGD(0.1, 0.9, 0.01), [][]float64{
			{0.949, -2.008},
			{0.932151, -2.033192},
		}},
		// Plain SGD: W − 0.1·g.
		{"sgd/no-momentum", NewSGD(0.1, 0, 0), [][]float64{
			{0.95, -2.01},
			{0.98, -2.03},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := twoSteps(tc.opt)
			for s := range tc.want {
				for i, w := range tc.want[s] {
					// float32 weights: a few ulps of values near 1.
					assert.InDelta(t, w, float64(got[s][i]), 1e-6, "step %d weight %d", s+1, i)
				}
			}
		})
	}
}

func TestOptimizerStateRoundTrip(t *testing.T) {
	cfg := Config{Kind: "sage", In: 5, Hidden: 6, Out: 3, Layers: 2, Dropout: 0.2}
	sizes := []int{13, 8, 5}
	labels := []int32{0, 1, 2, 1, 0}
	for _, tc := range []struct {
		name string
		opt  func() Optimizer
	}{
		{"adam", func() Optimizer { return NewAdam(0.01, 5e-4) }},
		{"sgd", func() Optimizer { return NewSGD(0.05, 0.9, 5e-4) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rnd := testRNG(40)
			blocks := chainBlocks(rnd, cfg.Kind, sizes)
			x := randMatrix(rnd, sizes[0], cfg.In)
			step := func(m *Model, opt Optimizer, s int) {
				m.ZeroGrad()
				_, dl := SoftmaxCrossEntropy(m.Forward(blocks, x, true, testRNG(1000+uint64(s))), labels)
				m.Backward(dl)
				opt.Step(m.Params())
			}
			m, err := New(cfg, testRNG(41), nil)
			require.NoError(t, err)
			opt := tc.opt()
			for s := range 3 {
				step(m, opt, s)
			}
			// Checkpoint.
			weights, state := m.FlattenWeights(nil), opt.State()
			for s := 3; s < 6; s++ {
				step(m, opt, s)
			}
			want := m.FlattenWeights(nil)

			// Resume in a fresh model and optimizer.
			m2, err := New(cfg, testRNG(999), nil)
			require.NoError(t, err)
			m2.SetWeights(weights)
			opt2 := tc.opt()
			require.NoError(t, opt2.SetState(state))
			assert.Equal(t, state, opt2.State())
			for s := 3; s < 6; s++ {
				step(m2, opt2, s)
			}
			assert.Equal(t, want, m2.FlattenWeights(nil), "bit-identical continuation")
			assert.Equal(t, opt.State(), opt2.State())
		})
	}
}

func TestOptimizerStateErrors(t *testing.T) {
	adam, sgd := NewAdam(0.1, 0), NewSGD(0.1, 0.9, 0)
	twoSteps(adam)
	twoSteps(sgd)
	for _, tc := range []struct {
		name  string
		opt   Optimizer
		state []float32
	}{
		{"adam/sgd-state", NewAdam(0.1, 0), sgd.State()},
		{"adam/short", NewAdam(0.1, 0), adam.State()[:3]},
		{"adam/odd", NewAdam(0.1, 0), adam.State()[:5]},
		{"adam/bad-count", NewAdam(0.1, 0), []float32{1, 0.5, 0, 0}},
		{"sgd/adam-state", NewSGD(0.1, 0, 0), adam.State()},
		{"sgd/empty", NewSGD(0.1, 0, 0), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opt.SetState(tc.state)
			assert.True(t, errors.Is(err, ErrState), "got: %v want: ErrState", err)
		})
	}
	// Step counts beyond float32's 2²⁴ integers survive the round trip.
	a := NewAdam(0.1, 0)
	a.t = 1<<40 + 12345
	b := NewAdam(0.1, 0)
	require.NoError(t, b.SetState(a.State()))
	assert.Equal(t, a.t, b.t)
	// A state for other parameters is a programmer error at Step.
	c := NewAdam(0.1, 0)
	require.NoError(t, c.SetState(append(adam.State(), 0, 0)))
	assert.Panics(t, func() { twoSteps(c) })
}

// NewOptimizer maps each name to its optimizer with the given settings and
// refuses any other name.
func TestNewOptimizer(t *testing.T) {
	o, err := NewOptimizer("adam", 0.01, 0.9, 5e-4)
	require.NoError(t, err)
	assert.Equal(t, NewAdam(0.01, 5e-4), o)
	o, err = NewOptimizer("sgd", 0.1, 0.9, 5e-4)
	require.NoError(t, err)
	assert.Equal(t, NewSGD(0.1, 0.9, 5e-4), o)
	_, err = NewOptimizer("rmsprop", 0.1, 0, 0)
	assert.EqualError(t, err, `model: unknown optimizer "rmsprop" (want adam or sgd)`)
}

// An update run outside Step over Advance's corrections and the moments
// Moments returns is Step's, and State sees those moments.
func TestAdamAdvanceMoments(t *testing.T) {
	ref, ext := NewAdam(0.1, 0.01), NewAdam(0.1, 0.01)
	p := &Param{Name: "w", Rows: 1, Cols: 2, W: []float32{1, -2}, g: make([]float32, 2)}
	w := []float32{1, -2}
	for _, g := range [][]float32{{0.5, 0.1}, {-0.3, 0.2}} {
		copy(p.Grad(), g)
		ref.Step([]*Param{p})
		step, bc2s := ext.Advance()
		m, v := ext.Moments(2)
		for i := range w {
			gi := g[i] + ext.WeightDecay*w[i]
			m[i] = ext.Beta1*m[i] + (1-ext.Beta1)*gi
			v[i] = ext.Beta2*v[i] + (1-ext.Beta2)*gi*gi
			w[i] -= step * m[i] / (float32(math.Sqrt(float64(v[i])))/bc2s + ext.Eps)
		}
	}
	assert.Equal(t, p.W, w)
	assert.Equal(t, ref.State(), ext.State())
	assert.Panics(t, func() { ext.Moments(3) })
}

// Begin and StepRange over a random cover of the elements, in random
// order, give Step's weights and state bit for bit, step after step.
func TestRangeStepperMatchesStep(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func() RangeStepper
	}{
		{"adam", func() RangeStepper { return NewAdam(0.01, 5e-4) }},
		{"sgd", func() RangeStepper { return NewSGD(0.1, 0, 5e-4) }},
		{"sgd/momentum", func() RangeStepper { return NewSGD(0.1, 0.9, 5e-4) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rnd := testRNG(90)
			sizes := []int{5, 1, 17} // a range may span, start or end inside any of them
			mk := func() []*Param {
				var ps []*Param
				for _, n := range sizes {
					ps = append(ps, &Param{W: make([]float32, n), g: make([]float32, n)})
				}
				return ps
			}
			whole, ranged := mk(), mk()
			for i := range whole {
				for k := range whole[i].W {
					whole[i].W[k] = float32(rnd.NormFloat64())
				}
				copy(ranged[i].W, whole[i].W)
			}
			a, b := tc.new(), tc.new()
			for step := range 4 {
				for i := range whole {
					for k := range whole[i].Grad() {
						whole[i].Grad()[k] = float32(rnd.NormFloat64())
					}
					copy(ranged[i].Grad(), whole[i].Grad())
				}
				a.Step(whole)
				// Cut [0, 23) at random points and apply the pieces in a
				// random order.
				cuts := []int{0, 23}
				for range 1 + rnd.IntN(6) {
					cuts = append(cuts, rnd.IntN(24))
				}
				slices.Sort(cuts)
				order := rnd.Perm(len(cuts) - 1)
				b.Begin(ranged)
				for _, k := range order {
					b.StepRange(ranged, cuts[k], cuts[k+1])
				}
				for i := range whole {
					require.Equal(t, whole[i].W, ranged[i].W, "step %d param %d", step, i)
				}
				require.Equal(t, a.State(), b.State(), "step %d", step)
			}
		})
	}
}
