package pipe

import (
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// evalSums are exact inference's totals over the last stage's vertices.
type evalSums struct {
	valCorrect, valLoss, val float64 // validation vertices: predicted right, cross-entropy, count
	testCorrect, test        float64 // test vertices: predicted right, count
}

// Evaluate runs exact full-graph inference (one chunk per part, no
// dropout, no historical embeddings) and returns validation and test
// accuracy and the validation loss. It is collective.
func (t *Trainer) Evaluate() (Eval, error) {
	defer collective.SetPhase(t.c, metrics.PhaseEval)()
	y, err := t.inferPart()
	if err != nil {
		return Eval{}, err
	}
	var s evalSums
	if t.last {
		s = t.count(y)
	}
	restore := collective.SetPhase(t.c, metrics.PhaseMetrics)
	err = collective.AllreduceVars(t.c, collective.Sum, &s.valCorrect, &s.valLoss, &s.val, &s.testCorrect, &s.test)
	restore()
	if err != nil {
		return Eval{}, err
	}
	var e Eval
	if s.val > 0 {
		e.ValAcc, e.ValLoss = s.valCorrect/s.val, s.valLoss/s.val
	}
	if s.test > 0 {
		e.TestAcc = s.testCorrect / s.test
	}
	return e, nil
}

// inferPart runs the stage's layers on the whole part, receiving the
// stage's input from the previous stage and sending its output to the
// next, and returns the output.
func (t *Trainer) inferPart() (*dense.Matrix, error) {
	nk := t.nk
	scratch := t.rows
	if scratch == nil {
		scratch = dense.New(nk, t.w)
	}
	ps := &pass{blocks: []*Block{t.whole}, served: t.servedWhole,
		orders: make([][]int, t.cfg.Layout.Pipelines),
		hist:   func(int) *dense.Matrix { return scratch }}
	for k := range ps.orders {
		ps.orders[k] = []int{0}
	}
	fl := &flight{}
	if !t.first {
		fl.u = dense.New(nk, t.w)
		if err := t.recv(fl.u, t.s-1, tagAct, metrics.PhaseEval); err != nil {
			return nil, err
		}
	}
	if _, _, err := t.forward(ps, 0, fl); err != nil {
		return nil, err
	}
	if !t.last {
		if err := t.send(fl.y, t.s+1, tagAct, metrics.PhaseEval); err != nil {
			return nil, err
		}
	}
	return fl.y, nil
}

// count runs the output layer on the part's last-stage rows y and counts
// the validation and test vertices, their correct predictions and the
// validation loss.
func (t *Trainer) count(y *dense.Matrix) evalSums {
	var s evalSums
	logits := t.out.Shared().Forward(y)
	pred := model.Argmax(logits)
	o := t.cfg.Model.Out
	for i, v := range t.whole.Dst {
		row := logits.Data[i*o : (i+1)*o]
		label := t.d.Labels[v]
		ok := 0.0
		if pred[i] == label {
			ok = 1
		}
		if t.d.Val[v] {
			s.valCorrect += ok
			s.valLoss += model.CrossEntropy(row, label)
			s.val++
		}
		if t.d.Test[v] {
			s.testCorrect += ok
			s.test++
		}
	}
	return s
}
