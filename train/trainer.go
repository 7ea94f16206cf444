package train

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	rtmetrics "runtime/metrics"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/rng"
	"gnnmpi/internal/sat"
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
	// memCheck is the memory check's line for the log (checkFootprint).
	memCheck string
	// resumeSums is this rank's loss sum, correct count and seeds seen
	// of the steps a checkpoint inside an epoch had done (resume), for
	// train to go on from.
	resumeSums [3]float64
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
	grads []float32 // the device step's flat gradients, staged for their Allreduce
	gsync *gradSync // sums the gradients over the ranks (grad.go)
	// labels and dlogits are the host step's seed labels and loss
	// gradient, reused from step to step (trainer.backward).
	labels  []int32
	dlogits *dense.Matrix
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
	path    dataPath   // the loader's own timing over the run (datapath.go)
	ckw     ckptWriter // rank 0: the checkpoint file's background write
}

// evaluator is the state of a trainer's layer-wise inference (infer.go):
// who computes which vertex, the chunks each layer is computed in, and
// which of the rank's rows are validation and test vertices.
type evaluator struct {
	ebook *partition.Book // who computes which vertex in layer-wise inference
	// evalDeg is the degrees of the rows the rank owns under ebook, for
	// GCN on a partitioned dataset (needDegrees); nil otherwise.
	evalDeg     *dense.Matrix
	evalChunks  [][]int   // per layer: this rank's chunk boundaries, padded to the ranks' maximum count
	haloOnce    []bool    // per layer: whether several chunks share one fetch of the halo (planChunks)
	haloRounds  []int     // per layer: the pieces its halo is fetched in (inferPieces), 0 if it is not; nil if no layer is
	pieceSpare  []float32 // storage inferPieces' sums left beyond the layer's output, for the next layer's sums; nil when there is none
	chunkCache  map[[2]int]*evalChunk
	chunkCached int64 // bytes of the cached chunks (trainer.chunk)
	// halo lists, ascending, the sources of the rank's inference blocks
	// that it does not own under ebook: what a layer computed in several
	// chunks fetches once (haloPlan, from the first evaluation on).
	halo     []int64
	haloPlan *alltoall.Plan
	// haloDeg is the degrees of halo's vertices when evalDeg is set,
	// fetched at the first evaluation (nil before).
	haloDeg           []int64
	valMask, testMask []bool // of rows [d.RowLo, d.RowHi)
	// evalSampler samples evaluation's minibatches with Config.EvalFanouts
	// (evalsampled.go), made at the first evaluation.
	evalSampler sampling.Sampler
	// rowsWhole caches wholeRows: 0 not yet known, 1 yes, 2 no;
	// rowsSorted, whether the adjacency's rows are sorted without repeats.
	rowsWhole  int8
	rowsSorted bool
	// rowCache keeps the sorted rows of row passes' chunks (keepRows),
	// within chunkCached's budget; ownedNNZ counts the stored entries of
	// the rank's inference vertices (haloRowPass), once.
	rowCache map[[2]int]*sparse.CSR
	ownedNNZ int64
	// pieceNb holds the sorted rows of the rank's inference vertices
	// during one inference whose rows are stored unsorted (evalRows).
	pieceNb *sparse.CSR
	// inferWhole is set when layer-wise inference computes each layer in
	// one chunk on the device (wholeOnDevice); inferPlan says which way it
	// goes there, and why, for the log.
	inferWhole bool
	inferPlan  string
	// inferDevice names the GPU that computed inference (layer-wise or
	// evaluation's minibatches; Config.Device cuda), once it has; "" on
	// the CPU.
	inferDevice string
	// layerDone, when set (Infer), is called after each layer of
	// inference with its number, from 1, and its output rows.
	layerDone func(layer int, h *dense.Matrix)
}

