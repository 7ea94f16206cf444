package train

import (
	"math/rand/v2"
	"slices"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/gpu/tier"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/sampling"
)

// epochState is what train keeps on this rank for summarize: the
// communication counts at the epoch's start, the times by phase, the loss
// and accuracy sums and the feature fetches.
type epochState struct {
	before                 collective.Snapshot
	secs                   map[string]float64
	trainSecs              float64
	lossSum, correct, seen float64
	fetched                alltoall.Counts
	reads                  tier.Reads // of the device gathers
	batches                int
	from                   int     // the first step trained (a resume inside the epoch), else 0
	gradWait               float64 // seconds the gradient sums waited for the other ranks (gradSync.takeWait)
	ckptSecs               float64 // seconds in checkpoints inside the epoch (saveStep)
}

// count adds a minibatch of n seeds to the epoch's sums: its mean loss
// and the number of seeds predicted correctly.
func (ep *epochState) count(loss float64, correct, n int) {
	ep.lossSum += loss * float64(n)
	ep.correct += float64(correct)
	ep.seen += float64(n)
}

// train trains one epoch: every minibatch is sampled (Bulk at a time),
// its inputs fetched, and one optimizer step taken on the gradients summed
// over the ranks. The minibatches come from a source (loader.go): with
// Config.Overlap a loader goroutine prepares the next ones while one
// computes. The time the compute loop waits for a minibatch is counted as
// metrics.PhaseWait; the loader's sample and fetch times are its own.
//
// The epoch starts at step run.from (a resume inside it: its sums go on
// from the checkpoint's, t.resumeSums) and calls run.at before every
// step; when that stops the ranks, the loader's minibatches in flight are
// dropped (a resume prepares them again from the seeded streams) and
// train returns a *stepStop.
func (t *trainer) train(epoch int, run stepRun) error {
	c, r := t.c, t.c.Rank()
	t.ep = epochState{before: collective.SnapshotOf(c), secs: map[string]float64{}}
	ep := &t.ep
	lap := func(phase string, t0 time.Time) time.Time {
		now := time.Now()
		ep.secs[phase] += now.Sub(t0).Seconds()
		return now
	}
	batches := t.sched.batches(t.cfg.Seed, epoch, r)
	ep.batches, ep.from = len(batches), run.from
	if run.from > 0 {
		// The epoch resumes inside: its loss and accuracy sums go on
		// from those of the steps before, as this rank had them.
		ep.lossSum, ep.correct, ep.seen = t.resumeSums[0], t.resumeSums[1], t.resumeSums[2]
	}
	start := time.Now()
	if t.dev != nil {
		if err := t.dev.upload(t.m); err != nil {
			return err
		}
	}
	src := t.newSource(epoch, batches, run.from)
	for i := run.from; i < len(batches); i++ {
		if run.at != nil {
			stop, err := run.at(i)
			if err != nil {
				src.stop()
				return err
			}
			if stop {
				if err := src.drain(i); err != nil {
					return err
				}
				return &stepStop{step: i}
			}
		}
		if run.progress != nil {
			run.progress(epoch, i, len(batches))
		}
		t0 := time.Now()
		b, err := src.next()
		if err != nil {
			src.stop()
			return err
		}
		t0 = lap(metrics.PhaseWait, t0)
		if t.dev != nil {
			err = t.deviceBackward(ep, epoch, b.i, b.seeds, b.mb, b.x)
		} else {
			t.backward(ep, epoch, b.i, b.seeds, b.mb, b.x)
		}
		src.release(b)
		if err != nil {
			src.stop()
			return err
		}
		t0 = lap(metrics.PhaseCompute, t0)
		if t.dev == nil {
			// The gradient sums and the optimizer, bucket by bucket: the
			// waits are the grad phase (the exposed exchange), the rest
			// is compute.
			waited, err := t.gsync.step(t.opt)
			ep.secs[metrics.PhaseGrad] += waited.Seconds()
			ep.secs[metrics.PhaseCompute] += time.Since(t0).Seconds() - waited.Seconds()
			if err != nil {
				src.stop()
				return err
			}
			continue
		}
		if err := t.sumGrads(); err != nil {
			src.stop()
			return err
		}
		t0 = lap(metrics.PhaseGrad, t0)
		err = t.dev.m.AdamStep(t.dev.adam)
		lap(metrics.PhaseCompute, t0)
		if err != nil {
			src.stop()
			return err
		}
	}
	if t.dev != nil {
		if err := t.dev.download(t.m); err != nil {
			src.stop()
			return err
		}
	}
	ls := src.finish()
	for p, s := range ls.secs {
		ep.secs[p] += s
	}
	ep.fetched, ep.reads = ls.fetched, ls.reads
	t.path.addEpoch(ls)
	ep.trainSecs = time.Since(start).Seconds()
	ep.gradWait = t.gsync.takeWait().Seconds()
	return nil
}

