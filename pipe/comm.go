package pipe

import (
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// TrainPhases returns the phases of a training epoch's traffic, each once:
// metrics.PhaseAct, PhaseActGrad, PhaseHalo and PhaseGrad (the keys of
// Volume.Train). Evaluate's traffic is metrics.PhaseEval, and the
// reductions of Stats and Eval are metrics.PhaseMetrics.
func TrainPhases() []string {
	return []string{metrics.PhaseAct, metrics.PhaseActGrad, metrics.PhaseHalo, metrics.PhaseGrad}
}

// Message tags of the stage-to-stage transfers.
const (
	tagAct     = 1
	tagActGrad = 2
)

// send sends m's rows to stage peer of the pipeline, counted under phase.
func (t *Trainer) send(m *dense.Matrix, peer, tag int, phase string) error {
	defer collective.SetPhase(t.c, phase)()
	return t.pipeC.Send(collective.BufOf(m.Data), peer, tag)
}

// recv fills m's rows from stage peer of the pipeline, counted under phase.
func (t *Trainer) recv(m *dense.Matrix, peer, tag int, phase string) error {
	defer collective.SetPhase(t.c, phase)()
	n, err := t.pipeC.Recv(collective.BufOf(m.Data), peer, tag)
	if err == nil && n != len(m.Data) {
		err = fmt.Errorf("pipe: received %d values from stage %d, want %d", n, peer, len(m.Data))
	}
	return err
}

// reduce sums the gradients of ps over c (one Allreduce of them packed).
func (t *Trainer) reduce(c collective.Comm, ps []*model.Param) error {
	if c.Size() == 1 || len(ps) == 0 {
		return nil
	}
	n := 0
	for _, p := range ps {
		n += len(p.W)
	}
	t.flat = dense.Grow(t.flat, n)
	off := 0
	for _, p := range ps {
		off += copy(t.flat[off:], p.Grad())
	}
	b := collective.BufOf(t.flat)
	if err := c.Allreduce(b, b, collective.Sum); err != nil {
		return err
	}
	off = 0
	for _, p := range ps {
		off += copy(p.Grad(), t.flat[off:])
	}
	return nil
}

// haloRows returns what the halo exchange of the chunk at position mb of
// ps (block b) moves, per pipeline q in elements, zero for the own
// pipeline: the rows this part serves q's chunk (served) and the rows b
// reads from q (remote); and the served rows, in pipeline order as the
// exchange packs them (on the trainer's buffer, valid until the next call).
func (t *Trainer) haloRows(ps *pass, mb int, b *Block) (served, remote []int, ids []int32) {
	P := t.cfg.Layout.Pipelines
	served, remote = make([]int, P), make([]int, P)
	ids = t.haloIDs[:0]
	for q := range P {
		if q == t.k {
			continue
		}
		s := ps.servedTo(q, mb)
		ids = append(ids, s...)
		served[q] = len(s) * t.w
		remote[q] = len(b.Remote[q]) * t.w
	}
	t.haloIDs = ids
	return served, remote, ids
}

// haloForward fills the Remote rows of x from the other pipelines' stage
// (one Alltoallv over the stage communicator) and serves the rows they
// read from h. It does nothing with one pipeline.
func (t *Trainer) haloForward(ps *pass, mb int, b *Block, x, h *dense.Matrix) error {
	if t.cfg.Layout.Pipelines == 1 {
		return nil
	}
	phase := metrics.PhaseHalo
	if !ps.train {
		phase = metrics.PhaseEval
	}
	defer collective.SetPhase(t.c, phase)()
	sendCounts, recvCounts, ids := t.haloRows(ps, mb, b)
	t.halo = dense.Grow(t.halo, len(ids)*t.w)
	dense.GatherRowsTo(&dense.Matrix{Rows: len(ids), Cols: t.w, Data: t.halo}, 0, h, ids)
	recv := x.Data[(len(b.Dst)+len(b.Local))*t.w:]
	return t.stageC.Alltoallv(collective.BufOf(t.halo), sendCounts, collective.BufOf(recv), recvCounts)
}

// haloBackward sends the gradients of dx's Remote rows to their parts and
// adds what the other pipelines send for this part's rows into g.
func (t *Trainer) haloBackward(ps *pass, mb int, b *Block, dx, g *dense.Matrix) error {
	if t.cfg.Layout.Pipelines == 1 {
		return nil
	}
	defer collective.SetPhase(t.c, metrics.PhaseHalo)()
	recvCounts, sendCounts, ids := t.haloRows(ps, mb, b)
	t.halo = dense.Grow(t.halo, len(ids)*t.w)
	send := dx.Data[(len(b.Dst)+len(b.Local))*t.w:]
	if err := t.stageC.Alltoallv(collective.BufOf(send), sendCounts, collective.BufOf(t.halo), recvCounts); err != nil {
		return err
	}
	dense.AddRowsTo(g, ids, &dense.Matrix{Rows: len(ids), Cols: t.w, Data: t.halo}, 0)
	return nil
}