func newTrainer(c collective.Comm, d *Data, cfg Config) (*trainer, error) {
	mc := cfg.Model
	mc.In, mc.Out = d.NumFeatures(), d.NumClasses
	norm := cfg.FeatureNorm.Resolve(d.NonNegative)
	ebook, err := evalBook(d.Book, cfg.Replication)
	if err != nil {
		return nil, err
	}
	// Nothing large is allocated before the check: the model, the
	// normalised features and the store come after it. (A book of the
	// wrong size is refused below, after the check.)
	// Inference is planned (and counted by the check) at setup when the
	// loop evaluates; a run without evaluation plans it only if it infers
	// after all (planInference: --save-logits).
	evaluates := cfg.EvalEvery > 0
	evalRows := int64(0)
	if c.Rank() < ebook.Parts && evaluates {
		evalRows = int64(len(ebook.Owned(c.Rank())))
	}
	ccfg := cfg
	ccfg.Model = mc
	var halo []int64 // inference's halo rows on this rank (haloOf)
	if c.Rank() < ebook.Parts && evaluates {
		halo = haloOf(d, ebook, c.Rank(), ebook.Owned(c.Rank()))
	}
	fp, memCheck, err := checkFootprint(c, d, ccfg, norm, evalRows, int64(len(halo)))
	if err != nil {
		return nil, err
	}
	m, err := model.New(mc, rng.New(cfg.Seed, streamInit), cfg.BLAS)
	if err != nil {
		return nil, err
	}
	// The features move into the store: the trainer's view of d and d
	// itself let go of them, so that the rows are not held twice.
	feat := d.Features(norm) // normalised in place when d owns its dense rows, else into a copy (maybe read-only mapped memory)
	mapped := mappedFeatures(d)
	d.Feat, d.Feat16, d.FeatCSR = nil, nil, nil
	dd := *d
	d = &dd
	t := &trainer{cfg: cfg, d: d, comms: comms{c: c}, learner: learner{m: m}, memCheck: memCheck}
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
	t.ebook = ebook
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
	t.halo = halo
	if d.PartOffsets != nil && cfg.globalBatch > 0 {
		if t.sched, err = t.partSchedule(); err != nil {
			return nil, err
		}
	} else {
		t.sched = newSchedule(cfg.Shuffle, t.owned, d.Split.Train, counts, r, cfg.BatchSize, cfg.globalBatch)
	}
	if t.store, err = t.newStore(feat, cfg.Cache, cfg.CacheFrac); err != nil {
		return nil, err
	}
	feat = Features{}
	mapped.release() // the store holds the rows now
	if t.stores, err = t.storeStats(); err != nil {
		return nil, err
	}
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	if err := t.openDevice(); err != nil {
		return nil, err
	}
	if evaluates && cfg.EvalFanouts == nil { // after the device opens: inference may run there (wholeOnDevice)
		if err := t.planInference(); err != nil {
			return nil, errors.Join(err, t.closeDevice())
		}
	}
	t.valMask, t.testMask = mask(d.RowLo, d.RowHi, d.Split.Valid), mask(d.RowLo, d.RowHi, d.Split.Test)
	t.fingerprint = t.makeFingerprint()
	bucketMB := cfg.GradBucketMB
	if t.dev != nil {
		bucketMB = 0 // the device step hands over all its gradients at once
	}
	if t.gsync, err = newGradSync(c, m, cfg.GradDType, bucketMB); err != nil {
		return nil, err
	}
	limitHeap(t.memory(), memlimit.MappedBytes(csrArrays(t.d.Adj)...), fp.Slack)
	return t, nil
}

// limitHeap lowers the Go collector's soft memory limit to 1.5 times the
// trainer's state (memory's parts) plus the slack heapSlack(state, other,
// batch), with batch the minibatches' bytes in flight with every sampled
// row counted as new (footprint.Slack), less mapped, the bytes of the
// state that lie in a file mapping (a binary file's topology, read in
// place), unless GOMEMLIMIT sets one or
// the limit is lower already: a minibatch's buffers are garbage after its
// step, and without the limit the heap would grow to twice the live state
// (GOGC 100) before they are collected. other is the resident memory
// outside the Go runtime and the mapping now (the binary's and libraries'
// pages, MPI's segments). The mapped pages count in the resident set but
// not in the Go runtime's memory, which the limit bounds, so the resident
// set stays under 1.5 times the state plus the slack, other and what C
// code (BLAS) allocates later.
func limitHeap(state []int64, mapped, batch int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	other := max(0, memlimit.RSS()-goResident()-mapped)
	debug.SetMemoryLimit(heapLimit(state, mapped, other, batch, debug.SetMemoryLimit(-1)))
}

// goResident returns the Go runtime's memory not returned to the system
// (runtime/metrics: all its memory less the heap's released pages), the
// part of the resident set it accounts for.
func goResident() int64 {
	ss := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	rtmetrics.Read(ss)
	if ss[0].Value.Kind() != rtmetrics.KindUint64 || ss[1].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return int64(ss[0].Value.Uint64() - ss[1].Value.Uint64())
}

// heapLimit returns limitHeap's limit for the given state, mapped, other
// and batch bytes, or cur if that is lower. The limit is at least the
// slack.
func heapLimit(state []int64, mapped, other, batch, cur int64) int64 {
	var s int64
	for _, v := range state {
		s = sat.Add(s, v)
	}
	slack := heapSlack(s, other, batch)
	lim := sat.Add(sat.Add(s, s/2), slack)
	if mapped > 0 && mapped < lim-slack {
		lim -= mapped
	}
	return min(lim, cur)
}

// Bounds of heapSlack: peakSlack is the resident set's allowance beyond
// 1.5 times the state (the memory target, issue 29), heapMargin what of it
// stays free for memory outside the heap that comes after the limit is
// set (BLAS's buffers, growth of the other bytes) and for the
// collector's overshoot, and the slack is at least minSlack.
const (
	peakSlack  = 300_000_000
	heapMargin = 32 << 20
	minSlack   = 96 << 20
)

// heapSlack returns the soft heap limit's allowance beyond 1.5 times the
// state s, given other bytes resident outside the Go runtime and batch,
// the bytes of the minibatches in flight with every sampled row counted
// as new (footprint.Slack; not the memory check's tighter
// footprint.Batch, so that the collector's pace does not follow the
// estimate): batch, but no more than the memory target leaves,
// peakSlack − other − heapMargin, and at least minSlack. A state whose steps take much memory gets room for them and
// their garbage, so that the collector does not run several times a step
// (Coauthor-Physics, SAGE hidden 256, state 83 MB, minibatches 0.21 GiB:
// a slack of 96 MiB meant 849 collections in 3 epochs and evaluation,
// this one 101; twice the minibatches' bytes meant 46, but raised the
// peak of states with larger steps beside them, products' at np 8), and
// steps that take less (the 1M SBM: about 10 MB of garbage at np 1, 17 MB
// at np 4) get minSlack, a collection every few steps at least.
func heapSlack(s, other, batch int64) int64 {
	return max(min(batch, peakSlack-other-heapMargin), minSlack)
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