// sumGrads sums the device step's gradients over the ranks (phase
// metrics.PhaseGrad): staged through host memory in one exchange
// (t.gsync.sumFlat), or with GradComm nccl in place (allreduceDevice).
// The host step's go through t.gsync.step.
func (t *trainer) sumGrads() error {
	if t.dev.nccl != nil {
		defer collective.SetPhase(t.c, metrics.PhaseGrad)()
		return t.allreduceDevice()
	}
	t.grads = dense.Grow(t.grads, t.dev.m.NumParams())
	if err := t.dev.m.Grads(t.grads); err != nil {
		return err
	}
	if err := t.gsync.sumFlat(t.c, t.grads); err != nil {
		return err
	}
	return t.dev.m.SetGrads(t.grads)
}

// backward computes the gradients of minibatch i of epoch (seeds, sampled
// as mb, input rows x) on this rank and adds its loss and accuracy to ep.
func (t *trainer) backward(ep *epochState, epoch, i int, seeds []int64, mb *sampling.MiniBatch, x inputs) {
	t.m.ZeroGrad()
	if len(seeds) == 0 {
		return
	}
	drops := dropStream(t.cfg.Seed, epoch, i)
	var logits *dense.Matrix
	if x.csr != nil {
		logits = t.m.ForwardSparseIDs(t.blocks(mb, x.deg), dropIDs(mb), x.csr, true, drops)
	} else {
		logits = t.m.ForwardIDs(t.blocks(mb, x.deg), dropIDs(mb), x.dense, true, drops)
	}
	labels := slices.Grow(t.labels[:0], len(seeds))[:len(seeds)]
	t.labels = labels
	for k, g := range seeds {
		labels[k] = t.d.Label(g)
	}
	loss, dl := model.SoftmaxCrossEntropyTo(t.dlogits, logits, labels)
	t.dlogits = dl
	// dl is the gradient of this rank's mean loss; rescale it to this
	// rank's share of the global mean over the step's seeds, so that
	// summing over ranks gives the global gradient.
	scale := float32(float64(len(seeds)) / float64(t.sched.sizes[i]))
	for k := range dl.Data {
		dl.Data[k] *= scale
	}
	t.m.BackwardEach(dl, t.gsync.layerDone)
	ep.count(loss, model.Correct(logits, labels), len(seeds))
}

// dropStream returns the rng of step i of epoch's dropout masks: the same
// on every rank, so that with the masks keyed by vertex (dropIDs) a
// vertex's masks in a step do not depend on the rank that computes it, nor
// on the rank count.
func dropStream(seed uint64, epoch, i int) *rand.Rand {
	return rng.New(seed, streamDropout, uint64(epoch), uint64(i))
}

// dropIDs returns the global ids of each layer's input rows of mb (block
// l's sources), which key its dropout masks (model.Model.ForwardIDs).
func dropIDs(mb *sampling.MiniBatch) [][]int64 {
	ids := make([][]int64, len(mb.Blocks))
	for l, b := range mb.Blocks {
		ids[l] = b.Src
	}
	return ids
}

