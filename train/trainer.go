package train

import (
	"fmt"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// memory returns this rank's bytes by MemoryCategories.
func (t *trainer) memory() []int64 {
	topo := csrBytes(t.d.Adj)
	if tp, ok := t.sampler.(interface{ Topology() sampling.Topology }); ok {
		if m := tp.Topology().Local(); m != nil && !sharesIndices(m, t.d.Adj) {
			topo += csrBytes(m)
		}
	}
	cache := t.store.CacheBytes()
	model := int64(t.m.NumParams())*8 + int64(len(t.opt.State()))*4
	return []int64{topo, t.store.Bytes() - cache, cache, model}
}

// sharesIndices reports whether a and b are views of the same column
// array.
func sharesIndices(a, b *sparse.CSR) bool {
	return len(a.Indices) > 0 && len(b.Indices) > 0 && &a.Indices[0] == &b.Indices[0]
}

var _ stepper = (*trainer)(nil)
var _ weightKeeper = (*trainer)(nil)

// trainer is one rank's training state. Its parts are the model and
// optimiser (learner), the communicators (comms), the data side that
// feeds the step (feed), layer-wise inference (evaluator), the GPU step
// (dev) and the counters of the last epoch (ep); their fields and
// methods are promoted, so t.m, t.store or t.flatWeights read as before.
type trainer struct {
	cfg         Config
	d           *Data   // the rank's graph rows and labels; its features have moved into feed.store
	deg         []int64 // full-graph degree of every vertex (GCN normalisation), when the rank holds the graph
	fingerprint string  // the run's identity in checkpoints (makeFingerprint)
	comms
	learner
	feed
	evaluator
	dev *device    // the GPU step (Config.Device cuda), else nil
	ep  epochState // the epoch that train ran, for summarize
}

// comms are a trainer's communicators. The compute loop (gradients,
// metrics, inference) talks on c; the loader on lc, a duplicate of c
// (collective.Dup), and its splits: sampling on grid and the feature
// fetch on fcomm (see loader.go), so that the two never interleave their
// calls on one communicator.
type comms struct {
	c     collective.Comm
	lc    collective.Comm
	grid  *collective.Grid // the 1.5D topology's grid, nil when replicated
	fgrid *collective.Grid // the feature replication's grid, when it is not grid
	fcomm collective.Comm  // the rank's feature replica group (one rank per part)
}

// learner is the model a trainer trains and its optimiser, on the host.
// With Config.Device cuda the device model (trainer.dev) steps instead
// and hands its weights and moments back to these after every epoch.
type learner struct {
	m     *model.Model
	opt   model.Optimizer
	grads []float32 // the flat gradients, staged for their Allreduce
}

// flatWeights appends the model's parameters to dst (weightKeeper).
func (l *learner) flatWeights(dst []float32) []float32 { return l.m.FlattenWeights(dst) }

// feed is the data side of a trainer's step: the seeds it draws, the
// sampler that expands them into minibatches and the feature store that
// serves their input rows, through the slots the loader fills.
type feed struct {
	sampler sampling.Sampler
	owned   []int64         // the training vertices this rank draws seeds from
	sched   *schedule       // the seeds of every minibatch of an epoch
	store   *alltoall.Store // the rank's feature rows and cache
	stores  []StoreStats    // every rank's store, for Result.Stores
	slots   []*slot         // the minibatches' input rows in flight (loader.go); slot 0 also serves inference
	// featDeg is the degrees of the rows the rank owns under d.Book, for
	// the degree exchanges of GCN on a partitioned dataset
	// (needDegrees); nil otherwise.
	featDeg *dense.Matrix
	path    dataPath // the loader's own timing over the run (datapath.go)
}

// evaluator is the state of a trainer's layer-wise inference (infer.go):
// who computes which vertex, the chunks each layer is computed in, and
// which of the rank's rows are validation and test vertices.
type evaluator struct {
	ebook *partition.Book // who computes which vertex in layer-wise inference
	// evalDeg is the degrees of the rows the rank owns under ebook, for
	// GCN on a partitioned dataset (needDegrees); nil otherwise.
	evalDeg           *dense.Matrix
	evalChunks        [][]int // per layer: this rank's chunk boundaries, padded to the ranks' maximum count
	chunkCache        map[[2]int]*evalChunk
	chunkCached       int64  // entries and sources of the cached chunks
	valMask, testMask []bool // of rows [d.RowLo, d.RowHi)
}

func newTrainer(c collective.Comm, d *Data, cfg Config) (*trainer, error) {
	mc := cfg.Model
	mc.In, mc.Out = d.NumFeatures(), d.NumClasses
	m, err := model.New(mc, rng.New(cfg.Seed, streamInit), cfg.BLAS)
	if err != nil {
		return nil, err
	}
	// The features move into the store: the trainer's view of d and d
	// itself let go of them, so that the rows are not held twice.
	feat := d.Features(cfg.FeatureNorm.Resolve(d.NonNegative)) // normalised into a copy: d's rows may be read-only mapped memory
	d.Feat, d.FeatCSR = nil, nil
	dd := *d
	d = &dd
	t := &trainer{cfg: cfg, d: d, comms: comms{c: c}, learner: learner{m: m}}
	if t.opt, err = cfg.newOptimizer(); err != nil {
		return nil, err
	}
	// The loader's communicator counts under metrics.PhaseSetup until a phase is
	// set on it.
	restore := collective.SetPhase(c, metrics.PhaseSetup)
	t.lc, err = collective.Dup(c)
	restore()
	if err != nil {
		return nil, err
	}
	if d.Partitioned() && cfg.Shuffle == ShuffleGlobal {
		return nil, settingErrorf("train: %s %s deals every training vertex to any rank, but a rank of a partitioned dataset holds only its part's labels: use %s %s (the default)",
			SettingShuffle, ShuffleGlobal, SettingShuffle, ShuffleLocal)
	}
	if t.grid, err = topologyGrid(t.lc, cfg); err != nil {
		return nil, err
	}
	if t.sampler, err = t.newSampler(); err != nil {
		return nil, err
	}
	if !d.Partitioned() {
		n := d.NumNodes()
		t.deg = make([]int64, n)
		for i := range n {
			t.deg[i] = d.Adj.Degree(i)
		}
	}
	r := c.Rank()
	if t.fcomm, err = t.featureComm(); err != nil {
		return nil, err
	}
	t.owned = ownedTrain(d, r, cfg.Replication)
	if t.ebook, err = evalBook(d.Book, cfg.Replication); err != nil {
		return nil, err
	}
	restore = collective.SetPhase(c, metrics.PhaseSetup)
	counts64, _, err := collective.AllgatherSlice(c, []int64{int64(len(t.owned))})
	restore()
	if err != nil {
		return nil, err
	}
	counts := make([]int, len(counts64))
	for i, v := range counts64 {
		counts[i] = int(v)
	}
	if t.needDegrees(false) {
		t.featDeg, err = ownDegrees(d, d.Book, r/cfg.Replication)
		if err == nil {
			t.evalDeg, err = ownDegrees(d, t.ebook, r)
		}
		if err := collective.Agree(c, err); err != nil {
			return nil, err
		}
	}
	if err := t.checkFootprint(feat); err != nil {
		return nil, err
	}
	t.sched = newSchedule(cfg.Shuffle, t.owned, d.Split.Train, counts, r, cfg.BatchSize)
	if t.store, err = t.newStore(feat, cfg.Cache, cfg.CacheFrac); err != nil {
		return nil, err
	}
	if t.stores, err = t.storeStats(); err != nil {
		return nil, err
	}
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	if t.evalChunks, err = t.planChunks(); err != nil {
		return nil, err
	}
	t.valMask, t.testMask = mask(d.RowLo, d.RowHi, d.Split.Valid), mask(d.RowLo, d.RowHi, d.Split.Test)
	t.fingerprint = t.makeFingerprint()
	if err := t.openDevice(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkFootprint compares what training is about to allocate on this
// rank with what it may still allocate (collective: every rank fails if
// one would not fit): the feature store's copy of the rows it owns and of
// its cache, and inference's layer outputs (two of the widest, for the
// rows the rank computes). The topology and the loaded rows are already
// counted by the memory in use.
func (t *trainer) checkFootprint(feat Features) error {
	rows := int64(len(t.ebook.Owned(t.c.Rank())))
	width := int64(feat.Cols())
	for _, l := range t.m.Layers {
		width = max(width, int64(l.OutDim()))
	}
	store := int64(0)
	if feat.CSR != nil {
		store = int64(len(feat.CSR.Indices))*8 + int64(feat.CSR.NRows)*8
	} else {
		store = int64(feat.Dense.Rows) * int64(feat.Dense.Cols) * 4
	}
	cache := int64(cacheRows(t.cfg.CacheFrac, t.d.Book.NumNodes(), t.d.Book.Parts)) * int64(feat.Cols()) * 4
	infer := 2 * rows * width * 4
	need := store + cache + infer
	what := fmt.Sprintf("feature store %s, cache %s, inference outputs %s", gib(store), gib(cache), gib(infer))
	if t.cfg.Device == DeviceCUDA && feat.CSR == nil && t.cfg.FeatureDType != alltoall.F16 {
		// The device tiers (gpu/tier) copy the resident rows not in device
		// memory into mapped host memory beside the store.
		host := int64(float64(store+cache) * (1 - t.cfg.GPUFrac))
		need += host
		what += ", mapped host tier " + gib(host)
	}
	return fits(t.c, need, fmt.Sprintf("training needs %s more (%s)", gib(need), what))
}

// topologyGrid returns the grid of the sampler's topology over c: (p/C)×C
// for 1.5D, √p×√p for 2D, nil when replicated.
func topologyGrid(c collective.Comm, cfg Config) (*collective.Grid, error) {
	p := c.Size()
	switch cfg.Topology {
	case Topology15D:
		if p%cfg.C != 0 {
			return nil, fmt.Errorf("train: replication factor %d does not divide the %d ranks", cfg.C, p)
		}
		return collective.NewGrid(c, p/cfg.C, cfg.C)
	case Topology2D:
		s := isqrt(p)
		if s*s != p {
			return nil, settingErrorf("train: %s %s needs a square number of ranks, not %d", SettingTopology, Topology2D, p)
		}
		return collective.NewGrid(c, s, s)
	}
	return nil, nil
}

// isqrt returns ⌊√n⌋ for n ≥ 0.
func isqrt(n int) int {
	s := 0
	for (s+1)*(s+1) <= n {
		s++
	}
	return s
}

// newSampler returns the sampler over the topology of cfg: replicated
// (the whole graph on every rank), or distributed over t.grid, built from
// the rows this rank holds. A distributed topology's row blocks are the
// data's parts when d is partitioned (the rank's rows are its grid row's
// block: C, or √p for 2D, must equal the feature replication), else the
// even split of the rows.
func (t *trainer) newSampler() (sampling.Sampler, error) {
	d, cfg := t.d, t.cfg
	kind := cfg.Sampler
	if cfg.Topology == TopologyReplicated {
		if d.Partitioned() {
			return nil, settingErrorf("train: a partitioned dataset's ranks hold only their parts' rows: use %s %s or %s (or load it with a replicated topology)", SettingTopology, Topology15D, Topology2D)
		}
		return sampling.New(kind, d.Adj, cfg.Fanouts, nil)
	}
	g := t.grid
	bounds, local := d.Offsets, d.Adj
	if !d.Partitioned() {
		bounds = spgemm.Bounds(d.NumNodes(), g.PR)
		local = sparse.RowRange(d.Adj, bounds[g.Row], bounds[g.Row+1])
	} else if len(bounds) != g.PR+1 || d.RowLo != bounds[g.Row] || d.RowHi != bounds[g.Row+1] {
		return nil, settingErrorf("train: the %s topology's %d grid rows must be the data's %d parts: with a partitioned dataset set the topology's replication (%s for %s, √p for %s) equal to the feature replication %d",
			cfg.Topology, g.PR, len(bounds)-1, SettingC, Topology15D, Topology2D, cfg.Replication)
	}
	return sampling.NewBlock(kind, cfg.Topology, g, bounds, local, cfg.Fanouts)
}
