package train

import (
	"fmt"
	"runtime/debug"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/gpu/tier"
	"gnnmpi/metrics"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
)

// The minibatch pipeline. A minibatch is prepared (sampled, then its input
// rows fetched, or gathered on the device: device.go) by the loader and
// consumed by the compute loop of train (forward, backward, gradient
// Allreduce, optimizer step). With Config.Overlap the loader is a
// goroutine of its own that prepares minibatches i+1 … i+prefetch while
// minibatch i computes, as SALIENT++ does; without it, train prepares
// each minibatch just before computing it. Both do the same calls in the
// same order on each communicator, so the losses do not depend on
// Overlap.
//
// Communication from two goroutines stays matched across the ranks by
// construction: the loader communicates only on the trainer's loader
// communicator lc (a duplicate of c made by collective.Dup, and the
// sampler's grid and the feature store's group split from it), the compute
// loop only on c. On each communicator the calls are those of one goroutine
// in program order, the same on every rank; the backends let a rank's two
// goroutines be inside collectives on the two communicators at once, and
// each counts its bytes under its own phase (sample, spgemm, fetch on lc;
// grad, metrics on c).

// prefetch is the number of minibatches the loader prepares ahead of the one
// that computes: the depth of the queue between them.
const prefetch = 2

// slot is the memory of one minibatch in flight: its input rows, reused
// from minibatch to minibatch. The loader owns a slot from taking it from
// the free list until it hands the prepared minibatch over; the compute
// loop owns it then until it releases it. On the device each slot has its
// own output buffer for the tier store's gather, so the loader never
// overwrites the inputs of a minibatch that is computing.
type slot struct {
	x   inputs
	out *tier.Out // the device buffer of the inputs, with the tier store (Config.Device cuda)
}

// inputs are the input feature rows of a minibatch or an inference chunk:
// dense, or sparse (only the nonzeros) when the feature store holds sparse
// rows. Exactly one is set after a fetch; each keeps its storage for reuse.
type inputs struct {
	dense *dense.Matrix
	csr   *sparse.Matrix[float32]
	deg   []int64 // the rows' degrees, when GCN needs them fetched (trainer.needDegrees)
	// gpu is the input rows gathered on the device by the tier store
	// (Config.Device cuda with dense features, float32 or f16), in the slot's
	// device buffer; dense and csr are then not filled.
	gpu tier.Batch
}

// batch is one prepared minibatch: step i of the epoch, its seeds, its
// sampled blocks and its input rows (in s.x).
type batch struct {
	i     int
	seeds []int64
	mb    *sampling.MiniBatch
	x     inputs
	s     *slot
}

// loadState is what preparing an epoch's minibatches accumulates on the
// goroutine that prepares them: the sampled bulk in use, and the time and
// feature fetches of the preparation.
type loadState struct {
	epoch   int
	from    int // the first step prepared
	batches [][]int64
	sampled []*sampling.MiniBatch
	secs    map[string]float64 // metrics.PhaseSample, metrics.PhaseFetch
	fetched alltoall.Counts
	bytes   int64      // the fetched input rows' bytes (trainer.inputBytes)
	reads   tier.Reads // the tiers the device gathers read from
}

// prepare samples (Bulk minibatches at a time, at the first of each bulk)
// and fetches minibatch i of the epoch into s. It communicates on t.lc only.
func (t *trainer) prepare(ls *loadState, i int, s *slot) (*batch, error) {
	t0 := time.Now()
	if i%t.cfg.Bulk == 0 || i == ls.from {
		// An epoch resumed inside a bulk samples the whole bulk again
		// (the same keys) and uses its share.
		var err error
		if ls.sampled, err = t.sampleBulk(ls.epoch, ls.batches, i-i%t.cfg.Bulk); err != nil {
			return nil, err
		}
	}
	mb := ls.sampled[i%t.cfg.Bulk]
	t1 := time.Now()
	ls.secs[metrics.PhaseSample] += t1.Sub(t0).Seconds()
	restore := collective.SetPhase(t.lc, metrics.PhaseFetch)
	var cnt alltoall.Counts
	var err error
	if t.dev != nil && t.dev.tier != nil {
		cnt, err = t.gather(ls, s, mb.Input())
	} else {
		cnt, err = t.fetch(&s.x, mb.Input())
	}
	restore()
	if err != nil {
		return nil, err
	}
	ls.fetched = ls.fetched.Add(cnt)
	ls.bytes += t.inputBytes(&s.x)
	if t.needDegrees(true) {
		restore := collective.SetPhase(t.lc, metrics.PhaseFetch)
		s.x.deg, err = fetchDegrees(t.fcomm, t.d.Book, t.featDeg, nil, mb.Input())
		restore()
		if err != nil {
			return nil, err
		}
	}
	ls.secs[metrics.PhaseFetch] += time.Since(t1).Seconds()
	return &batch{i: i, seeds: ls.batches[i], mb: mb, x: s.x, s: s}, nil
}

