package model

import (
	"errors"
	"fmt"
	"math"

	"gnnmpi/dense"
	"gnnmpi/internal/enum"
)

// ErrState is wrapped by the errors SetState returns for a state that was
// not written by the same kind of optimizer.
var ErrState = errors.New("model: bad optimizer state")

// Optimizer updates parameters from their gradients.
//
// Step must be given the same parameters, in the same order, on every call;
// it reads G and updates W, leaving G as it is. State returns a copy of the
// optimizer's internal state (moments, step count) as a new slice, and
// SetState restores it, so that a resumed run continues bit-identically.
type Optimizer interface {
	Step(params []*Param)
	State() []float32
	// AppendState is State appended to dst (a caller that saves the
	// state again and again reuses one buffer).
	AppendState(dst []float32) []float32
	SetState(state []float32) error
}

// RangeStepper is implemented by optimizers whose update of a weight reads
// only that weight, its gradient and its own state (Adam and SGD), so that
// a step can be applied range by range as the ranges' gradients become
// ready (package train steps each gradient bucket as its sum arrives).
// Begin counts a step, as Step does; StepRange then updates elements
// [lo, hi) of params, numbered as in Model.FlattenGrads (Params order).
// Begin followed by StepRange over ranges that cover every element once,
// in any order, gives Step's result bit for bit: Step is Begin and one
// StepRange over everything.
type RangeStepper interface {
	Optimizer
	Begin(params []*Param)
	StepRange(params []*Param, lo, hi int)
}

// NewOptimizer returns the optimizer of kind: OptimizerAdam
// (NewAdam(lr, wd)) or OptimizerSGD (NewSGD(lr, momentum, wd)). It is the one place a name becomes
// an optimizer, for every trainer; any other name is an error listing the
// two.
func NewOptimizer(kind OptimizerKind, lr, momentum, wd float32) (Optimizer, error) {
	switch kind {
	case OptimizerAdam:
		return NewAdam(lr, wd), nil
	case OptimizerSGD:
		return NewSGD(lr, momentum, wd), nil
	}
	return nil, fmt.Errorf("model: unknown optimizer %q (want %s)", kind, enum.Or(OptimizerKinds))
}

// State headers: the first word names the optimizer.
const (
	stateAdam = 1
	stateSGD  = 2
)

// Adam is the Adam optimizer with PyTorch's semantics (torch.optim.Adam,
// amsgrad off): with g = Grad + WeightDecay·W (L2 decay added to the gradient),
//
//	m ← β₁m + (1−β₁)g,  v ← β₂v + (1−β₂)g²,
//	W ← W − LR/(1−β₁ᵗ) · m / (√v/√(1−β₂ᵗ) + Eps),
//
// where t counts the steps. Moments are float32 like the weights; the bias
// corrections are computed in float64.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32

	t    uint64
	m, v []float32

	step, bc2s float32 // the corrections of the step Begin counted
}

var _ RangeStepper = (*Adam)(nil)

// NewAdam returns Adam with learning rate lr, weight decay wd and PyTorch's
// defaults β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
func NewAdam(lr, wd float32) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: wd}
}

// Step applies one Adam update to params. It will panic if params do not
// match the moments of earlier steps or of SetState.
func (o *Adam) Step(params []*Param) {
	o.Begin(params)
	o.StepRange(params, 0, len(o.m))
}

// Begin counts a step whose update StepRange applies (RangeStepper),
// allocating the moments before the first. It will panic if params do not
// match the moments of earlier steps or of SetState.
func (o *Adam) Begin(params []*Param) {
	n := countParams(params)
	if o.m == nil {
		o.m = make([]float32, n)
		o.v = make([]float32, n)
	}
	if len(o.m) != n {
		panic("model: optimizer state does not match params")
	}
	o.step, o.bc2s = o.Advance()
}

// StepRange applies the update of the step Begin counted to elements
// [lo, hi) of params (RangeStepper).
func (o *Adam) StepRange(params []*Param, lo, hi int) {
	step, bc2s := o.step, o.bc2s
	b1, b2, eps, wd := o.Beta1, o.Beta2, o.Eps, o.WeightDecay
	off := 0
	for _, p := range params {
		a, b := max(lo, off), min(hi, off+len(p.W))
		if a < b {
			m := o.m[a:b]
			v := o.v[a:b]
			w := p.W[a-off : b-off]
			g := p.Grad()[a-off : b-off]
			// Element-wise, so the chunks on several goroutines give the
			// same bits as one pass; dense.AdamUpdate is the update above
			// in float32, one fused pass over w, g, m and v.
			parallel(len(w), 16, int64(len(w)), func(lo, hi int) {
				dense.AdamUpdate(w[lo:hi], g[lo:hi], m[lo:hi], v[lo:hi], wd, b1, b2, eps, step, bc2s)
			})
		}
		off += len(p.W)
	}
}

// Advance counts a step, as Step does, and returns the new step's
// corrections: step = LR/(1−β₁ᵗ) and bc2s = √(1−β₂ᵗ), computed in float64.
// Step calls it; a caller that runs the update elsewhere (gpu/gnn, on a
// device, over the moments Moments returns) calls it once per update.
func (o *Adam) Advance() (step, bc2s float32) {
	o.t++
	t := float64(o.t)
	bc1 := 1 - math.Pow(float64(o.Beta1), t)
	bc2 := 1 - math.Pow(float64(o.Beta2), t)
	return float32(float64(o.LR) / bc1), float32(math.Sqrt(bc2))
}