// summarize reduces the epoch that train ran (and the evaluation ev, if not
// nil) over the ranks: sums of loss and accuracy counts, maxima of times,
// sums of the epoch's bytes by phase and of the feature fetches.
func (t *trainer) summarize(epoch int, ev *evaluation, evalSecs float64) (EpochStats, error) {
	c, ep := t.c, &t.ep
	st := EpochStats{Epoch: epoch, Batches: ep.batches, FromStep: ep.from, CheckpointSeconds: ep.ckptSecs}
	if ev != nil {
		ep.secs[metrics.PhaseEval] += evalSecs
		st.Evaluated, st.ValAcc, st.TestAcc, st.ValLoss = true, ev.ValAcc, ev.TestAcc, ev.ValLoss
	}
	defer collective.SetPhase(c, metrics.PhaseMetrics)()
	lossSum, correct, seen := ep.lossSum, ep.correct, ep.seen
	if err := collective.AllreduceVars(c, collective.Sum, &lossSum, &correct, &seen); err != nil {
		return EpochStats{}, err
	}
	// Every rank's times in its own slot of one vector (a sum with zeros
	// elsewhere is exact): the slowest rank per phase, and the phases of
	// the rank whose epoch was the slowest; the gradient sums' wait last.
	w := 2 + len(timePhases)
	all := make([]float64, w*c.Size())
	own := all[w*c.Rank():]
	own[0] = ep.trainSecs
	for k, p := range timePhases {
		own[k+1] = ep.secs[p]
	}
	own[w-1] = ep.gradWait
	if err := collective.AllreduceSlice(c, all, collective.Sum); err != nil {
		return EpochStats{}, err
	}
	t.path.addRanks(all, w)
	times, critical := make([]float64, w), 0
	for r := 0; r < c.Size(); r++ {
		v := all[w*r : w*(r+1)]
		for k := range times {
			times[k] = max(times[k], v[k])
		}
		if v[0] > all[w*critical] {
			critical = r
		}
	}
	delta := collective.SnapshotOf(c).Sub(ep.before)
	bytes := make([]int64, len(bytePhases), len(bytePhases)+9)
	for k, p := range bytePhases {
		bytes[k] = delta.Phase(p).SentBytes
	}
	bytes = append(bytes, ep.fetched.Rows, ep.fetched.Hits, ep.fetched.Remote)
	gpu := t.dev != nil && t.dev.tier != nil // the same on every rank: the same dtype
	if gpu {
		r := ep.reads
		bytes = append(bytes, r.DeviceRows, r.HostRows, r.RemoteRows, r.DeviceBytes, r.HostBytes, r.RemoteBytes)
	}
	if err := collective.AllreduceSlice(c, bytes, collective.Sum); err != nil {
		return EpochStats{}, err
	}
	st.Loss = lossSum / max(seen, 1)
	st.TrainAcc = correct / max(seen, 1)
	st.Seconds = times[0]
	st.PhaseSeconds = map[string]float64{}
	for k, p := range timePhases {
		st.PhaseSeconds[p] = times[k+1]
	}
	st.WaitSeconds = st.PhaseSeconds[metrics.PhaseWait]
	st.GradExposedSeconds = st.PhaseSeconds[metrics.PhaseGrad]
	st.GradWaitSeconds = times[w-1]
	st.CriticalPhaseSeconds = map[string]float64{}
	for k, p := range timePhases {
		st.CriticalPhaseSeconds[p] = all[w*critical+k+1]
	}
	st.Bytes = map[string]int64{}
	for k, p := range bytePhases {
		st.Bytes[p] = bytes[k]
	}
	k := len(bytePhases)
	st.FetchRows, st.CacheHits, st.RemoteRows = bytes[k], bytes[k+1], bytes[k+2]
	if gpu {
		g := bytes[k+3:]
		st.GPUReads = &tier.Reads{DeviceRows: g[0], HostRows: g[1], RemoteRows: g[2], DeviceBytes: g[3], HostBytes: g[4], RemoteBytes: g[5]}
	}
	return st, nil
}
