package pipe

import (
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/metrics"
)

// pass is one sweep over a chunking: training (chunks, dropout, historical
// embeddings) or evaluation (one chunk per part, exact).
type pass struct {
	train  bool
	epoch  int
	blocks []*Block
	served [][][]int32
	orders [][]int // per pipeline: chunk at each position
	hist   func(i int) *dense.Matrix
}

// servedTo returns the rows of this part that pipeline q's chunk at
// position mb reads.
func (ps *pass) servedTo(q, mb int) []int32 { return ps.served[q][ps.orders[q][mb]] }

// trainSums are an epoch's training totals over the last stage's chunks.
type trainSums struct {
	loss    float64 // cross-entropy summed over the training vertices
	correct float64 // training vertices predicted right
}

// Epoch trains one epoch (1-based) and applies one optimizer step.
// It is collective over the trainer's communicator.
func (t *Trainer) Epoch(epoch int) (Stats, error) {
	if t.cfg.SnapshotEvery > 0 && t.snap != nil {
		for i := range t.hist {
			copy(t.hist[i].Data, t.snap[i].Data)
		}
	}
	ps := &pass{train: true, epoch: epoch, blocks: t.blocks, served: t.served, hist: t.histAt}
	for k := range t.cfg.Layout.Pipelines {
		ps.orders = append(ps.orders, t.order(epoch, k))
	}
	sums, err := t.run(ps)
	if err != nil {
		return Stats{}, err
	}
	if t.cfg.ClearGrads {
		for _, g := range t.histGrad {
			clear(g.Data)
		}
	}
	if err := t.step(); err != nil {
		return Stats{}, err
	}
	if r := t.cfg.SnapshotEvery; r > 0 && epoch%r == 0 {
		t.takeSnapshot()
	}
	defer collective.SetPhase(t.c, metrics.PhaseMetrics)()
	if err := collective.AllreduceVars(t.c, collective.Sum, &sums.loss, &sums.correct); err != nil {
		return Stats{}, err
	}
	return Stats{Loss: sums.loss / float64(t.numTrain), TrainAcc: sums.correct / float64(t.numTrain)}, nil
}

// run carries out the stage's schedule for the training pass ps and
// returns the rank's training totals (zero but on the last stage).
func (t *Trainer) run(ps *pass) (trainSums, error) {
	var loss float64
	var correct int64
	for _, st := range t.sched {
		c := ps.orders[t.k][st.MB]
		fl := t.flight(c)
		b := t.blocks[c]
		var err error
		switch st.Kind {
		case RecvAct:
			fl.u = dense.Reuse(fl.u, len(b.Dst), t.w)
			err = t.recv(fl.u, st.Peer, tagAct, metrics.PhaseAct)
		case Forward:
			var l float64
			var n int64
			l, n, err = t.forward(ps, st.MB, fl)
			loss += l
			correct += n
		case SendAct:
			err = t.send(fl.y, st.Peer, tagAct, metrics.PhaseAct)
		case RecvGrad:
			fl.dy = dense.Reuse(fl.dy, len(b.Dst), t.w)
			err = t.recv(fl.dy, st.Peer, tagActGrad, metrics.PhaseActGrad)
		case Backward:
			err = t.backward(ps, st.MB, fl)
		case SendGrad:
			err = t.send(fl.dx, st.Peer, tagActGrad, metrics.PhaseActGrad)
			fl.dx = nil
		}
		if err != nil {
			return trainSums{}, fmt.Errorf("pipe: epoch %d, %v: %w", ps.epoch, st, err)
		}
	}
	return trainSums{loss: loss, correct: float64(correct)}, nil
}

// takeSnapshot copies the historical embeddings into the snapshot,
// allocating it on first use.
func (t *Trainer) takeSnapshot() {
	if t.snap == nil {
		for _, h := range t.hist {
			t.snap = append(t.snap, dense.New(h.Rows, h.Cols))
		}
	}
	for i := range t.hist {
		copy(t.snap[i].Data, t.hist[i].Data)
	}
}

// step reduces the weight gradients (a stage's over its pipelines; GCNII's
// replicated input layer over every rank), applies the optimizer and zeroes
// the gradients.
func (t *Trainer) step() error {
	defer collective.SetPhase(t.c, metrics.PhaseGrad)()
	if err := t.reduce(t.stageC, t.params); err != nil {
		return err
	}
	if err := t.reduce(t.c, t.inParams); err != nil {
		return err
	}
	all := t.Params()
	t.opt.Step(all)
	for _, p := range all {
		p.ZeroGrad()
	}
	return nil
}