// sampleBulk samples the minibatches of steps i … i+Bulk−1 of epoch
// together, with the training loop's keys, under the phase metrics.PhaseSample of
// the loader communicator (the 1.5D topology's products count under
// metrics.PhaseSpGEMM). It is collective over t.lc when the topology is
// distributed.
func (t *trainer) sampleBulk(epoch int, batches [][]int64, i int) ([]*sampling.MiniBatch, error) {
	defer collective.SetPhase(t.lc, metrics.PhaseSample)()
	bulk := batches[i:min(i+t.cfg.Bulk, len(batches))]
	return t.sampler.Sample(bulk, sampleKeys(t.cfg.Seed, epoch, i, len(bulk), t.sampleRank(t.c.Rank())))
}

// fetch gathers the feature rows of ids from the feature store into x,
// reusing its storage when it is large enough (sparse rows from a sparse
// store, dense ones otherwise), and returns the fetch's counts. It counts
// under the current phase of the loader communicator (metrics.PhaseFetch in
// training, metrics.PhaseEval in inference) and is collective over the store's
// group (split from t.lc).
func (t *trainer) fetch(x *inputs, ids []int64) (alltoall.Counts, error) {
	var cnt alltoall.Counts
	var err error
	if t.store.Sparse() {
		x.csr, cnt, err = t.store.FetchSparseTo(x.csr, ids)
	} else {
		x.dense, cnt, err = t.store.FetchTo(x.dense, ids)
	}
	return cnt, err
}

// gather builds the input rows of ids on the device with the tier store
// (device.go), in s's device buffer, and returns the counts of its fetch,
// the same as fetch's. It is collective over the store's group, like
// fetch, and called where fetch would be.
func (t *trainer) gather(ls *loadState, s *slot, ids []int64) (alltoall.Counts, error) {
	b, err := s.gatherTiers(t.dev.tier, ids)
	if err != nil {
		return alltoall.Counts{}, err
	}
	s.x.gpu = b
	ls.reads = ls.reads.Add(b.Reads)
	return b.Counts, nil
}

// gatherTiers gathers the input rows of ids on the device from the tier
// store st into s's device buffer (made on first use) and returns them
// (tier.Store.GatherTo: collective over the store's group).
func (s *slot) gatherTiers(st *tier.Store, ids []int64) (tier.Batch, error) {
	if s.out == nil {
		s.out = st.NewOut()
	}
	return st.GatherTo(s.out, ids)
}

// source hands the compute loop an epoch's prepared minibatches in order.
type source interface {
	// next returns the next minibatch. After an error the epoch is over:
	// the caller calls stop and returns the error.
	next() (*batch, error)
	// release returns b's slot for reuse; b must not be used after.
	release(b *batch)
	// finish waits for the preparation to end after the last minibatch
	// and returns its statistics.
	finish() *loadState
	// stop ends the preparation early, after an error, without waiting
	// for a loader that may be blocked in a collective (see pipeline).
	stop()
	// drain ends the preparation before step i on every rank alike (a
	// coordinated stop, before step i is taken): it waits for the
	// minibatches the loader may prepare ahead of step i, the same ones
	// on every rank, so that no rank's loader is left in a collective
	// the others never join, and drops them.
	drain(i int) error
}

// newSource returns the source of epoch's minibatches from step from on:
// a pipeline when cfg.Overlap is set, else inline preparation.
func (t *trainer) newSource(epoch int, batches [][]int64, from int) source {
	ls := &loadState{epoch: epoch, from: from, batches: batches, secs: map[string]float64{}}
	if !t.cfg.Overlap {
		return &inline{t: t, ls: ls, s: t.spare(), i: from}
	}
	for len(t.slots) < prefetch+1 {
		t.slots = append(t.slots, &slot{})
	}
	return t.startPipeline(ls)
}

