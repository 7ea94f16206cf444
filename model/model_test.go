package model

import (
	"errors"
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

// chainBlocks returns blocks for len(sizes)−1 layers: block l is
// sizes[l+1]×sizes[l] (so sizes[0] is the input's NSrc), GCN-normalised for
// kind "gcn".
func chainBlocks(rnd *rand.Rand, kind Kind, sizes []int) []*sparse.CSR {
	var blocks []*sparse.CSR
	for l := 0; l+1 < len(sizes); l++ {
		if kind == "gcn" {
			blocks = append(blocks, gcnBlock(rnd, sizes[l+1], sizes[l], 4))
		} else {
			blocks = append(blocks, randBlock(rnd, sizes[l+1], sizes[l], 4))
		}
	}
	return blocks
}

// modelCases are the configurations of the model-level tests; sizes are the
// NSrc of each layer followed by the final NDst.
var modelCases = []struct {
	name  string
	cfg   Config
	sizes []int
}{
	{"sage", Config{Kind: "sage", In: 5, Hidden: 6, Out: 3, Layers: 2, Dropout: 0.25}, []int{13, 8, 5}},
	{"sage/normalize/3layers", Config{Kind: "sage", In: 5, Hidden: 6, Out: 3, Layers: 3, Normalize: true, Dropout: 0.25}, []int{15, 11, 8, 5}},
	{"gcn", Config{Kind: "gcn", In: 5, Hidden: 6, Out: 3, Layers: 2, Dropout: 0.25}, []int{13, 8, 5}},
	{"gat", Config{Kind: "gat", In: 5, Hidden: 3, Heads: 2, OutHeads: 2, Out: 3, Layers: 2, Dropout: 0.25}, []int{13, 8, 5}},
	{"sage/1layer", Config{Kind: "sage", In: 5, Out: 3, Layers: 1}, []int{9, 5}},
}

// TestModelGradients checks dL/dW of every Param of whole models in training
// mode (dropout masks fixed by reseeding) against central differences, with
// L = Σ r⊙logits. dL/dx is not computed by Model.Backward; the layer tests
// check it.
func TestModelGradients(t *testing.T) {
	for ci, tc := range modelCases {
		for _, bi := range blasImpls {
			t.Run(tc.name+"/"+bi.name, func(t *testing.T) {
				rnd := testRNG(uint64(50 + ci))
				blocks := chainBlocks(rnd, tc.cfg.Kind, tc.sizes)
				x := randMatrix(rnd, tc.sizes[0], tc.cfg.In)
				m, err := New(tc.cfg, rnd, bi.impl)
				require.NoError(t, err)
				r := randMatrix(rnd, tc.sizes[len(tc.sizes)-1], tc.cfg.Out)
				fwd := func() *dense.Matrix { return m.Forward(blocks, x, true, testRNG(4)) }
				f := func() float64 { return weightedSum(fwd(), r) }
				m.ZeroGrad()
				fwd()
				m.Backward(r)
				checkModelGrad(t, m, f)
			})
		}
	}
}

// checkModelGrad checks m's accumulated gradient against central
// differences of f over all weights at once, so that the floor of
// testutil.CheckGrad is set by the largest gradient of the whole model
// rather than of each Param (the output layer's attention vectors, for
// example, have gradients far below float32 noise relative to f).
func checkModelGrad(t *testing.T, m *Model, f func() float64) {
	t.Helper()
	w := m.FlattenWeights(nil)
	g := m.FlattenGrads(nil)
	bad := testutil.CheckGrad(func() float64 { m.SetWeights(w); return f() }, w, g, fdEps, fdTol)
	m.SetWeights(w)
	for _, b := range bad {
		i := b.Index
		for _, p := range m.Params() {
			if i < len(p.W) {
				t.Errorf("%s[%d]: got: %g want: %g", p.Name, i, b.Got, b.Want)
				break
			}
			i -= len(p.W)
		}
	}
}

// TestModelCrossEntropyGradient checks the gradient of the mean cross-entropy
// of a GAT model end to end.
func TestModelCrossEntropyGradient(t *testing.T) {
	tc := modelCases[3]
	rnd := testRNG(60)
	blocks := chainBlocks(rnd, tc.cfg.Kind, tc.sizes)
	x := randMatrix(rnd, tc.sizes[0], tc.cfg.In)
	m, err := New(tc.cfg, rnd, nil)
	require.NoError(t, err)
	randomBiases(m, rnd)
	// The dropout stream is one whose masks leave every pre-activation
	// farther than the finite-difference step from GAT's LeakyReLU kink
	// (stream 3 does not, since the masks became row-keyed).
	labels := []int32{0, 2, 1, 1, 0}
	f := func() float64 {
		l, _ := SoftmaxCrossEntropy(m.Forward(blocks, x, true, testRNG(4)), labels)
		return l
	}
	_, dl := SoftmaxCrossEntropy(m.Forward(blocks, x, true, testRNG(4)), labels)
	m.ZeroGrad()
	m.Backward(dl)
	checkModelGrad(t, m, f)
}

// TestForwardLayerChain checks that ForwardLayer over the layers gives
// exactly Forward's eval-mode logits.
func TestForwardLayerChain(t *testing.T) {
	for ci, tc := range modelCases {
		t.Run(tc.name, func(t *testing.T) {
			rnd := testRNG(uint64(70 + ci))
			blocks := chainBlocks(rnd, tc.cfg.Kind, tc.sizes)
			x := randMatrix(rnd, tc.sizes[0], tc.cfg.In)
			m, err := New(tc.cfg, rnd, nil)
			require.NoError(t, err)
			// The logits are the model's until its next Forward: keep a copy.
			want := clone(m.Forward(blocks, x, false, nil))
			h := x
			for l, b := range blocks {
				h = m.ForwardLayer(l, b, h)
			}
			assert.Equal(t, want, h)
			// Training mode with dropout differs.
			if tc.cfg.Dropout > 0 {
				assert.NotEqual(t, want.Data, m.Forward(blocks, x, true, testRNG(4)).Data)
			}
		})
	}
}

// TestModelBLASAgree compares logits and gradients of gonum's BLAS with
// internal/openblas.
func TestModelBLASAgree(t *testing.T) {
	for ci, tc := range modelCases {
		t.Run(tc.name, func(t *testing.T) {
			var logits, grads [][]float32
			for _, bi := range blasImpls {
				rnd := testRNG(uint64(80 + ci))
				blocks := chainBlocks(rnd, tc.cfg.Kind, tc.sizes)
				x := randMatrix(rnd, tc.sizes[0], tc.cfg.In)
				m, err := New(tc.cfg, rnd, bi.impl)
				require.NoError(t, err)
				y := m.Forward(blocks, x, true, testRNG(4))
				m.Backward(y)
				logits = append(logits, y.Data)
				grads = append(grads, m.FlattenGrads(nil))
			}
			assert.True(t, testutil.Close(logits[1], logits[0], 1e-5), "logits")
			assert.True(t, testutil.Close(grads[1], grads[0], 1e-5), "grads")
		})
	}
}

func TestModelParams(t *testing.T) {
	rnd := testRNG(0)
	m, err := New(Config{Kind: "gat", In: 4, Hidden: 3, Heads: 2, Out: 5, Layers: 2}, rnd, nil)
	require.NoError(t, err)
	var names []string
	for _, p := range m.Params() {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{
		"layer0.w", "layer0.att_l", "layer0.att_r", "layer0.b",
		"layer1.w", "layer1.att_l", "layer1.att_r", "layer1.b",
	}, names)
	// Layer 0: W 4×6, a_l and a_r 2×3, b 6; layer 1 (1 head, mean): W 6×5, a 1×5 twice, b 5.
	assert.Equal(t, 24+6+6+6+30+5+5+5, m.NumParams())
	assert.Equal(t, 1, m.Config().OutHeads, "default filled in")
	assert.Equal(t, 6, m.Layers[0].OutDim())

	// Weights: Glorot bound √(6/(4+6)) for layer0.w, zero biases.
	p := m.Params()[0]
	for _, w := range p.W {
		assert.LessOrEqual(t, float64(w*w), 0.6)
	}
	assert.Equal(t, make([]float32, 6), m.Params()[3].W)

	// Flatten and Set round trip, reusing the buffer.
	w := m.FlattenWeights(nil)
	require.Len(t, w, m.NumParams())
	assert.Equal(t, p.W, w[:len(p.W)])
	w2 := append([]float32(nil), w...)
	for i := range w2 {
		w2[i] += 1
	}
	m.SetWeights(w2)
	assert.Equal(t, w2, m.FlattenWeights(w))
	g := make([]float32, m.NumParams())
	for i := range g {
		g[i] = float32(i)
	}
	m.SetGrads(g)
	buf := make([]float32, 3, m.NumParams()+10)
	got := m.FlattenGrads(buf)
	assert.Equal(t, g, got)
	assert.Same(t, &buf[0], &got[0], "reuses dst")
	m.ZeroGrad()
	assert.Equal(t, make([]float32, m.NumParams()), m.FlattenGrads(nil))
	assert.Panics(t, func() { m.SetGrads(g[1:]) })

	// Same seed, same weights.
	m1, _ := New(m.Config(), testRNG(9), nil)
	m2, _ := New(m.Config(), testRNG(9), nil)
	assert.Equal(t, m1.FlattenWeights(nil), m2.FlattenWeights(nil))
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"kind", Config{Kind: "gin", In: 1, Hidden: 1, Out: 1, Layers: 1}},
		{"layers", Config{Kind: "sage", In: 1, Hidden: 1, Out: 1}},
		{"in", Config{Kind: "sage", Hidden: 1, Out: 1, Layers: 1}},
		{"hidden", Config{Kind: "gcn", In: 1, Out: 1, Layers: 2}},
		{"heads", Config{Kind: "gat", In: 1, Hidden: 1, Out: 1, Layers: 2, Heads: -1}},
		{"dropout", Config{Kind: "sage", In: 1, Hidden: 1, Out: 1, Layers: 1, Dropout: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, testRNG(0), nil)
			assert.True(t, errors.Is(err, ErrConfig), "got: %v want: ErrConfig", err)
		})
	}
}

