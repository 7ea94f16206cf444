package train

import (
	"fmt"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/gpu/tier"
	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/rng"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// Phases of the epoch time (EpochStats.PhaseSeconds) and of the byte
// counts (EpochStats.Bytes; collective.SetPhase).
const (
	PhaseSample  = "sample"  // neighbour sampling (replicated topology: none; 1.5D: frontier gathers and sampled rows)
	PhaseSpGEMM  = "spgemm"  // the 1.5D topology's products P = Q·A (spgemm.Phase); time counts under sample
	PhaseFetch   = "fetch"   // feature all-to-all of the minibatch inputs
	PhaseCompute = "compute" // forward, backward, optimizer step
	PhaseGrad    = "grad"    // gradient Allreduce
	PhaseWait    = "wait"    // the compute loop waiting for its next minibatch (EpochStats.WaitSeconds)
	PhaseEval    = "eval"    // layer-wise full-neighbour inference
	PhaseMetrics = "metrics" // per-epoch reductions of losses, times and bytes
	PhaseSetup   = "setup"   // loading, partitioning, resuming
)

// timePhases are the phases of EpochStats.PhaseSeconds. With Config.Overlap
// sample and fetch are the loader goroutine's times, which overlap the
// compute loop's compute, grad and wait.
var timePhases = []string{PhaseSample, PhaseFetch, PhaseCompute, PhaseGrad, PhaseEval, PhaseWait}

// bytePhases are the phases of EpochStats.Bytes. The per-epoch reductions
// themselves (phase "metrics", a few hundred bytes) and the setup appear in
// the run's final communication summary only.
var bytePhases = []string{PhaseSample, PhaseSpGEMM, PhaseFetch, PhaseGrad, PhaseEval}

// EpochStats is one epoch's summary over all ranks.
type EpochStats struct {
	Epoch        int                `json:"epoch"`
	Loss         float64            `json:"loss"`      // mean training loss per seed
	TrainAcc     float64            `json:"train_acc"` // accuracy on the epoch's minibatch seeds (training mode)
	Evaluated    bool               `json:"evaluated"`
	ValAcc       float64            `json:"val_acc"`  // exact inference; 0 unless Evaluated
	ValLoss      float64            `json:"val_loss"` // mean cross-entropy on the validation vertices; 0 unless Evaluated
	TestAcc      float64            `json:"test_acc"` // exact inference; 0 unless Evaluated
	Seconds      float64            `json:"epoch_s"`  // training time of the slowest rank, evaluation excluded
	PhaseSeconds map[string]float64 `json:"phase_s"`  // slowest rank per phase
	// CriticalPhaseSeconds is the phases of the rank with the slowest
	// epoch (Seconds): they add up to its time, where PhaseSeconds may
	// take every phase from another rank (one rank's wait in a collective
	// is another's compute). Minibatch training only.
	CriticalPhaseSeconds map[string]float64 `json:"critical_phase_s,omitempty"`
	// WaitSeconds is the time the compute loop waited for its minibatches
	// to be sampled and fetched, on the slowest rank (PhaseSeconds["wait"]):
	// all of the preparation without Config.Overlap, what the loader did
	// not hide behind the computation with it. Minibatch training only.
	WaitSeconds float64          `json:"wait_s"`
	Bytes       map[string]int64 `json:"bytes"`   // bytes sent by phase, summed over ranks
	Batches     int              `json:"batches"` // minibatches per rank
	// Feature fetches of the training minibatches, summed over ranks: rows
	// asked for, rows served by a rank's cache, and distinct rows fetched
	// from other ranks (alltoall.Counts).
	FetchRows  int64 `json:"fetch_rows"`
	CacheHits  int64 `json:"cache_hits"`
	RemoteRows int64 `json:"remote_rows"`
	// GPUReads are the rows and bytes the device gathers of the training
	// minibatches read from each feature tier (device memory, mapped host
	// memory, the mapped buffer of remote rows), summed over ranks; nil
	// unless the inputs were gathered on the device (Config.Device cuda
	// with dense float32 features).
	GPUReads *tier.Reads `json:"gpu_reads,omitempty"`
}

// Result is a finished run's summary.
type Result struct {
	Epochs        []EpochStats     // every epoch, including those before a resume
	BestEpoch     int              // the best evaluated epoch by Common.Select (0: none evaluated)
	BestValAcc    float64          // validation accuracy at BestEpoch
	TestAcc       float64          // test accuracy at BestEpoch
	MedianEpochS  float64          // median of Epochs[i].Seconds
	BytesPerEpoch map[string]int64 // mean bytes per epoch by phase, summed over ranks
	// RemoteRowsPerEpoch is the mean of Epochs[i].RemoteRows.
	RemoteRowsPerEpoch float64
	// GPUReads is the sum of Epochs[i].GPUReads; nil when no epoch has
	// them.
	GPUReads  *tier.Reads
	Stores    []StoreStats // every rank's feature store
	NumParams int
	Best      []float32 // parameters at BestEpoch (Run only: a full-graph rank holds one stage)
	// PeakRSS is every rank's peak resident memory at the end of the run
	// (VmHWM; 0 where unknown). In-process ranks share one process and
	// report its peak.
	PeakRSS []int64
	// Memory is every rank's state by category (Run only; see
	// MemoryCategories): Memory[category][rank] bytes.
	Memory map[string][]int64
}

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
	t, err := newTrainer(c, d, cfg)
	if err != nil {
		return nil, err
	}
	rec, err := runLoop(t, &cfg.Common, h)
	if err != nil {
		return nil, err
	}
	if err := t.free(); err != nil {
		return nil, err
	}
	res := rec.result()
	res.NumParams, res.Stores = t.m.NumParams(), t.stores
	defer collective.SetPhase(c, PhaseMetrics)()
	mine := append(t.memory(), memlimit.PeakRSS())
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
	}
	return &res, nil
}

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

