package train

import (
	"fmt"
	"time"

	"gnnmpi/collective"
	"gnnmpi/metrics"
)

// ExitStopped is the exit status of a run that a stop request (a signal:
// cli's --checkpoint-on-signal) ended at a step boundary: 75, EX_TEMPFAIL
// of sysexits.h, "try again later", which schedulers and requeue scripts
// tell from a failure (1) and from a finished run (0).
const ExitStopped = 75

// Stopped is the error Run and RunFull return when a stop request
// (Hooks.Stop) ended the run before its last epoch: every rank stopped at
// the same boundary, after Step minibatch steps of Epoch (Step 0: after
// the whole of Epoch−1, at an epoch's end), and, when Checkpoint is not
// empty, the checkpoint there holds the state to resume from.
type Stopped struct {
	Epoch, Step int
	Checkpoint  string // the checkpoint file or directory written; "" when the run has none
}

func (e *Stopped) Error() string {
	where := fmt.Sprintf("after step %d of epoch %d", e.Step, e.Epoch)
	if e.Step == 0 {
		where = fmt.Sprintf("after epoch %d", e.Epoch-1)
	}
	if e.Checkpoint == "" {
		return "train: stopped on request " + where + "; nothing saved (no checkpoint directory)"
	}
	return fmt.Sprintf("train: stopped on request %s; checkpoint %s", where, e.Checkpoint)
}

// Bits of the flags the ranks agree on at a step boundary (stepControl):
// a rank was asked to stop, and rank 0's clock says a checkpoint is due
// (Common.CheckpointInterval).
const (
	flagStop int32 = 1 << iota
	flagSave
)

// stepControl is how the ranks agree, cheaply, at every minibatch step
// boundary and at every epoch's end whether to stop (any rank's Hooks.Stop)
// and whether a timed checkpoint is due. At step boundary i the compute
// loop collects the agreement it started at boundary i−1 and starts the
// next: a one-element Allreduce (maximum of the flags) on a communicator
// of its own (a collective.Dup of the stepper's, phase
// metrics.PhaseCheckpoint), run on a goroutine while step i−1 computes,
// so that the step never waits for it but in a collective the ranks make
// anyway. A stop request is thus acted on at the second boundary after it
// at the latest, on every rank at the same one: every rank started the
// same agreements in the same order, so no rank waits for one that
// another never starts. Epoch ends agree at once (sync).
type stepControl struct {
	c       collective.Comm
	stop    func() bool   // Hooks.Stop; nil: never
	every   time.Duration // Common.CheckpointInterval
	last    time.Time     // rank 0: the run's start or its last checkpoint
	pending chan agreed   // the agreement in flight, nil when none
}

// agreed is the result of one agreement.
type agreed struct {
	flags int32
	err   error
}

// newStepControl returns the step control of a run with stop (may be nil)
// and cc, or nil when there is nothing to agree on (no Hooks.Stop and no
// CheckpointInterval). It is collective over c: stop must be nil on every
// rank or on none.
func newStepControl(c collective.Comm, stop func() bool, cc *Common) (*stepControl, error) {
	if stop == nil && (cc.CheckpointInterval == 0 || cc.CheckpointDir == "") {
		return nil, nil
	}
	restore := collective.SetPhase(c, metrics.PhaseSetup)
	dc, err := collective.Dup(c)
	restore()
	if err != nil {
		return nil, err
	}
	collective.SetPhase(dc, metrics.PhaseCheckpoint)
	k := &stepControl{c: dc, stop: stop, last: time.Now()}
	if cc.CheckpointDir != "" {
		k.every = cc.CheckpointInterval
	}
	return k, nil
}

// mine returns this rank's flags now.
func (k *stepControl) mine() int32 {
	var f int32
	if k.stop != nil && k.stop() {
		f |= flagStop
	}
	if k.every > 0 && k.c.Rank() == 0 && time.Since(k.last) >= k.every {
		f |= flagSave
	}
	return f
}

// start starts an agreement on this rank's flags.
func (k *stepControl) start() {
	ch := make(chan agreed, 1)
	k.pending = ch
	f := k.mine()
	go func() {
		v, err := collective.AllreduceScalar(k.c, f, collective.Max)
		ch <- agreed{v, err}
	}()
}

// collect returns the agreement in flight (0 when none).
func (k *stepControl) collect() (int32, error) {
	if k.pending == nil {
		return 0, nil
	}
	a := <-k.pending
	k.pending = nil
	return a.flags, a.err
}

// boundary is the step boundary before step i (i > first: the epoch's
// first step has none): it collects the agreement started at the previous
// boundary, or at the epoch's first step, and starts the next one unless
// the ranks stop.
func (k *stepControl) boundary(i, first int) (int32, error) {
	var f int32
	if i > first {
		var err error
		if f, err = k.collect(); err != nil {
			return 0, err
		}
	}
	if f&flagStop == 0 {
		k.start()
	}
	return f, nil
}

// sync ends any agreement in flight (its flags count) and agrees at once:
// the epoch's end.
func (k *stepControl) sync() (int32, error) {
	f, err := k.collect()
	if err != nil {
		return 0, err
	}
	k.start()
	g, err := k.collect()
	return f | g, err
}

// saved restarts the clock of timed checkpoints.
func (k *stepControl) saved() { k.last = time.Now() }

// close frees the control's communicator (collective).
func (k *stepControl) close() error {
	if k == nil {
		return nil
	}
	if _, err := k.collect(); err != nil {
		return err
	}
	return collective.Free(k.c)
}
