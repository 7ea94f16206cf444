package model

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/internal/enum"
	"gnnmpi/internal/sat"
	"gnnmpi/sparse"
)

// ErrConfig is wrapped by the errors New returns for an invalid Config.
var ErrConfig = errors.New("model: invalid config")

// Config describes a stack of GNN layers.
type Config struct {
	// Kind is KindSAGE, KindGCN or KindGAT.
	Kind Kind
	// In is the number of input features, Out the number of classes.
	// Hidden is the width of hidden layers; for GAT it is the width of one
	// head, so hidden layers output Heads·Hidden features.
	In, Hidden, Out int
	// Layers is the number of GNN layers, at least 1.
	Layers int
	// Heads is the number of GAT heads in hidden layers (0 means 1), which
	// are concatenated. OutHeads is the number of GAT heads in the output
	// layer (0 means 1), which are averaged: the GAT paper uses 1 for Cora
	// and 6 for PPI.
	Heads, OutHeads int
	// Dropout is the feature dropout rate applied to the input of every
	// layer in training, as in PyG's examples; 0 disables it.
	Dropout float32
	// Normalize L2-normalises the outputs of hidden SAGE layers.
	Normalize bool
	// AttnDropout is the GAT dropout rate on attention coefficients in
	// training (the GAT paper uses 0.6 on Cora); 0 disables it.
	AttnDropout float32
}

// withDefaults returns c with zero head counts set to 1, or an error
// wrapping ErrConfig.
func (c Config) withDefaults() (Config, error) {
	switch c.Kind {
	case KindSAGE, KindGCN, KindGAT:
	default:
		return c, fmt.Errorf("%w: kind %q, want %s", ErrConfig, c.Kind, enum.Or(MinibatchKinds))
	}
	if c.Heads == 0 {
		c.Heads = 1
	}
	if c.OutHeads == 0 {
		c.OutHeads = 1
	}
	switch {
	case c.Layers < 1:
		return c, fmt.Errorf("%w: %d layers, want ≥ 1", ErrConfig, c.Layers)
	case c.In < 1 || c.Out < 1:
		return c, fmt.Errorf("%w: in %d, out %d, want ≥ 1", ErrConfig, c.In, c.Out)
	case c.Layers > 1 && c.Hidden < 1:
		return c, fmt.Errorf("%w: hidden %d, want ≥ 1", ErrConfig, c.Hidden)
	case c.Heads < 1 || c.OutHeads < 1:
		return c, fmt.Errorf("%w: heads %d, out heads %d, want ≥ 1", ErrConfig, c.Heads, c.OutHeads)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return c, fmt.Errorf("%w: dropout %g, want [0, 1)", ErrConfig, c.Dropout)
	}
	return c, nil
}

// activation is an elementwise nonlinearity with a backward pass.
type activation interface {
	Forward(x *dense.Matrix) *dense.Matrix
	Backward(dy *dense.Matrix) *dense.Matrix
}

// Model is a stack of GNN layers trained on per-layer blocks:
//
//	H⁰ = X,  Hˡ⁺¹ = σ(layerₗ(blocksₗ, dropout(Hˡ))),
//
// with σ = ReLU for SAGE and GCN and ELU for GAT (the GAT paper's choice)
// between layers, and no activation after the last layer, whose output is the
// logits. Dropout acts only in training; on the input X it draws for the
// nonzeros only (Dropout.SkipZeros), so that Forward on dense rows and
// ForwardSparse on the same rows as CSR drop the same entries.
//
// A Model is not safe for concurrent use. Ranks that build it from the same
// Config and the same rng stream get identical weights.
type Model struct {
	// Layers are the GNN layers, input layer first. They are the model's
	// own: use them to read OutDim or drive a layer directly, but do not
	// replace them.
	Layers []Layer

	cfg    Config
	acts   []activation // per layer; nil for the last
	drops  []Dropout
	params []*Param
	n      int // number of scalars in params
	ready  bool
}