// trainer is one rank's training state.
type trainer struct {
	c       collective.Comm
	d       *Data
	cfg     Config
	m       *model.Model
	opt     model.Optimizer
	sampler sampling.Sampler
	grid    *collective.Grid // the 1.5D topology's grid, nil when replicated
	fgrid   *collective.Grid // the feature replication's grid, when it is not grid
	fcomm   collective.Comm  // the rank's feature replica group (one rank per part)
	store   *alltoall.Store  // the rank's feature rows and cache
	stores  []StoreStats
	owned   []int64         // the training vertices this rank draws seeds from
	ebook   *partition.Book // who computes which vertex in layer-wise inference
	sched   *schedule
	deg     []int64 // full-graph degree of every vertex (GCN normalisation), when the rank holds the graph
	// featDeg and evalDeg are the degrees of the rows the rank owns under
	// d.Book and ebook, for the degree exchanges of GCN on a partitioned
	// dataset (needDegrees); nil otherwise.
	featDeg, evalDeg *dense.Matrix
	grads            []float32
	// lc is the loader's communicator, a duplicate of c (collective.Dup):
	// sampling (grid) and the feature fetch (fcomm, store) communicate on
	// it and its splits, the compute loop on c (see loader.go).
	lc    collective.Comm
	slots []*slot // the minibatches' input rows in flight (loader.go); slot 0 also serves inference

	ep                epochState // the epoch that train ran, for summarize
	fingerprint       string
	evalChunks        [][]int // per layer: this rank's chunk boundaries, padded to the ranks' maximum count
	chunkCache        map[[2]int]*evalChunk
	chunkCached       int64   // entries and sources of the cached chunks
	valMask, testMask []bool  // of rows [d.RowLo, d.RowHi)
	dev               *device // the GPU step (Config.Device cuda), else nil
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
	t := &trainer{c: c, d: d, cfg: cfg, m: m}
	if t.opt, err = cfg.newOptimizer(); err != nil {
		return nil, err
	}
	// The loader's communicator counts under PhaseSetup until a phase is
	// set on it.
	restore := collective.SetPhase(c, PhaseSetup)
	t.lc, err = collective.Dup(c)
	restore()
	if err != nil {
		return nil, err
	}
	if d.Partitioned() && cfg.Shuffle == ShuffleGlobal {
		return nil, fmt.Errorf("train: --shuffle global deals every training vertex to any rank, but a rank of a partitioned dataset holds only its part's labels: use --shuffle local (the default)")
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
	restore = collective.SetPhase(c, PhaseSetup)
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
	defer collective.SetPhase(c, PhaseSetup)()
	if t.evalChunks, err = t.planChunks(); err != nil {
		return nil, err
	}
	t.valMask, t.testMask = mask(d.RowLo, d.RowHi, d.Split.Valid), mask(d.RowLo, d.RowHi, d.Split.Test)
	t.fingerprint = t.makeFingerprint()
	if err := t.openDevice(feat.CSR != nil); err != nil {
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
			return nil, fmt.Errorf("train: --topology 2d needs a square number of ranks, not %d", p)
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
			return nil, fmt.Errorf("train: a partitioned dataset's ranks hold only their parts' rows: use --topology 1.5d or 2d (or load it with a replicated topology)")
		}
		return sampling.New(kind, d.Adj, cfg.Fanouts, nil)
	}
	g := t.grid
	bounds, local := d.Offsets, d.Adj
	if !d.Partitioned() {
		bounds = spgemm.Bounds(d.NumNodes(), g.PR)
		local = sparse.RowRange(d.Adj, bounds[g.Row], bounds[g.Row+1])
	} else if len(bounds) != g.PR+1 || d.RowLo != bounds[g.Row] || d.RowHi != bounds[g.Row+1] {
		return nil, fmt.Errorf("train: the %s topology's %d grid rows must be the data's %d parts: with a partitioned dataset set the topology's replication (--c for 1.5d, √p for 2d) equal to the feature replication %d",
			cfg.Topology, g.PR, len(bounds)-1, cfg.Replication)
	}
	return sampling.NewBlock(kind, cfg.Topology, g, bounds, local, cfg.Fanouts)
}

