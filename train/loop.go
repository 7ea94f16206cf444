package train

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"sort"
	"time"

	"gnnmpi/collective"
	"gnnmpi/gpu/tier"
	"gnnmpi/metrics"
)

// stepper is one kind of training as the epoch loop (runLoop) drives it:
// the minibatch trainer (trainer, Run) or the full-graph one
// (fullStepper, RunFull). Every method is collective over the run's
// communicator, and every rank calls them in the same order.
type stepper interface {
	// train runs epoch's training, keeping on this rank what summarize
	// reduces, as run says; it returns a *stepStop when run.at stops it
	// inside the epoch.
	train(epoch int, run stepRun) error
	// evaluate runs exact inference with the current weights.
	evaluate() (evaluation, error)
	// summarize reduces the statistics of the epoch that train ran over
	// the ranks: its own and, if ev is not nil, the evaluation's, which
	// took evalSecs on this rank.
	summarize(epoch int, ev *evaluation, evalSecs float64) (EpochStats, error)
	// save checkpoints the state after epoch together with rec.
	save(epoch int, rec *record) error
	// resume restores the state of the checkpoint to continue from.
	resume() (resumed, error)
}

// stepRun is how the loop drives the steps of one epoch in stepper.train
// (the minibatch trainer; the full-graph stepper's epoch has no step
// boundaries, and it takes only progress).
type stepRun struct {
	// from is the first step to take: 0, or the steps a checkpoint
	// inside the epoch had done.
	from int
	// progress, if not nil, is told of every minibatch.
	progress func(epoch, batch, batches int)
	// at, if not nil, is called before every step i ≥ from, on every
	// rank; it checkpoints inside the epoch when due and reports whether
	// the ranks stop before step i (i > from only).
	at func(i int) (stop bool, err error)
}

// stepStop is the error train returns when run.at stopped it before
// step.
type stepStop struct{ step int }

func (e *stepStop) Error() string { return fmt.Sprintf("train: stopped before step %d", e.step) }

// stepSaver is a stepper that checkpoints inside an epoch: the minibatch
// trainer.
type stepSaver interface {
	// saveStep checkpoints the state after step steps of epoch together
	// with rec, the record of the epochs before.
	saveStep(epoch, step int, rec *record) error
}

// checkpointFlusher is a stepper whose checkpoint files are written in
// the background (the minibatch trainer, ckptWriter): flushCheckpoint
// waits for the write in flight and agrees on its result, collectively.
type checkpointFlusher interface {
	flushCheckpoint() error
}

// flushCheckpoint flushes s's checkpoint write (checkpointFlusher), if it
// has one in the background.
func flushCheckpoint(s stepper) error {
	if f, ok := s.(checkpointFlusher); ok {
		return f.flushCheckpoint()
	}
	return nil
}

// weightKeeper is a stepper that keeps a copy of the parameters of the best
// epoch (Result.Best): the minibatch trainer, whose ranks hold the whole
// model. The full-graph stepper's ranks hold a stage each, and it keeps
// none.
type weightKeeper interface {
	// flatWeights appends the parameters to dst.
	flatWeights(dst []float32) []float32
}

// evaluation is the result of exact inference, the same on every rank.
type evaluation struct {
	ValAcc, ValLoss, TestAcc float64
}

// record is what the epoch loop carries from epoch to epoch and through
// checkpoints: the history and the best epoch so far.
type record struct {
	history           []EpochStats // every epoch, including those before a resume
	bestEpoch         int          // 0: none evaluated
	bestVal, bestTest float64      // validation and test accuracy at bestEpoch
	best              []float32    // parameters at bestEpoch (weightKeeper only)
}

// resumed is the checkpoint a stepper resumed from: its last epoch (with
// step > 0: the epoch it had done step minibatch steps of), the loop's
// record, and where it was read from (for the log).
type resumed struct {
	epoch, step int
	rec         record
	from        string
}