// Moments returns the optimizer's own first and second moment buffers,
// m and v, of n scalars each, allocating them as zeros before the first
// step: a caller that runs the update elsewhere reads them to start from
// and writes its moments back into them, so that State and a checkpoint
// see them. It will panic if the moments exist with another length.
func (o *Adam) Moments(n int) (m, v []float32) {
	if o.m == nil {
		o.m = make([]float32, n)
		o.v = make([]float32, n)
	}
	if len(o.m) != n {
		panic("model: optimizer state does not match params")
	}
	return o.m, o.v
}

// State returns [1, t as three 16-bit words, m…, v…] as a new slice.
func (o *Adam) State() []float32 { return o.AppendState(make([]float32, 0, 4+2*len(o.m))) }

// AppendState appends State's values to dst and returns it.
func (o *Adam) AppendState(dst []float32) []float32 {
	dst = append(dst, stateAdam, float32(o.t&0xffff), float32(o.t>>16&0xffff), float32(o.t>>32&0xffff))
	dst = append(dst, o.m...)
	return append(dst, o.v...)
}

// SetState restores a state written by State. It returns an error wrapping
// ErrState if state was not written by Adam.
func (o *Adam) SetState(state []float32) error {
	if len(state) < 4 || state[0] != stateAdam || (len(state)-4)%2 != 0 {
		return fmt.Errorf("%w: not an Adam state of valid length", ErrState)
	}
	t, err := decodeCount(state[1:4])
	if err != nil {
		return err
	}
	n := (len(state) - 4) / 2
	o.t = t
	o.m, o.v = nil, nil
	if n > 0 {
		o.m = append([]float32(nil), state[4:4+n]...)
		o.v = append([]float32(nil), state[4+n:]...)
	}
	return nil
}

// SGD is stochastic gradient descent with PyTorch's semantics
// (torch.optim.SGD, no dampening, not Nesterov): with g = G + WeightDecay·W,
//
//	b ← Momentum·b + g  (b = g on the first step),  W ← W − LR·b,
//
// or W ← W − LR·g when Momentum is 0.
type SGD struct {
	LR, Momentum, WeightDecay float32

	buf   []float32
	first bool // the step Begin counted fills buf
	n     int  // the scalars of the params Begin saw
}

var _ RangeStepper = (*SGD)(nil)

// NewSGD returns SGD with learning rate lr, momentum and weight decay wd.
func NewSGD(lr, momentum, wd float32) *SGD {
	return &SGD{LR: lr, Momentum: momentum, WeightDecay: wd}
}

// Step applies one SGD update to params. It will panic if params do not
// match the momentum buffer of earlier steps or of SetState.
func (o *SGD) Step(params []*Param) {
	o.Begin(params)
	o.StepRange(params, 0, o.n)
}

// Begin starts a step whose update StepRange applies (RangeStepper),
// allocating the momentum buffer before the first step with momentum. It
// will panic if params do not match the buffer of earlier steps or of
// SetState.
func (o *SGD) Begin(params []*Param) {
	o.n = countParams(params)
	o.first = false
	if o.Momentum != 0 && o.buf == nil {
		o.buf = make([]float32, o.n)
		o.first = true
	}
	if o.buf != nil && len(o.buf) != o.n {
		panic("model: optimizer state does not match params")
	}
}

// StepRange applies the update of the step Begin started to elements
// [lo, hi) of params (RangeStepper).
func (o *SGD) StepRange(params []*Param, lo, hi int) {
	lr, mu, wd := o.LR, o.Momentum, o.WeightDecay
	off := 0
	for _, p := range params {
		a, b := max(lo, off), min(hi, off+len(p.W))
		if a < b {
			w := p.W[a-off : b-off]
			g := p.Grad()[a-off : b-off]
			for i, wi := range w {
				gi := g[i] + wd*wi
				if o.buf != nil {
					bi := &o.buf[a+i]
					if o.first {
						*bi = gi
					} else {
						*bi = mu**bi + gi
					}
					gi = *bi
				}
				w[i] = wi - lr*gi
			}
		}
		off += len(p.W)
	}
}

// State returns [2, momentum buffer…] as a new slice; the buffer is empty
// before the first step with momentum.
func (o *SGD) State() []float32 { return o.AppendState(nil) }

// AppendState appends State's values to dst and returns it.
func (o *SGD) AppendState(dst []float32) []float32 {
	return append(append(dst, stateSGD), o.buf...)
}

// SetState restores a state written by State. It returns an error wrapping
// ErrState if state was not written by SGD.
func (o *SGD) SetState(state []float32) error {
	if len(state) < 1 || state[0] != stateSGD {
		return fmt.Errorf("%w: not an SGD state", ErrState)
	}
	o.buf = nil
	if len(state) > 1 {
		o.buf = append([]float32(nil), state[1:]...)
	}
	return nil
}

// countParams returns the number of scalars in params.
func countParams(params []*Param) int {
	n := 0
	for _, p := range params {
		if len(p.g) != len(p.W) {
			panic("model: len(Grad()) != len(W)")
		}
		n += len(p.W)
	}
	return n
}

// decodeCount reads a step count stored as three 16-bit words.
func decodeCount(w []float32) (uint64, error) {
	var t uint64
	for i, x := range w {
		if x < 0 || x > 0xffff || x != float32(math.Trunc(float64(x))) {
			return 0, fmt.Errorf("%w: bad step count", ErrState)
		}
		t |= uint64(x) << (16 * i)
	}
	return t, nil
}