// mask returns the membership of ids among the vertices [lo, hi), indexed
// from lo: ids outside the range are left out.
func mask(lo, hi int64, ids []int64) []bool {
	m := make([]bool, hi-lo)
	for _, g := range ids {
		if g >= lo && g < hi {
			m[g-lo] = true
		}
	}
	return m
}

// planChunks cuts the owned vertices, for every layer, into chunks whose
// gathered input (the distinct rows of the destinations and all their
// neighbours, times the layer's input width) stays within EvalMemory
// values; every rank then takes as many exchange rounds as the rank with
// the most chunks. It returns the boundaries: chunk k of layer l is
// owned[b[l][k]:b[l][k+1]].
func (t *trainer) planChunks() ([][]int, error) {
	owned := t.ebook.Owned(t.c.Rank())
	L := t.cfg.Model.Layers
	bounds := make([][]int, L)
	counts := make([]int64, L)
	seen := newStamps(t.d) // chunk number + 1 that last counted the vertex
	for l := range L {
		fin := int64(t.store.Cols())
		if l > 0 {
			fin = int64(t.m.Layers[l-1].OutDim())
		}
		seen.clear()
		b := []int{0}
		chunk := int32(1)
		var rows int64
		// fresh counts the rows vertex g adds to the current chunk and
		// marks them.
		fresh := func(g int64) (add int64) {
			if seen.swap(g, chunk) != chunk {
				add++
			}
			for _, v := range t.d.Row(g) {
				if seen.swap(v, chunk) != chunk {
					add++
				}
			}
			return add
		}
		for k, g := range owned {
			add := fresh(g)
			// A chunk's gathered inputs stay within EvalMemory values, on
			// one rank too (a hidden layer in one chunk reads the rank's
			// rows in place, but its block and the layer's intermediate
			// rows would grow with the graph).
			if rows > 0 && (rows+add)*fin > t.cfg.EvalMemory {
				b = append(b, k) // start a new chunk with g
				chunk++
				rows, add = 0, fresh(g)
			}
			rows += add
		}
		if len(owned) > 0 {
			b = append(b, len(owned))
		}
		bounds[l] = b
		counts[l] = int64(len(b) - 1)
	}
	if err := collective.AllreduceSlice(t.c, counts, collective.Max); err != nil {
		return nil, err
	}
	for l := range L {
		for int64(len(bounds[l])-1) < max(counts[l], 1) {
			bounds[l] = append(bounds[l], len(owned)) // empty rounds
		}
	}
	return bounds, nil
}