// runLoop is the epoch loop of both kinds of training. It resumes from the
// checkpoint (cc.Resume), then for every epoch up to cc.Epochs trains,
// evaluates when due (cc.EvalEvery and after the last epoch), reduces the
// epoch's statistics, fails on a loss that is not finite, keeps the best
// epoch by cc.Select, checkpoints when due (cc.CheckpointEvery and after
// the last epoch) and calls the hooks.
//
// With h.Stop or cc.CheckpointInterval the ranks agree at every step
// boundary (stepControl) whether to stop and whether a timed checkpoint
// is due; a stop checkpoints (when cc.CheckpointDir is set) and returns a
// *Stopped. With cc.CheckpointSteps the minibatch trainer checkpoints
// inside epochs too.
//
// runLoop is collective over the stepper's communicator c.
func runLoop(s stepper, c collective.Comm, cc *Common, h Hooks) (*record, error) {
	if h.Log == nil {
		h.Log = func(string, ...any) {}
	}
	rec := &record{}
	start, from := 1, 0
	if cc.Resume {
		r, err := s.resume()
		if err != nil {
			return nil, err
		}
		rec, start = &r.rec, r.epoch+1
		if r.step > 0 {
			start, from = r.epoch, r.step
			h.Log("resumed from %s at step %d of epoch %d", r.from, r.step, r.epoch)
		} else {
			h.Log("resumed from %s at epoch %d", r.from, r.epoch)
			if err := evaluateDeferred(s, c, cc, rec, h.Log); err != nil {
				return nil, err
			}
		}
	}
	ctl, err := newStepControl(c, h.Stop, cc)
	if err != nil {
		return nil, err
	}
	for epoch := start; epoch <= cc.Epochs; epoch++ {
		run := stepRun{from: from, progress: h.Batch}
		if ss, ok := s.(stepSaver); ok && (ctl != nil || cc.CheckpointSteps > 0 && cc.CheckpointDir != "") {
			run.at = boundary(ss, ctl, cc, epoch, from, rec)
		}
		from = 0
		st, flags, deferred, err := runEpoch(s, cc, ctl, epoch, run)
		var ss *stepStop
		if errors.As(err, &ss) {
			if err := errors.Join(flushCheckpoint(s), ctl.close()); err != nil {
				return nil, err
			}
			return nil, &Stopped{Epoch: epoch, Step: ss.step, Checkpoint: cc.CheckpointDir}
		}
		if err != nil {
			return nil, err
		}
		if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
			// A diverged run is an error, not a silent NaN curve.
			return nil, settingErrorf("train: epoch %d: loss is %v (diverged; lower %s?)", epoch, st.Loss, SettingLR)
		}
		rec.add(st, cc.Select, s)
		// A stop after the last epoch ends nothing, unless it deferred the
		// last evaluation: the resumed run makes it.
		stop := flags&flagStop != 0 && (epoch < cc.Epochs || deferred)
		if cc.checkpointDue(epoch) || cc.CheckpointDir != "" && (flags&flagSave != 0 || stop) {
			if err := s.save(epoch, rec); err != nil {
				return nil, err
			}
			if ctl != nil {
				ctl.saved()
			}
		}
		if h.Epoch != nil {
			if err := h.Epoch(st); err != nil {
				return nil, err
			}
		}
		if stop {
			if err := errors.Join(flushCheckpoint(s), ctl.close()); err != nil {
				return nil, err
			}
			return nil, &Stopped{Epoch: epoch + 1, Checkpoint: cc.CheckpointDir}
		}
	}
	if err := flushCheckpoint(s); err != nil {
		return nil, err
	}
	return rec, ctl.close()
}

// boundary returns stepRun.at of epoch, which starts at step from, for
// the loop's record rec: the ranks agree on ctl's flags (when ctl is not
// nil) and checkpoint after every cc.CheckpointSteps steps, when the
// flags say a timed checkpoint is due, and before they stop.
func boundary(s stepSaver, ctl *stepControl, cc *Common, epoch, from int, rec *record) func(int) (bool, error) {
	return func(i int) (bool, error) {
		var flags int32
		if ctl != nil {
			var err error
			if flags, err = ctl.boundary(i, from); err != nil {
				return false, err
			}
		}
		if i == from {
			return false, nil
		}
		stop := flags&flagStop != 0
		due := flags&(flagSave|flagStop) != 0 || cc.CheckpointSteps > 0 && i%cc.CheckpointSteps == 0
		if due && cc.CheckpointDir != "" {
			if err := s.saveStep(epoch, i, rec); err != nil {
				return false, err
			}
			if ctl != nil {
				ctl.saved()
			}
		}
		return stop, nil
	}
}

// runEpoch trains one epoch, evaluates it when due and returns its
// statistics over the ranks and, when ctl is not nil, the flags the ranks
// agreed on at the epoch's end (stepControl.sync, before the evaluation).
// A stop asked for by then goes before a due evaluation, which may take
// longer than a scheduler's grace period: the evaluation is skipped
// (deferred is true) and made when the run resumes (evaluateDeferred).
func runEpoch(s stepper, cc *Common, ctl *stepControl, epoch int, run stepRun) (st EpochStats, flags int32, deferred bool, err error) {
	if err := s.train(epoch, run); err != nil {
		return EpochStats{}, 0, false, err
	}
	if ctl != nil {
		if flags, err = ctl.sync(); err != nil {
			return EpochStats{}, 0, false, err
		}
	}
	deferred = cc.evalDue(epoch) && flags&flagStop != 0
	var ev *evaluation
	evalSecs := 0.0
	if cc.evalDue(epoch) && !deferred {
		t0 := time.Now()
		e, err := s.evaluate()
		if err != nil {
			return EpochStats{}, 0, false, err
		}
		evalSecs = time.Since(t0).Seconds()
		ev = &e
	}
	st, err = s.summarize(epoch, ev, evalSecs)
	return st, flags, deferred, err
}