// New returns a model for cfg with Glorot uniform weights drawn from rng
// (layer by layer, in Params order) and zero biases. Dense products use
// impl, or gonum's pure Go BLAS if impl is nil. It returns an error wrapping
// ErrConfig if cfg is invalid.
func New(cfg Config, rng *rand.Rand, impl blas.Float32Level3) (*Model, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: cfg, drops: make([]Dropout, cfg.Layers)}
	fin := cfg.In
	for l := range cfg.Layers {
		last := l == cfg.Layers-1
		var layer Layer
		switch cfg.Kind {
		case KindSAGE:
			fout := cfg.Hidden
			if last {
				fout = cfg.Out
			}
			sage := NewSAGE(fin, fout, cfg.Normalize && !last, rng, impl)
			sage.own = true
			layer = sage
		case KindGCN:
			fout := cfg.Hidden
			if last {
				fout = cfg.Out
			}
			gcn := NewGCN(fin, fout, rng, impl)
			gcn.own = true
			layer = gcn
		case KindGAT:
			if last {
				layer = NewGAT(fin, cfg.Out, cfg.OutHeads, false, rng, impl)
			} else {
				layer = NewGAT(fin, cfg.Hidden, cfg.Heads, true, rng, impl)
			}
			layer.(*GAT).AttnDropout = cfg.AttnDropout
			layer.(*GAT).own = true
		}
		var act activation
		if !last {
			act = &ReLU{}
			if cfg.Kind == KindGAT {
				act = &ELU{}
			}
		}
		m.Layers = append(m.Layers, layer)
		m.acts = append(m.acts, act)
		m.drops[l].Rate = cfg.Dropout
		m.drops[l].SkipZeros = l == 0 // the input's zeros draw nothing, as in ForwardSparse
		m.drops[l].noMask = l == 0    // Backward stops at the input
		for _, p := range layer.Params() {
			p.Name = fmt.Sprintf("layer%d.%s", l, p.Name)
			m.params = append(m.params, p)
			m.n += len(p.W)
		}
		fin = layer.OutDim()
	}
	return m, nil
}

// Config returns the model's configuration, with defaults filled in.
func (m *Model) Config() Config { return m.cfg }

// Forward runs the model on blocks (blocks[0] for the input layer, whose
// NSrc is x.Rows; blocks[len-1] for the output layer) and returns the
// logits, NDst×Out of the last block, in a matrix the model owns (its
// last layer's), valid
// until the next Forward, ForwardSparse or ForwardLayer: callers that keep
// the logits copy them. With train, dropout is on and its masks come from
// rng, in layer order; rng may be nil when train is false or nothing
// drops. Forward caches what
// Backward needs; x and blocks must not change until Backward returns.
// It will panic if len(blocks) != len(m.Layers) or the shapes do not conform.
func (m *Model) Forward(blocks []*sparse.CSR, x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	return m.ForwardIDs(blocks, nil, x, train, rng)
}

// ForwardIDs is Forward with the dropout masks keyed by vertex: ids[l]
// holds the global ids of layer l's input rows (block l's sources, whose
// first rows are its destinations: a sampled minibatch's
// sampling.Block.Src), and a row's feature dropout draws from the stream of
// its id (Dropout.ForwardIDs), a GAT edge's attention dropout from the
// stream of its two ids (AttentionMask). A vertex's masks in a step then
// do not depend on the rows around it: the minibatch trainer's steps give
// the same loss at any rank count. With nil ids it is Forward, whose
// streams are row indices and edge order.
// It will panic if ids is not nil and len(ids) != len(blocks) or
// len(ids[l]) != blocks[l].NCols, as Forward otherwise.
func (m *Model) ForwardIDs(blocks []*sparse.CSR, ids [][]int64, x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	if len(blocks) != len(m.Layers) {
		panic("model: len(blocks) != number of layers")
	}
	checkLayerIDs(blocks, ids)
	return m.forwardFrom(0, blocks, ids, x, train, rng)
}