func TestModelPanics(t *testing.T) {
	rnd := testRNG(0)
	m, err := New(Config{Kind: "sage", In: 3, Hidden: 4, Out: 2, Layers: 2}, rnd, nil)
	require.NoError(t, err)
	blocks := chainBlocks(rnd, "sage", []int{6, 4, 2})
	assert.Panics(t, func() { m.Backward(dense.New(2, 2)) }, "Backward before Forward")
	assert.Panics(t, func() { m.Forward(blocks[:1], dense.New(6, 3), false, nil) }, "too few blocks")
	assert.Panics(t, func() { m.Forward(blocks, dense.New(5, 3), false, nil) }, "x.Rows != NSrc")
	assert.Panics(t, func() { m.Forward(blocks, dense.New(6, 2), false, nil) }, "x.Cols != In")
	m.Forward(blocks, dense.New(6, 3), false, nil)
	assert.Panics(t, func() { m.Backward(dense.New(3, 2)) }, "dlogits shape")
}

// BackwardEach calls done for every layer, last to first, and at done(l)
// the gradients of layers ≥ l are already those Backward ends with (they
// are never written again), while the gradients of layers < l are still
// zero.
func TestBackwardEach(t *testing.T) {
	for ci, tc := range modelCases {
		t.Run(tc.name, func(t *testing.T) {
			rnd := testRNG(uint64(70 + ci))
			blocks := chainBlocks(rnd, tc.cfg.Kind, tc.sizes)
			x := randMatrix(rnd, tc.sizes[0], tc.cfg.In)
			m, err := New(tc.cfg, rnd, nil)
			require.NoError(t, err)
			dl := randMatrix(rnd, tc.sizes[len(tc.sizes)-1], tc.cfg.Out)
			clone := func() *dense.Matrix {
				c := dense.New(dl.Rows, dl.Cols)
				copy(c.Data, dl.Data)
				return c
			}
			_ = m.Forward(blocks, x, true, testRNG(4))
			m.ZeroGrad()
			m.Backward(clone())
			want := m.FlattenGrads(nil)

			// Offsets of each layer's gradients in the flat vector.
			off := []int{0}
			for _, layer := range m.Layers {
				n := 0
				for _, p := range layer.Params() {
					n += len(p.W)
				}
				off = append(off, off[len(off)-1]+n)
			}
			_ = m.Forward(blocks, x, true, testRNG(4))
			m.ZeroGrad()
			var order []int
			m.BackwardEach(clone(), func(l int) {
				order = append(order, l)
				got := m.FlattenGrads(nil)
				require.Equal(t, want[off[l]:], got[off[l]:], "layer %d: gradients of layers ≥ %d", l, l)
				require.Equal(t, make([]float32, off[l]), got[:off[l]], "layer %d: gradients below", l)
			})
			wantOrder := make([]int, 0, len(m.Layers))
			for l := len(m.Layers) - 1; l >= 0; l-- {
				wantOrder = append(wantOrder, l)
			}
			require.Equal(t, wantOrder, order)
			require.Equal(t, want, m.FlattenGrads(nil))
		})
	}
}