// stamps marks vertices with a small number: an array over the vertices
// when the rank holds the whole graph, a map over those stamped when it
// holds a part (no array of n).
type stamps struct {
	dense []int32
	m     map[int64]int32
}

func newStamps(d *Data) *stamps {
	if d.Partitioned() {
		return &stamps{m: map[int64]int32{}}
	}
	return &stamps{dense: make([]int32, d.NumNodes())}
}

func (s *stamps) clear() {
	clear(s.dense)
	clear(s.m)
}

// swap stamps v with x and returns its previous stamp (0 if none).
func (s *stamps) swap(v int64, x int32) int32 {
	if s.m != nil {
		old := s.m[v]
		s.m[v] = x
		return old
	}
	old := s.dense[v]
	s.dense[v] = x
	return old
}

// blocks turns a minibatch into the model's per-layer adjacencies,
// normalised for GCN; deg, when not nil, holds the degrees of the input
// rows mb.Input() (fetched on a partitioned dataset, see fetchDegrees).
func (t *trainer) blocks(mb *sampling.MiniBatch, deg []int64) []*sparse.CSR {
	out := make([]*sparse.CSR, len(mb.Blocks))
	for l, b := range mb.Blocks {
		out[l] = t.adjacency(b, deg)
	}
	return out
}

// adjacency returns block b's adjacency as the model takes it: normalised
// by the degrees for GCN. deg holds the degrees of b.Src or of a longer
// list that starts with it (a block's sources are a prefix of the
// minibatch's input rows, and its destinations a prefix of its sources);
// nil reads them from the whole graph's degrees, which a rank holding the
// whole graph keeps.
func (t *trainer) adjacency(b sampling.Block, deg []int64) *sparse.CSR {
	if t.cfg.Model.Kind != model.KindGCN || b.Adj.Values != nil {
		return b.Adj // LADIES blocks carry their propagation weights
	}
	if deg == nil {
		deg = make([]int64, len(b.Src))
		for j, g := range b.Src {
			deg[j] = t.deg[g]
		}
	}
	return model.GCNNorm(b.Adj, deg[:len(b.Dst)], deg[:len(b.Src)])
}

// needDegrees reports whether GCN normalisation needs degrees this rank
// does not hold: a partitioned dataset with a GCN model. Training blocks
// of LADIES carry their weights and need none.
func (t *trainer) needDegrees(training bool) bool {
	return t.d.Partitioned() && t.cfg.Model.Kind == model.KindGCN && !(training && t.cfg.Sampler == SamplerLADIES)
}

// ownDegrees returns the degrees of the vertices rank r owns under book
// (one float32 column, in local-id order: exact below 2²⁴), all of them
// among the rows d holds.
func ownDegrees(d *Data, book *partition.Book, r int) (*dense.Matrix, error) {
	owned := book.Owned(r)
	x := dense.New(len(owned), 1)
	for k, g := range owned {
		deg := int64(len(d.Row(g)))
		if deg >= 1<<24 {
			return nil, fmt.Errorf("train: vertex %d has degree %d, beyond what the degree exchange carries exactly (2^24)", g, deg)
		}
		x.Data[k] = float32(deg)
	}
	return x, nil
}

// fetchDegrees returns the degrees of ids, fetched from their owners under
// book over c (own rows from own, the owners' ownDegrees): one Alltoallv of
// a float32 per distinct remote vertex. It is collective over c.
func fetchDegrees(c collective.Comm, book *partition.Book, own *dense.Matrix, plan *alltoall.Plan, ids []int64) ([]int64, error) {
	if plan == nil {
		plan = alltoall.NewPlan(ids, book, c.Rank())
	}
	x, err := alltoall.ExchangeTo(c, nil, plan, book, own)
	if err != nil {
		return nil, err
	}
	deg := make([]int64, len(ids))
	for i := range deg {
		deg[i] = int64(x.Data[i])
	}
	return deg, nil
}

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
}