// checkLayerIDs panics unless ids is nil or holds the ids of every
// block's sources.
func checkLayerIDs(blocks []*sparse.CSR, ids [][]int64) {
	if ids == nil {
		return
	}
	if len(ids) != len(blocks) {
		panic("model: len(ids) != number of layers")
	}
	for l, a := range blocks {
		if a != nil && int64(len(ids[l])) != a.NCols {
			panic("model: ids do not match a block's sources")
		}
	}
}

// layerIDs returns ids[l], or nil when ids is nil.
func layerIDs(ids [][]int64, l int) []int64 {
	if ids == nil {
		return nil
	}
	return ids[l]
}

// setIDs gives layer l's attention dropout, if it has one, its ids.
func (m *Model) setIDs(l int, ids []int64) {
	if g, ok := m.Layers[l].(*GAT); ok {
		g.ids = ids
	}
}

// forwardFrom runs layers l0, l0+1, … of ForwardIDs on h, the input of
// layer l0, and returns the logits.
func (m *Model) forwardFrom(l0 int, blocks []*sparse.CSR, ids [][]int64, h *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	for l := l0; l < len(m.Layers); l++ {
		h = m.drops[l].ForwardIDs(h, layerIDs(ids, l), train, rng)
		m.setIDs(l, layerIDs(ids, l))
		h = m.Layers[l].Forward(blocks[l], h, train, rng)
		if m.acts[l] != nil {
			h = m.acts[l].Forward(h)
		}
	}
	m.ready = true
	return h
}

// Backward back-propagates dL/dlogits through the last Forward (or
// ForwardSparse) and adds the
// gradients into every Param's G (call ZeroGrad first for a fresh
// gradient). It does not compute dL/dx for the input.
// It will panic if no Forward preceded it or dlogits has the wrong shape.
func (m *Model) Backward(dlogits *dense.Matrix) { m.BackwardEach(dlogits, nil) }

// BackwardEach is Backward that calls done(l), if done is not nil, as soon
// as layer l's gradients are final: for l = len(Layers)−1 down to 0, each
// call before layer l−1 is back-propagated. The Params of layers ≥ l
// (their offsets follow Params order: layer 0's first) are not touched
// again by this pass, so done may read their G, or hand them to
// communication that overlaps the layers still to come (DDP's gradient
// buckets); done must not write them.
func (m *Model) BackwardEach(dlogits *dense.Matrix, done func(l int)) {
	if !m.ready {
		panic("model: Backward before Forward")
	}
	dy := dlogits
	for l := len(m.Layers) - 1; l >= 0; l-- {
		if m.acts[l] != nil {
			dy = m.acts[l].Backward(dy)
		}
		dy = m.Layers[l].Backward(dy, l > 0)
		if done != nil {
			done(l)
		}
		if l > 0 {
			dy = m.drops[l].Backward(dy)
		}
	}
}

// ForwardLayer computes layer l in evaluation mode (no dropout) on block a
// and input x, followed by its activation unless l is the last layer, and
// returns the result, valid until the next call of a Forward method, as
// Forward's. Chaining it over l = 0, 1, … with full-neighbourhood
// blocks gives layer-wise inference; with the blocks of Forward it gives
// Forward's eval-mode result. It replaces layer l's cache, so a pending
// Backward is invalid afterwards.
// It will panic if l is out of range or the shapes do not conform.
func (m *Model) ForwardLayer(l int, a *sparse.CSR, x *dense.Matrix) *dense.Matrix {
	h := m.Layers[l].Forward(a, x, false, nil)
	if m.acts[l] != nil {
		h = m.acts[l].Forward(h)
	}
	m.ready = false
	return h
}

// Release drops what the model keeps between calls for reuse: every
// layer's forward cache and the dropout and activation buffers, so that the
// garbage collector can reclaim them while the model is not training (a
// trainer calls it before layer-wise inference, whose chunks need other
// shapes). Weights, gradients and settings are kept; the next Forward
// allocates afresh and gives the same results. A pending Backward is
// invalid afterwards.
func (m *Model) Release() {
	for l, layer := range m.Layers {
		if r, ok := layer.(releaser); ok {
			r.release()
		}
		m.drops[l] = Dropout{Rate: m.drops[l].Rate, SkipZeros: m.drops[l].SkipZeros, noMask: m.drops[l].noMask}
		switch m.acts[l].(type) {
		case *ReLU:
			m.acts[l] = &ReLU{}
		case *ELU:
			m.acts[l] = &ELU{}
		}
	}
	m.ready = false
}