// spare returns slot 0, whose buffer inference and inline preparation use
// while no pipeline runs.
func (t *trainer) spare() *slot {
	if len(t.slots) == 0 {
		t.slots = append(t.slots, &slot{})
	}
	return t.slots[0]
}

// inline prepares every minibatch on the compute loop's goroutine, just
// before it computes, in one slot.
type inline struct {
	t  *trainer
	ls *loadState
	s  *slot
	i  int
}

func (in *inline) next() (*batch, error) {
	b, err := in.t.prepare(in.ls, in.i, in.s)
	in.i++
	return b, err
}

func (in *inline) release(*batch)     {}
func (in *inline) finish() *loadState { return in.ls }
func (in *inline) stop()              {}
func (in *inline) drain(int) error    { return nil }

// pipeline runs the loader on a goroutine of its own. The loader takes a
// free slot (there are prefetch+1: one computing, prefetch prepared or in
// preparation), prepares the next minibatch in it and queues it; the
// compute loop takes the queued minibatches in order and releases their
// slots when done, so a slot is never written while the compute loop reads
// it.
//
// On an error the loader queues it and stops; the compute loop returns it.
// When the compute loop fails first, it closes quit, which releases a
// loader waiting for a slot or for room in the queue, and returns at once:
// the loader may be inside a collective on lc that the other ranks will
// never join (their compute loops are stuck on c, waiting for this rank),
// and waiting for it would hang the rank instead of letting the error end
// the job (MPI_Abort through main, or the in-process backend aborting
// every rank's calls when this rank returns its error). Such a loader
// leaves its collective once the job is aborted and touches nothing but
// its own state; the trainer is not used after an error.
type pipeline struct {
	ls    *loadState
	ready chan loaded
	free  chan *slot
	quit  chan struct{}
	done  chan struct{} // closed when the loader has returned
}

// loaded is what the loader queues: a prepared minibatch or its error.
type loaded struct {
	b   *batch
	err error
}

// startPipeline starts the loader of ls's epoch.
func (t *trainer) startPipeline(ls *loadState) *pipeline {
	p := &pipeline{
		ls:    ls,
		ready: make(chan loaded, prefetch),
		free:  make(chan *slot, len(t.slots)),
		quit:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	for _, s := range t.slots[:prefetch+1] {
		p.free <- s
	}
	go p.load(t)
	return p
}

// load is the loader goroutine.
func (p *pipeline) load(t *trainer) {
	defer close(p.done)
	defer func() {
		// A panic here would end the process without MPI_Abort or the
		// in-process backend's clean failure: make it this rank's error.
		if v := recover(); v != nil {
			select {
			case p.ready <- loaded{err: fmt.Errorf("train: minibatch loader: panic: %v\n%s", v, debug.Stack())}:
			case <-p.quit:
			}
		}
	}()
	for i := p.ls.from; i < len(p.ls.batches); i++ {
		var s *slot
		select {
		case s = <-p.free:
		case <-p.quit:
			return
		}
		b, err := t.prepare(p.ls, i, s)
		select {
		case p.ready <- loaded{b, err}:
		case <-p.quit:
			return
		}
		if err != nil {
			return
		}
	}
}

func (p *pipeline) next() (*batch, error) {
	l := <-p.ready
	return l.b, l.err
}

func (p *pipeline) release(b *batch) { p.free <- b.s }

func (p *pipeline) finish() *loadState {
	<-p.done
	return p.ls
}

func (p *pipeline) stop() { close(p.quit) }

// drain waits for the minibatches prepared ahead of step i: the loader
// holds a slot for every minibatch prepared and not released, so with
// steps before i released it prepares exactly those up to i+prefetch
// (or the epoch's last) and then waits for a slot; drain takes them and
// stops it there.
func (p *pipeline) drain(i int) error {
	last := min(i+prefetch, len(p.ls.batches)-1)
	for {
		l := <-p.ready
		if l.err != nil {
			p.stop()
			return l.err
		}
		if l.b.i == last {
			break
		}
	}
	p.stop()
	<-p.done
	return nil
}