// train trains one epoch: every minibatch is sampled (Bulk at a time),
// its inputs fetched, and one optimizer step taken on the gradients summed
// over the ranks. The minibatches come from a source (loader.go): with
// Config.Overlap a loader goroutine prepares the next ones while one
// computes. The time the compute loop waits for a minibatch is counted as
// PhaseWait; the loader's sample and fetch times are its own.
func (t *trainer) train(epoch int, progress func(epoch, batch, batches int)) error {
	c, r := t.c, t.c.Rank()
	ep := epochState{before: collective.SnapshotOf(c), secs: map[string]float64{}}
	lap := func(phase string, t0 time.Time) time.Time {
		now := time.Now()
		ep.secs[phase] += now.Sub(t0).Seconds()
		return now
	}
	batches := t.sched.batches(t.cfg.Seed, epoch, r)
	ep.batches = len(batches)
	start := time.Now()
	if t.dev != nil {
		if err := t.dev.upload(t.m); err != nil {
			return err
		}
	}
	src := t.newSource(epoch, batches)
	for i := range batches {
		if progress != nil {
			progress(epoch, i, len(batches))
		}
		t0 := time.Now()
		b, err := src.next()
		if err != nil {
			src.stop()
			return err
		}
		t0 = lap(PhaseWait, t0)
		if t.dev != nil {
			err = t.deviceBackward(&ep, epoch, b.i, b.seeds, b.mb, b.x)
		} else {
			t.backward(&ep, epoch, b.i, b.seeds, b.mb, b.x)
		}
		src.release(b)
		if err != nil {
			src.stop()
			return err
		}
		t0 = lap(PhaseCompute, t0)
		if err := t.sumGrads(); err != nil {
			src.stop()
			return err
		}
		t0 = lap(PhaseGrad, t0)
		if t.dev != nil {
			err = t.dev.m.AdamStep(t.dev.adam)
		} else {
			t.opt.Step(t.m.Params())
		}
		lap(PhaseCompute, t0)
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
	ep.trainSecs = time.Since(start).Seconds()
	t.ep = ep
	return nil
}

// sumGrads sums the step's gradients over the ranks (one Allreduce of
// the flat vector, phase PhaseGrad): the host model's, the device's
// staged through host memory, or with GradComm nccl the device's in place
// (allreduceDevice).
func (t *trainer) sumGrads() error {
	if t.dev != nil && t.dev.nccl != nil {
		defer collective.SetPhase(t.c, PhaseGrad)()
		return t.allreduceDevice()
	}
	if t.dev != nil {
		t.grads = dense.Grow(t.grads, t.dev.m.NumParams())
		if err := t.dev.m.Grads(t.grads); err != nil {
			return err
		}
	} else {
		t.grads = t.m.FlattenGrads(t.grads[:0])
	}
	restore := collective.SetPhase(t.c, PhaseGrad)
	err := collective.AllreduceSlice(t.c, t.grads, collective.Sum)
	restore()
	if err != nil {
		return err
	}
	if t.dev != nil {
		return t.dev.m.SetGrads(t.grads)
	}
	t.m.SetGrads(t.grads)
	return nil
}

// backward computes the gradients of minibatch i of epoch (seeds, sampled
// as mb, input rows x) on this rank and adds its loss and accuracy to ep.
func (t *trainer) backward(ep *epochState, epoch, i int, seeds []int64, mb *sampling.MiniBatch, x inputs) {
	t.m.ZeroGrad()
	if len(seeds) == 0 {
		return
	}
	drops := rng.New(t.cfg.Seed, streamDropout, uint64(epoch), uint64(i), uint64(t.c.Rank()))
	var logits *dense.Matrix
	if x.csr != nil {
		logits = t.m.ForwardSparse(t.blocks(mb, x.deg), x.csr, true, drops)
	} else {
		logits = t.m.Forward(t.blocks(mb, x.deg), x.dense, true, drops)
	}
	labels := make([]int32, len(seeds))
	for k, g := range seeds {
		labels[k] = t.d.Label(g)
	}
	loss, dl := model.SoftmaxCrossEntropy(logits, labels)
	// dl is the gradient of this rank's mean loss; rescale it to this
	// rank's share of the global mean over the step's seeds, so that
	// summing over ranks gives the global gradient.
	scale := float32(float64(len(seeds)) / float64(t.sched.sizes[i]))
	for k := range dl.Data {
		dl.Data[k] *= scale
	}
	t.m.Backward(dl)
	ep.lossSum += loss * float64(len(seeds))
	ep.correct += float64(model.Correct(logits, labels))
	ep.seen += float64(len(seeds))
}

// summarize reduces the epoch that train ran (and the evaluation ev, if not
// nil) over the ranks: sums of loss and accuracy counts, maxima of times,
// sums of the epoch's bytes by phase and of the feature fetches.
func (t *trainer) summarize(epoch int, ev *evaluation, evalSecs float64) (EpochStats, error) {
	c, ep := t.c, &t.ep
	st := EpochStats{Epoch: epoch, Batches: ep.batches}
	if ev != nil {
		ep.secs[PhaseEval] += evalSecs
		st.Evaluated, st.ValAcc, st.TestAcc, st.ValLoss = true, ev.ValAcc, ev.TestAcc, ev.ValLoss
	}
	defer collective.SetPhase(c, PhaseMetrics)()
	lossSum, correct, seen := ep.lossSum, ep.correct, ep.seen
	if err := collective.AllreduceVars(c, collective.Sum, &lossSum, &correct, &seen); err != nil {
		return EpochStats{}, err
	}
	// Every rank's times in its own slot of one vector (a sum with zeros
	// elsewhere is exact): the slowest rank per phase, and the phases of
	// the rank whose epoch was the slowest.
	w := 1 + len(timePhases)
	all := make([]float64, w*c.Size())
	own := all[w*c.Rank():]
	own[0] = ep.trainSecs
	for k, p := range timePhases {
		own[k+1] = ep.secs[p]
	}
	if err := collective.AllreduceSlice(c, all, collective.Sum); err != nil {
		return EpochStats{}, err
	}
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
	st.WaitSeconds = st.PhaseSeconds[PhaseWait]
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

// flatWeights appends the model's parameters to dst (weightKeeper).
func (t *trainer) flatWeights(dst []float32) []float32 { return t.m.FlattenWeights(dst) }

// evaluate runs exact layer-wise full-neighbour inference over every vertex
// (infer) and returns the validation and test accuracy and the mean
// validation loss.
func (t *trainer) evaluate() (evaluation, error) {
	c := t.c
	defer collective.SetPhase(c, PhaseEval)()
	defer collective.SetPhase(t.lc, PhaseEval)() // the input layer's fetch
	owned := t.ebook.Owned(c.Rank())
	h, err := t.infer(owned)
	if err != nil {
		return evaluation{}, err
	}
	var valHits, val, testHits, test, valLoss float64
	for k, pred := range model.Argmax(h) {
		g := owned[k]
		hit := 0.0
		if pred == t.d.Label(g) {
			hit = 1
		}
		if t.valMask[g-t.d.RowLo] {
			valHits += hit
			val++
			valLoss += model.CrossEntropy(h.Data[k*h.Cols:(k+1)*h.Cols], t.d.Label(g))
		}
		if t.testMask[g-t.d.RowLo] {
			testHits += hit
			test++
		}
	}
	if err := collective.AllreduceVars(c, collective.Sum, &valHits, &val, &testHits, &test, &valLoss); err != nil {
		return evaluation{}, err
	}
	return evaluation{
		ValAcc:  valHits / max(val, 1),
		ValLoss: valLoss / max(val, 1),
		TestAcc: testHits / max(test, 1),
	}, nil
}

// infer computes the model's output rows of the vertices this rank owns in
// layer-wise inference (owned, ebook order): each rank computes a layer's
// output for its vertices, fetching the inputs of their neighbours from
// the owners (phase "eval"), chunk by chunk.
func (t *trainer) infer(owned []int64) (*dense.Matrix, error) {
	var h *dense.Matrix
	for l := range t.cfg.Model.Layers {
		var out *dense.Matrix
		b := t.evalChunks[l]
		for k := range len(b) - 1 {
			lo, hi := b[k], b[k+1]
			dst := owned[lo:hi]
			ch := t.chunk(owned, lo, hi)
			if err := t.normalize(ch); err != nil {
				return nil, err
			}
			x := h
			var err error
			buf := t.spare()
			switch {
			case l == 0: // the input rows, from the feature store
				if _, err = t.fetch(&buf.x, ch.src); err != nil {
					return nil, err
				}
				x = buf.x.dense
			case !ch.inPlace:
				if x, err = alltoall.ExchangeTo(t.c, buf.x.dense, ch.plan, t.ebook, h); err != nil {
					return nil, err
				}
				buf.x.dense = x
			}
			if len(dst) == 0 {
				continue
			}
			var y *dense.Matrix
			if l == 0 && t.store.Sparse() {
				y = t.m.ForwardLayerSparse(0, ch.adj, buf.x.csr)
			} else {
				y = t.m.ForwardLayer(l, ch.adj, x)
			}
			if out == nil {
				out = dense.New(len(owned), y.Cols)
			}
			copy(out.Data[lo*y.Cols:], y.Data)
		}
		if out == nil {
			out = dense.New(0, t.m.Layers[l].OutDim())
		}
		h = out
	}
	return h, nil
}

// identity reports whether src lists exactly the n rows of rank r under
// book, local ids 0..n−1, in order.
func identity(src []int64, book *partition.Book, r, n int) bool {
	if len(src) != n {
		return false
	}
	for i, g := range src {
		if q, lid := book.Locate(g); q != r || lid != int64(i) {
			return false
		}
	}
	return true
}

// normalize makes ch's adjacency from its block (adjacency). On a
// partitioned dataset GCN needs the degrees of the sources, which it
// fetches from their owners in every round, built or not, so that every
// rank makes the same collective calls whatever its chunks are.
func (t *trainer) normalize(ch *evalChunk) error {
	var deg []int64
	if t.evalDeg != nil {
		var err error
		if deg, err = fetchDegrees(t.c, t.ebook, t.evalDeg, ch.plan, ch.src); err != nil {
			return err
		}
	}
	if ch.adj == nil {
		ch.adj, ch.blk = t.adjacency(ch.blk, deg), sampling.Block{}
	}
	return nil
}

// evalChunk is one chunk of layer-wise inference: the destinations'
// full-neighbour adjacency (normalised for GCN) and the plan that gathers
// its sources. The same chunks recur in every evaluation and, where the
// boundaries agree, in every layer, so they are kept while their entries
// fit EvalMemory; beyond that (a graph whose blocks would double the
// rank's topology) they are built again each time.
type evalChunk struct {
	blk     sampling.Block // the destinations' full-neighbour block, until adj is made from it
	adj     *sparse.CSR
	src     []int64 // the sources' global ids
	plan    *alltoall.Plan
	inPlace bool // the sources are this rank's rows in order: a hidden layer reads them in place
}

// chunk returns the chunk owned[lo:hi], building it on first use.
func (t *trainer) chunk(owned []int64, lo, hi int) *evalChunk {
	key := [2]int{lo, hi}
	if ch, ok := t.chunkCache[key]; ok {
		return ch
	}
	blk := sampling.FullBlockRows(t.d.Adj, t.d.RowLo, owned[lo:hi])
	ch := &evalChunk{blk: blk, src: blk.Src}
	// One rank, one chunk: the sources are this rank's rows in order, so
	// nothing is exchanged.
	if ch.inPlace = identity(blk.Src, t.ebook, t.c.Rank(), len(owned)); !ch.inPlace || t.evalDeg != nil {
		ch.plan = alltoall.NewPlan(blk.Src, t.ebook, t.c.Rank())
	}
	if size := int64(len(blk.Adj.Indices) + len(blk.Src)); t.chunkCached+size <= t.cfg.EvalMemory {
		if t.chunkCache == nil {
			t.chunkCache = map[[2]int]*evalChunk{}
		}
		t.chunkCache[key] = ch
		t.chunkCached += size
	}
	return ch
}