// releaser is a layer that can drop its forward cache and buffers
// (Model.Release).
type releaser interface {
	release()
}

// Params returns the parameters of all layers in order (a new slice of the
// model's own Params). Names are "layer<l>.<name>".
func (m *Model) Params() []*Param { return append([]*Param(nil), m.params...) }

// NumParams returns the number of scalar weights.
func (m *Model) NumParams() int { return m.n }

// ZeroGrad sets every gradient to zero: it marks them (Param.ZeroGrad),
// and the next Backward overwrites them instead of adding.
func (m *Model) ZeroGrad() {
	for _, p := range m.params {
		p.ZeroGrad()
	}
}

// FlattenGrads copies all gradients, in Params order, into one buffer and
// returns it: dst[:NumParams()] when cap(dst) suffices, else a new slice.
// It suits a single Allreduce followed by SetGrads.
func (m *Model) FlattenGrads(dst []float32) []float32 {
	return flatten(dst, m.n, m.params, (*Param).Grad)
}

// SetGrads copies src, laid out as FlattenGrads writes it, into the
// gradients. It will panic if len(src) != NumParams().
func (m *Model) SetGrads(src []float32) {
	unflatten(src, m.n, m.params, (*Param).overwriteGrad)
}

// FlattenWeights copies all weights, in Params order, into one buffer and
// returns it: dst[:NumParams()] when cap(dst) suffices, else a new slice.
func (m *Model) FlattenWeights(dst []float32) []float32 {
	return flatten(dst, m.n, m.params, func(p *Param) []float32 { return p.W })
}

// SetWeights copies src, laid out as FlattenWeights writes it, into the
// weights. It will panic if len(src) != NumParams().
func (m *Model) SetWeights(src []float32) {
	unflatten(src, m.n, m.params, func(p *Param) []float32 { return p.W })
}

func flatten(dst []float32, n int, ps []*Param, f func(*Param) []float32) []float32 {
	dst = dense.Grow(dst, n)
	off := 0
	for _, p := range ps {
		off += copy(dst[off:], f(p))
	}
	return dst
}

func unflatten(src []float32, n int, ps []*Param, f func(*Param) []float32) {
	if len(src) != n {
		panic("model: flat buffer length != NumParams")
	}
	off := 0
	for _, p := range ps {
		off += copy(f(p), src[off:])
	}
}

// NumParams returns the number of scalar weights New would allocate for
// c, without allocating them, or an error wrapping ErrConfig if c is
// invalid. A count that does not fit an int64 is math.MaxInt64, so that a
// memory check comparing it with a budget refuses it.
func (c Config) NumParams() (int64, error) {
	c, err := c.withDefaults()
	if err != nil {
		return 0, err
	}
	var n int64
	fin := int64(c.In)
	for l := range c.Layers {
		last := l == c.Layers-1
		fout := int64(c.Hidden)
		if last {
			fout = int64(c.Out)
		}
		switch c.Kind {
		case KindSAGE: // w_self, w_neigh, b
			n = sat.Add(n, sat.Add(sat.Mul(sat.Mul(2, fin), fout), fout))
		case KindGCN: // w, b
			n = sat.Add(n, sat.Add(sat.Mul(fin, fout), fout))
		case KindGAT: // w (fin × heads·d), att_l, att_r (heads × d), b
			heads := int64(c.Heads)
			if last {
				heads = int64(c.OutHeads)
			}
			hd := sat.Mul(heads, fout)
			out := fout
			if !last {
				out = hd // concatenated heads
			}
			n = sat.Add(n, sat.Add(sat.Add(sat.Mul(fin, hd), sat.Mul(2, hd)), out))
			fout = out
		}
		fin = fout
	}
	return n, nil
}