// evaluateDeferred makes, on resuming, the evaluation of rec's last epoch
// that a stop deferred (runEpoch): due but not made. The epoch gets its
// accuracies and losses, the evaluation's bytes (summed over the ranks)
// and seconds (the slowest rank's), as if made at its end, and becomes
// the best if it is (the stepper holds its parameters: the checkpoint is
// of its end). It is collective over c, the stepper's communicator.
func evaluateDeferred(s stepper, c collective.Comm, cc *Common, rec *record, log func(string, ...any)) error {
	n := len(rec.history)
	if n == 0 || rec.history[n-1].Evaluated || !cc.evalDue(rec.history[n-1].Epoch) {
		return nil
	}
	st := rec.history[n-1]
	before, t0 := collective.SnapshotOf(c), time.Now()
	e, err := s.evaluate()
	if err != nil {
		return err
	}
	secs := []float64{time.Since(t0).Seconds()}
	sent := []int64{collective.SnapshotOf(c).Sub(before).Phase(metrics.PhaseEval).SentBytes}
	restore := collective.SetPhase(c, metrics.PhaseMetrics)
	err = errors.Join(collective.AllreduceSlice(c, secs, collective.Max), collective.AllreduceSlice(c, sent, collective.Sum))
	restore()
	if err != nil {
		return err
	}
	st.PhaseSeconds, st.Bytes = maps.Clone(st.PhaseSeconds), maps.Clone(st.Bytes)
	if st.PhaseSeconds == nil {
		st.PhaseSeconds = map[string]float64{}
	}
	if st.Bytes == nil {
		st.Bytes = map[string]int64{}
	}
	st.PhaseSeconds[metrics.PhaseEval], st.Bytes[metrics.PhaseEval] = secs[0], sent[0]
	st.Evaluated, st.ValAcc, st.TestAcc, st.ValLoss = true, e.ValAcc, e.TestAcc, e.ValLoss
	rec.history = rec.history[:n-1]
	rec.add(st, cc.Select, s)
	log("evaluated epoch %d, deferred by the stop: validation accuracy %.4f, test accuracy %.4f", st.Epoch, st.ValAcc, st.TestAcc)
	return nil
}

// add appends the epoch st to the history and, if it was evaluated and
// beats the best epoch so far under sel, makes it the best (keeping the
// parameters of a weightKeeper).
func (rec *record) add(st EpochStats, sel Selection, s stepper) {
	rec.history = append(rec.history, st)
	if !st.Evaluated || !better(sel, st, rec.history, rec.bestEpoch) {
		return
	}
	rec.bestEpoch, rec.bestVal, rec.bestTest = st.Epoch, st.ValAcc, st.TestAcc
	if k, ok := s.(weightKeeper); ok {
		rec.best = k.flatWeights(rec.best[:0])
	}
}

// better reports whether the evaluated epoch st beats history[bestEpoch−1]
// (1-based; 0: nothing evaluated yet) under the selection rule sel: with
// SelectAcc a higher validation accuracy, or the same accuracy with a lower
// validation loss (validation sets are small, so accuracies often tie);
// with SelectLoss a lower validation loss, or the same loss with a higher
// accuracy.
func better(sel Selection, st EpochStats, history []EpochStats, bestEpoch int) bool {
	if bestEpoch == 0 {
		return true
	}
	best := history[bestEpoch-1]
	if sel == SelectLoss {
		return st.ValLoss < best.ValLoss || st.ValLoss == best.ValLoss && st.ValAcc > best.ValAcc
	}
	return st.ValAcc > best.ValAcc || st.ValAcc == best.ValAcc && st.ValLoss < best.ValLoss
}

// result summarises the record: the history, the best epoch, the median
// epoch time and the mean bytes and remote rows per epoch.
func (rec *record) result() Result {
	res := Result{Epochs: rec.history, BestEpoch: rec.bestEpoch, BestValAcc: rec.bestVal, TestAcc: rec.bestTest,
		Best: rec.best, BytesPerEpoch: map[string]int64{}}
	if len(rec.history) == 0 {
		return res
	}
	s := make([]float64, len(rec.history))
	for i, e := range rec.history {
		s[i] = e.Seconds
		for p, b := range e.Bytes {
			res.BytesPerEpoch[p] += b
		}
		res.RemoteRowsPerEpoch += float64(e.RemoteRows) / float64(len(rec.history))
		if e.GPUReads != nil {
			var sum tier.Reads
			if res.GPUReads != nil {
				sum = *res.GPUReads
			}
			sum = sum.Add(*e.GPUReads)
			res.GPUReads = &sum
		}
	}
	res.MedianEpochS = median(s)
	for p := range res.BytesPerEpoch {
		res.BytesPerEpoch[p] /= int64(len(rec.history))
	}
	return res
}

// median returns the median of s (the mean of the middle two for an even
// length), sorting s.
func median(s []float64) float64 {
	sort.Float64s(s)
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