// Release drops the layers' buffers and caches; a Forward and Backward
// after it give the logits and gradients of one before it.
func TestModelRelease(t *testing.T) {
	for ci, tc := range modelCases {
		t.Run(tc.name, func(t *testing.T) {
			rnd := testRNG(uint64(90 + ci))
			blocks := chainBlocks(rnd, tc.cfg.Kind, tc.sizes)
			x := randMatrix(rnd, tc.sizes[0], tc.cfg.In)
			m, err := New(tc.cfg, rnd, nil)
			require.NoError(t, err)
			dl := randMatrix(rnd, tc.sizes[len(tc.sizes)-1], tc.cfg.Out)
			step := func() (logits, grads []float32) {
				logits = slices.Clone(m.Forward(blocks, x, true, testRNG(4)).Data)
				m.ZeroGrad()
				m.Backward(clone(dl))
				return logits, m.FlattenGrads(nil)
			}
			wantLogits, wantGrads := step()
			m.Release()
			for l, layer := range m.Layers {
				switch s := layer.(type) {
				case *SAGE:
					assert.True(t, s.blk == nil && s.out == nil && s.dx == nil && s.agg == nil, "layer %d: SAGE buffers kept", l)
					assert.True(t, s.own, "layer %d: SAGE lost its ownership setting", l)
				case *GCN:
					assert.True(t, s.blk == nil && s.out == nil && s.dx == nil && s.t == nil, "layer %d: GCN buffers kept", l)
					assert.True(t, s.own, "layer %d: GCN lost its ownership setting", l)
				case *GAT:
					assert.True(t, s.a == nil && s.out == nil && s.dx == nil && s.z == nil, "layer %d: GAT buffers kept", l)
					assert.True(t, s.own, "layer %d: GAT lost its ownership setting", l)
				}
				assert.Nil(t, m.drops[l].buf, "layer %d: dropout buffer kept", l)
			}
			assert.Panics(t, func() { m.Backward(clone(dl)) }, "Backward after Release")
			gotLogits, gotGrads := step()
			assert.Equal(t, wantLogits, gotLogits)
			assert.Equal(t, wantGrads, gotGrads)
		})
	}
}

