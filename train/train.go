package train

import (
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/memlimit"
	"gnnmpi/metrics"
)

// The categories of Result.Memory: the adjacency rows and the sampler's
// matrix the rank holds (shared arrays counted once), its own feature
// rows with their index, the cached remote rows with theirs, and the
// model's weights, gradients and optimizer state.
const (
	MemTopology = "topology"
	MemFeatures = "features"
	MemCache    = "cache"
	MemModel    = "model"
)

// MemoryCategories lists Result.Memory's categories in order.
func MemoryCategories() []string { return []string{MemTopology, MemFeatures, MemCache, MemModel} }

// Hooks let the caller report progress; any may be nil. They run on every
// rank; print on rank 0 only. Epoch runs after every epoch (after its
// checkpoint, if one is due), Batch before every minibatch (Run only), Log
// for messages such as a resume.
type Hooks struct {
	Epoch func(EpochStats) error
	Batch func(epoch, batch, batches int)
	Log   func(format string, args ...any)
	// Logits, when set, is called by Run on every rank after the last
	// epoch with the logits of the model it selects (Result.Saved: the
	// best epoch's parameters, or the last epoch's when none was
	// evaluated) for the vertices the rank owns in evaluation (owned:
	// their global ids; logits: one row each), computed by the
	// evaluation's layer-wise inference (phase "eval"). It may make
	// collective calls: every rank calls it.
	Logits func(owned []int64, logits *dense.Matrix) error
	// Stop, when set, reports whether this rank was asked to stop (a
	// signal). It is polled at every minibatch step boundary and at
	// every epoch's end; when it reports true on any rank, every rank
	// stops at the same boundary, at most two steps later (stepControl),
	// checkpoints if Common.CheckpointDir is set, and Run and RunFull
	// return a *Stopped. It must be set on every rank or on none, and be
	// safe to call from the training goroutine while a signal handler
	// sets what it reads.
	Stop func() bool
}

// Run trains a model on d with cfg: data-parallel minibatch SGD, every rank
// sampling and fetching its own minibatches, gradients averaged with
// Allreduce, evaluation by exact layer-wise inference. The epoch loop
// (resume, evaluation and checkpoint cadence, best epoch) is the one
// RunFull shares. Run takes d's feature rows into its feature store: once
// it has started, d.Feat and d.FeatCSR are nil, so the rows are not held
// twice.
//
// Run is collective over c: every rank must call it with the same cfg and
// partition book.
func Run(c collective.Comm, d *Data, cfg Config, h Hooks) (*Result, error) {
	cfg, err := cfg.Resolve(c.Size())
	if err != nil {
		return nil, err
	}
	unlock, err := lockCheckpointDir(c, &cfg.Common, h.Log)
	if err != nil {
		return nil, err
	}
	defer unlock()
	requested := cfg.Overlap
	cfg, cores, err := resolveOverlap(c, cfg)
	if err != nil {
		return nil, err
	}
	t, err := newTrainer(c, d, cfg)
	if err != nil {
		return nil, err
	}
	// A run that fails with a checkpoint write in flight lets it finish
	// before the directory's lock goes (the deferred unlock runs after).
	defer func() { _ = t.ckw.wait() }()
	if requested && !cfg.Overlap && h.Log != nil && c.Rank() == 0 {
		h.Log("overlap off: %d core per rank, fewer than %d (--overlap to overlap anyway)", cores, cfg.OverlapCores)
	}
	if h.Log != nil && c.Rank() == 0 {
		h.Log("memory check: %s", t.memCheck)
	}
	if t.dev != nil && h.Log != nil && c.Rank() == 0 {
		major, minor := t.dev.ctx.Capability()
		h.Log("minibatch step and layer-wise inference on %s (compute capability %d.%d), kernels loaded as %s", t.dev.ctx.Name(), major, minor, t.dev.m.Image())
		if t.inferPlan != "" {
			h.Log("layer-wise inference on the device %s", t.inferPlan)
		}
	}
	rec, err := runLoop(t, c, &cfg.Common, h)
	if err != nil {
		return nil, err
	}
	last := t.m.FlattenWeights(nil)
	onDevice := t.dev != nil && t.dev.tier != nil // free releases the device
	if h.Logits != nil {
		if err := t.selectedLogits(rec.best, h.Logits); err != nil {
			return nil, err
		}
	}
	if err := t.free(); err != nil {
		return nil, err
	}
	res := rec.result()
	res.Last, res.Model, res.Overlap = last, t.m.Config(), t.cfg.Overlap
	res.NumParams, res.Stores, res.InferDevice = t.m.NumParams(), t.stores, t.inferDevice
	if res.DataPath = t.path.record(); res.DataPath != nil {
		res.DataPath.OnDevice = onDevice
	}
	defer collective.SetPhase(c, metrics.PhaseMetrics)()
	mine := append(t.memory(), memlimit.PeakRSS(), memlimit.PeakAnon(), memlimit.PeakLiveHeap())
	all, _, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return nil, err
	}
	cats := MemoryCategories()
	res.Memory = map[string][]int64{}
	for r := range c.Size() {
		v := all[r*len(mine) : (r+1)*len(mine)]
		for k, cat := range cats {
			res.Memory[cat] = append(res.Memory[cat], v[k])
		}
		res.PeakRSS = append(res.PeakRSS, v[len(cats)])
		res.PeakAnon = append(res.PeakAnon, v[len(cats)+1])
		res.PeakLiveHeap = append(res.PeakLiveHeap, v[len(cats)+2])
	}
	return &res, nil
}
