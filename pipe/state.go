package pipe

import (
	"fmt"

	"gnnmpi/dense"
	"gnnmpi/model"
)

// State is what a Trainer carries from one epoch to the next. Everything
// else New rebuilds from the Config and the Data, and every random stream
// (chunk orders, dropout masks) is keyed by (Seed, epoch, …), so a State
// taken after epoch e and the number e are all a run needs to continue
// bit-identically from epoch e+1 (the caller keeps its own history).
//
// Arrays that no later epoch reads are left empty: the historical
// embeddings once a snapshot exists (every epoch starts by restoring them
// from it) and the historical gradients with ClearGrads (zero at the end
// of every epoch).
type State struct {
	Weights []float32 // Params, in order
	Opt     []float32 // the optimizer's state (model.Optimizer.State)
	// Hist holds the historical embeddings of the stage's conv layers in
	// order, each part rows × Hidden, row-major; HistGrad their gradients
	// and Snap their snapshot (SnapshotEvery > 0, after the first one),
	// laid out the same way.
	Hist, HistGrad, Snap []float32
}

// State returns a copy of the rank's state. Call it between epochs.
func (t *Trainer) State() State {
	var s State
	for _, p := range t.Params() {
		s.Weights = append(s.Weights, p.W...)
	}
	s.Opt = t.opt.State()
	if t.snap != nil {
		s.Snap = flatten(t.snap)
	} else {
		s.Hist = flatten(t.hist)
	}
	if !t.cfg.ClearGrads {
		s.HistGrad = flatten(t.histGrad)
	}
	return s
}

// SetState restores a state that State returned on the same rank of a
// trainer built with the same Config and Data. It returns an error, and
// changes nothing, if the sizes do not match this rank's.
func (t *Trainer) SetState(s State) error {
	params := t.Params()
	nw := 0
	for _, p := range params {
		nw += len(p.W)
	}
	nh := 0
	for _, h := range t.hist {
		nh += len(h.Data)
	}
	want := func(what string, got, n int, need bool) error {
		if need && got != n || !need && got != 0 {
			if !need {
				n = 0
			}
			return fmt.Errorf("pipe: state has %d values of %s, rank %d (stage %d of pipeline %d) needs %d", got, what, t.c.Rank(), t.s, t.k, n)
		}
		return nil
	}
	snap := len(s.Snap) > 0
	for _, err := range []error{
		want("weights", len(s.Weights), nw, true),
		want("optimizer state", len(s.Opt), t.optLen(len(s.Opt), nw), true),
		want("historical embeddings", len(s.Hist), nh, !snap),
		want("historical gradients", len(s.HistGrad), nh, !t.cfg.ClearGrads),
		want("snapshot", len(s.Snap), nh, snap && t.cfg.SnapshotEvery > 0),
	} {
		if err != nil {
			return err
		}
	}
	if err := t.opt.SetState(s.Opt); err != nil {
		return fmt.Errorf("pipe: rank %d: %w", t.c.Rank(), err)
	}
	off := 0
	for _, p := range params {
		off += copy(p.W, s.Weights[off:])
		p.ZeroGrad()
	}
	if snap {
		if t.snap == nil {
			for _, h := range t.hist {
				t.snap = append(t.snap, dense.New(h.Rows, h.Cols))
			}
		}
		unflatten(t.snap, s.Snap)
		unflatten(t.hist, s.Snap) // what the next epoch starts from
	} else {
		t.snap = nil
		unflatten(t.hist, s.Hist)
	}
	if t.cfg.ClearGrads {
		for _, g := range t.histGrad {
			clear(g.Data)
		}
	} else {
		unflatten(t.histGrad, s.HistGrad)
	}
	return nil
}

// optLen returns n if n is a valid length of the optimizer's state for nw
// weights (before the first step, or after), else the length after a step.
func (t *Trainer) optLen(n, nw int) int {
	head, per := 4, 2 // Adam: kind and step count, then two moments
	if _, sgd := t.opt.(*model.SGD); sgd {
		head, per = 1, 1 // SGD: kind, then the momentum buffer
	}
	if n == head {
		return n
	}
	return head + per*nw
}

func flatten(ms []*dense.Matrix) []float32 {
	n := 0
	for _, m := range ms {
		n += len(m.Data)
	}
	out := make([]float32, 0, n)
	for _, m := range ms {
		out = append(out, m.Data...)
	}
	return out
}

func unflatten(ms []*dense.Matrix, x []float32) {
	off := 0
	for _, m := range ms {
		off += copy(m.Data, x[off:])
	}
}