// A model's training step (Forward, the loss into a reused
// gradient, Backward) reuses the layers' results and scratch once they
// have grown: what a step still allocates (the blocks' derived arrays,
// goroutines) is a small part of what it allocates when every result is
// new (own unset, as for a deep stack's layers), and less than the hidden
// layer's output alone.
func TestModelStepReuses(t *testing.T) {
	for _, kind := range []Kind{KindSAGE, KindGCN, KindGAT} {
		t.Run(string(kind), func(t *testing.T) { testModelStepReuses(t, kind) })
	}
}

func testModelStepReuses(t *testing.T, kind Kind) {
	cfg := Config{Kind: kind, In: 64, Hidden: 64, Out: 8, Layers: 2, Dropout: 0.25}
	sizes := []int{6000, 2000, 500}
	perStep := func(own bool) float64 {
		rnd := testRNG(95)
		blocks := chainBlocks(rnd, cfg.Kind, sizes)
		x := randMatrix(rnd, sizes[0], cfg.In)
		labels := make([]int32, sizes[2])
		for i := range labels {
			labels[i] = int32(rnd.IntN(cfg.Out))
		}
		m, err := New(cfg, rnd, nil)
		require.NoError(t, err)
		for _, layer := range m.Layers {
			switch l := layer.(type) {
			case *SAGE:
				l.own = own
			case *GCN:
				l.own = own
			case *GAT:
				l.own = own
			}
		}
		var dl *dense.Matrix
		drops := testRNG(96)
		step := func() {
			_, dl = SoftmaxCrossEntropyTo(dl, m.Forward(blocks, x, true, drops), labels)
			m.ZeroGrad()
			m.Backward(dl)
		}
		step() // the buffers grow
		const steps = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range steps {
			step()
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / steps
	}
	owned, fresh := perStep(true), perStep(false)
	hidden := float64(sizes[1] * cfg.Hidden * 4) // layer 0's output, bytes
	t.Logf("bytes allocated per step: %.0f with owned results, %.0f with new ones (hidden output %.0f)", owned, fresh, hidden)
	assert.Less(t, owned, hidden, "a step allocates as much as a hidden output")
	assert.Less(t, owned, fresh/4, "owned results save less than three quarters of a step's allocations")
}
