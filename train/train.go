package train

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
)

// Phases of the epoch time (EpochStats.PhaseSeconds) and of the byte
// counts (EpochStats.Bytes; collective.SetPhase).
const (
	PhaseSample  = "sample"  // neighbour sampling (replicated topology: none; 1.5D: frontier gathers and sampled rows)
	PhaseSpGEMM  = "spgemm"  // the 1.5D topology's products P = Q·A (spgemm.Phase); time counts under sample
	PhaseFetch   = "fetch"   // feature all-to-all of the minibatch inputs
	PhaseCompute = "compute" // forward, backward, optimizer step
	PhaseGrad    = "grad"    // gradient Allreduce
	PhaseEval    = "eval"    // layer-wise full-neighbour inference
	PhaseMetrics = "metrics" // per-epoch reductions of losses, times and bytes
	PhaseSetup   = "setup"   // loading, partitioning, resuming
)

var timePhases = []string{PhaseSample, PhaseFetch, PhaseCompute, PhaseGrad, PhaseEval}

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
	Bytes        map[string]int64   `json:"bytes"`    // bytes sent by phase, summed over ranks
	Batches      int                `json:"batches"`  // minibatches per rank
	// Feature fetches of the training minibatches, summed over ranks: rows
	// asked for, rows served by a rank's cache, and distinct rows fetched
	// from other ranks (alltoall.Counts).
	FetchRows  int64 `json:"fetch_rows"`
	CacheHits  int64 `json:"cache_hits"`
	RemoteRows int64 `json:"remote_rows"`
}

// Result is a finished run's summary.
type Result struct {
	Epochs        []EpochStats     // every epoch, including those before a resume
	BestEpoch     int              // epoch with the best validation accuracy (0: none evaluated)
	BestValAcc    float64          //
	TestAcc       float64          // test accuracy at BestEpoch
	MedianEpochS  float64          // median of Epochs[i].Seconds
	BytesPerEpoch map[string]int64 // mean bytes per epoch by phase, summed over ranks
	// RemoteRowsPerEpoch is the mean of Epochs[i].RemoteRows.
	RemoteRowsPerEpoch float64
	Stores             []StoreStats // every rank's feature store
	NumParams          int
	Best               []float32 // parameters at BestEpoch
}

// Hooks let the caller report progress; any may be nil. They run on every
// rank; print on rank 0 only.
type Hooks struct {
	Epoch func(EpochStats) error
	Batch func(epoch, batch, batches int)
	Log   func(format string, args ...any)
}

// Run trains a model on d with cfg: data-parallel minibatch SGD, every rank
// sampling and fetching its own minibatches, gradients averaged with
// Allreduce, evaluation by exact layer-wise inference.
//
// Run is collective over c: every rank must call it with the same cfg and
// partition book.
func Run(c collective.Comm, d *Data, cfg Config, h Hooks) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h.Log == nil {
		h.Log = func(string, ...any) {}
	}
	t, err := newTrainer(c, d, cfg)
	if err != nil {
		return nil, err
	}
	start := 1
	if cfg.Resume {
		if start, err = t.resume(); err != nil {
			return nil, err
		}
		h.Log("resumed from %s at epoch %d", t.ckptPath(), start-1)
	}
	for epoch := start; epoch <= cfg.Epochs; epoch++ {
		st, err := t.epoch(epoch, h.Batch)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
			// A diverged run is an error, not a silent NaN curve.
			return nil, fmt.Errorf("train: epoch %d: loss is %v (diverged; lower --lr?)", epoch, st.Loss)
		}
		t.history = append(t.history, st)
		if st.Evaluated && t.better(st) {
			t.bestEpoch, t.bestVal, t.bestTest = epoch, st.ValAcc, st.TestAcc
			t.best = t.m.FlattenWeights(t.best[:0])
		}
		if cfg.CheckpointDir != "" && (epoch%cfg.CheckpointEvery == 0 || epoch == cfg.Epochs) {
			if err := t.save(epoch); err != nil {
				return nil, err
			}
		}
		if h.Epoch != nil {
			if err := h.Epoch(st); err != nil {
				return nil, err
			}
		}
	}
	if err := t.free(); err != nil {
		return nil, err
	}
	return t.result(), nil
}

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
	deg     []int64 // full-graph degree of every vertex (GCN normalisation)
	grads   []float32
	xbuf    *dense.Matrix // reused input rows of minibatches and inference chunks

	history             []EpochStats
	bestEpoch           int
	bestVal, bestTest   float64
	best                []float32
	fingerprint         string
	evalChunks          [][]int // per layer: this rank's chunk boundaries, padded to the ranks' maximum count
	chunkCache          map[[2]int]*evalChunk
	trainMask, valMask  []bool
	testMask, ownedMask []bool
}

func newTrainer(c collective.Comm, d *Data, cfg Config) (*trainer, error) {
	mc := cfg.Model
	mc.In, mc.Out = d.Feat.Cols, d.NumClasses
	m, err := model.New(mc, rng.New(cfg.Seed, streamInit), cfg.BLAS)
	if err != nil {
		return nil, err
	}
	// The trainer's own view of d: the features move into the store.
	dd := *d
	d = &dd
	feat := d.Feat
	if cfg.FeatureNorm == "row" {
		feat = dense.RowNormalized(d.Feat) // a copy: d.Feat may be read-only mapped memory
	}
	d.Feat = nil
	t := &trainer{c: c, d: d, cfg: cfg, m: m}
	switch cfg.Optimizer {
	case "sgd":
		t.opt = model.NewSGD(cfg.LR, cfg.Momentum, cfg.WeightDecay)
	default:
		t.opt = model.NewAdam(cfg.LR, cfg.WeightDecay)
	}
	if cfg.Topology == Topology15D {
		p := c.Size()
		if p%cfg.C != 0 {
			return nil, fmt.Errorf("train: replication factor %d does not divide the %d ranks", cfg.C, p)
		}
		restore := collective.SetPhase(c, PhaseSetup)
		t.grid, err = collective.NewGrid(c, p/cfg.C, cfg.C)
		restore()
		if err != nil {
			return nil, err
		}
	}
	if t.sampler, err = sampling.New(cfg.Sampler, d.Adj, cfg.Fanouts, t.grid); err != nil {
		return nil, err
	}
	n := d.NumNodes()
	t.deg = make([]int64, n)
	for i := range n {
		t.deg[i] = d.Adj.Degree(i)
	}
	r := c.Rank()
	if t.fcomm, err = t.featureComm(); err != nil {
		return nil, err
	}
	t.owned = ownedTrain(d, r, cfg.Replication)
	if t.ebook, err = evalBook(d.Book, cfg.Replication); err != nil {
		return nil, err
	}
	restore := collective.SetPhase(c, PhaseSetup)
	counts64, _, err := collective.AllgatherSlice(c, []int64{int64(len(t.owned))})
	restore()
	if err != nil {
		return nil, err
	}
	counts := make([]int, len(counts64))
	for i, v := range counts64 {
		counts[i] = int(v)
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
	t.trainMask, t.valMask, t.testMask = mask(n, d.Split.Train), mask(n, d.Split.Valid), mask(n, d.Split.Test)
	t.fingerprint = t.makeFingerprint()
	return t, nil
}

func mask(n int64, ids []int64) []bool {
	m := make([]bool, n)
	for _, g := range ids {
		m[g] = true
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
	seen := make([]int32, t.d.NumNodes()) // chunk number + 1 that last counted the vertex
	for l := range L {
		fin := int64(t.store.Cols())
		if l > 0 {
			fin = int64(t.m.Layers[l-1].OutDim())
		}
		clear(seen)
		b := []int{0}
		chunk := int32(1)
		var rows int64
		// fresh counts the rows vertex g adds to the current chunk and
		// marks them.
		fresh := func(g int64) (add int64) {
			for _, v := range append([]int64{g}, t.d.Adj.Row(g)...) {
				if seen[v] != chunk {
					seen[v] = chunk
					add++
				}
			}
			return add
		}
		for k, g := range owned {
			add := fresh(g)
			// On one rank a hidden layer reads the rank's rows in place
			// (see evaluate), so nothing is gathered and one chunk does;
			// the input layer gathers from the feature store.
			if rows > 0 && (rows+add)*fin > t.cfg.EvalMemory && (t.c.Size() > 1 || l == 0) {
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

// blocks turns a minibatch into the model's per-layer adjacencies,
// normalised for GCN.
func (t *trainer) blocks(mb *sampling.MiniBatch) []*sparse.CSR {
	out := make([]*sparse.CSR, len(mb.Blocks))
	for l, b := range mb.Blocks {
		out[l] = t.adjacency(b)
	}
	return out
}

func (t *trainer) adjacency(b sampling.Block) *sparse.CSR {
	if t.cfg.Model.Kind != "gcn" || b.Adj.Values != nil {
		return b.Adj // LADIES blocks carry their propagation weights
	}
	dd, ds := make([]int64, len(b.Dst)), make([]int64, len(b.Src))
	for i, g := range b.Dst {
		dd[i] = t.deg[g]
	}
	for j, g := range b.Src {
		ds[j] = t.deg[g]
	}
	return model.GCNNorm(b.Adj, dd, ds)
}

// epoch trains one epoch and, when due, evaluates.
func (t *trainer) epoch(epoch int, progress func(epoch, batch, batches int)) (EpochStats, error) {
	c, r := t.c, t.c.Rank()
	before := collective.SnapshotOf(c)
	secs := map[string]float64{}
	lap := func(phase string, t0 time.Time) time.Time {
		now := time.Now()
		secs[phase] += now.Sub(t0).Seconds()
		return now
	}
	var lossSum, correct, seen float64
	var fetched alltoall.Counts
	batches := t.sched.batches(t.cfg.Seed, epoch, r)
	var sampled []*sampling.MiniBatch
	start := time.Now()
	for i, seeds := range batches {
		if progress != nil {
			progress(epoch, i, len(batches))
		}
		t0 := time.Now()
		if i%t.cfg.Bulk == 0 { // sample the next Bulk minibatches together
			bulk := batches[i:min(i+t.cfg.Bulk, len(batches))]
			var err error
			if sampled, err = t.sampler.Sample(bulk, sampleKeys(t.cfg.Seed, epoch, i, len(bulk), r)); err != nil {
				return EpochStats{}, err
			}
		}
		mb := sampled[i%t.cfg.Bulk]
		t0 = lap(PhaseSample, t0)
		restore := collective.SetPhase(c, PhaseFetch)
		x, cnt, err := t.store.FetchTo(t.xbuf, mb.Input())
		restore()
		if err != nil {
			return EpochStats{}, err
		}
		fetched = fetched.Add(cnt)
		t.xbuf = x
		t0 = lap(PhaseFetch, t0)
		t.m.ZeroGrad()
		if len(seeds) > 0 {
			logits := t.m.Forward(t.blocks(mb), x, true, rng.New(t.cfg.Seed, streamDropout, uint64(epoch), uint64(i), uint64(r)))
			labels := make([]int32, len(seeds))
			for k, g := range seeds {
				labels[k] = t.d.Labels[g]
			}
			loss, dl := model.SoftmaxCrossEntropy(logits, labels)
			// dl is the gradient of this rank's mean loss; rescale it to
			// this rank's share of the global mean over the step's seeds,
			// so that summing over ranks gives the global gradient.
			scale := float32(float64(len(seeds)) / float64(t.sched.sizes[i]))
			for k := range dl.Data {
				dl.Data[k] *= scale
			}
			t.m.Backward(dl)
			lossSum += loss * float64(len(seeds))
			correct += float64(model.Correct(logits, labels))
			seen += float64(len(seeds))
		}
		t0 = lap(PhaseCompute, t0)
		t.grads = t.m.FlattenGrads(t.grads[:0])
		restore = collective.SetPhase(c, PhaseGrad)
		err = collective.AllreduceSlice(c, t.grads, collective.Sum)
		restore()
		if err != nil {
			return EpochStats{}, err
		}
		t.m.SetGrads(t.grads)
		t0 = lap(PhaseGrad, t0)
		t.opt.Step(t.m.Params())
		lap(PhaseCompute, t0)
	}
	trainSecs := time.Since(start).Seconds()
	st := EpochStats{Epoch: epoch, Batches: len(batches)}
	if t.cfg.EvalEvery > 0 && (epoch%t.cfg.EvalEvery == 0 || epoch == t.cfg.Epochs) {
		t0 := time.Now()
		acc, valLoss, err := t.evaluate()
		if err != nil {
			return EpochStats{}, err
		}
		lap(PhaseEval, t0)
		st.Evaluated, st.ValAcc, st.TestAcc, st.ValLoss = true, acc[1], acc[2], valLoss
	}
	// Reductions: sums of loss and accuracy counts, maxima of times, sums
	// of this epoch's bytes by phase.
	defer collective.SetPhase(c, PhaseMetrics)()
	sums := []float64{lossSum, correct, seen}
	if err := collective.AllreduceSlice(c, sums, collective.Sum); err != nil {
		return EpochStats{}, err
	}
	times := []float64{trainSecs}
	for _, p := range timePhases {
		times = append(times, secs[p])
	}
	if err := collective.AllreduceSlice(c, times, collective.Max); err != nil {
		return EpochStats{}, err
	}
	delta := collective.SnapshotOf(c).Sub(before)
	bytes := make([]int64, len(bytePhases), len(bytePhases)+3)
	for k, p := range bytePhases {
		bytes[k] = delta.Phase(p).SentBytes
	}
	bytes = append(bytes, fetched.Rows, fetched.Hits, fetched.Remote)
	if err := collective.AllreduceSlice(c, bytes, collective.Sum); err != nil {
		return EpochStats{}, err
	}
	st.Loss = sums[0] / max(sums[2], 1)
	st.TrainAcc = sums[1] / max(sums[2], 1)
	st.Seconds = times[0]
	st.PhaseSeconds = map[string]float64{}
	for k, p := range timePhases {
		st.PhaseSeconds[p] = times[k+1]
	}
	st.Bytes = map[string]int64{}
	for k, p := range bytePhases {
		st.Bytes[p] = bytes[k]
	}
	k := len(bytePhases)
	st.FetchRows, st.CacheHits, st.RemoteRows = bytes[k], bytes[k+1], bytes[k+2]
	return st, nil
}

// better reports whether the evaluated epoch st beats the best so far by
// the selection rule: a higher validation accuracy, or the same accuracy
// with a lower validation loss (validation sets are small, so accuracies
// often tie); or, with SelectLoss, a lower validation loss, or the same
// loss with a higher accuracy.
func (t *trainer) better(st EpochStats) bool {
	return better(t.cfg.Select, st, t.history, t.bestEpoch)
}

// better reports whether the evaluated epoch st beats history[bestEpoch−1]
// (1-based; 0: nothing evaluated yet) under the selection rule sel.
func better(sel string, st EpochStats, history []EpochStats, bestEpoch int) bool {
	if bestEpoch == 0 {
		return true
	}
	best := history[bestEpoch-1]
	if sel == SelectLoss {
		return st.ValLoss < best.ValLoss || st.ValLoss == best.ValLoss && st.ValAcc > best.ValAcc
	}
	return st.ValAcc > best.ValAcc || st.ValAcc == best.ValAcc && st.ValLoss < best.ValLoss
}

// evaluate runs exact layer-wise full-neighbour inference over every vertex
// and returns the train, validation and test accuracy and the mean
// validation loss. Each rank computes
// the layer's output for the vertices it owns, fetching the inputs of their
// neighbours from the owners (phase "eval"), chunk by chunk.
func (t *trainer) evaluate() ([3]float64, float64, error) {
	c, r := t.c, t.c.Rank()
	defer collective.SetPhase(c, PhaseEval)()
	owned := t.ebook.Owned(r)
	var h *dense.Matrix
	for l := range t.cfg.Model.Layers {
		var out *dense.Matrix
		b := t.evalChunks[l]
		for k := range len(b) - 1 {
			lo, hi := b[k], b[k+1]
			dst := owned[lo:hi]
			ch := t.chunk(owned, lo, hi)
			x := h
			var err error
			switch {
			case l == 0: // the input rows, from the feature store
				if x, _, err = t.store.FetchTo(t.xbuf, ch.src); err != nil {
					return [3]float64{}, 0, err
				}
				t.xbuf = x
			case !ch.inPlace:
				if x, err = alltoall.ExchangeTo(c, t.xbuf, ch.plan, t.ebook, h); err != nil {
					return [3]float64{}, 0, err
				}
				t.xbuf = x
			}
			if len(dst) == 0 {
				continue
			}
			y := t.m.ForwardLayer(l, ch.adj, x)
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
	// counts: hits and totals of train, validation, test; then the
	// validation loss sum.
	var counts [7]float64
	for k, pred := range model.Argmax(h) {
		g := owned[k]
		hit := 0.0
		if pred == t.d.Labels[g] {
			hit = 1
		}
		for s, m := range [][]bool{t.trainMask, t.valMask, t.testMask} {
			if m[g] {
				counts[2*s] += hit
				counts[2*s+1]++
			}
		}
		if t.valMask[g] {
			counts[6] += model.CrossEntropy(h.Data[k*h.Cols:(k+1)*h.Cols], t.d.Labels[g])
		}
	}
	if err := collective.AllreduceSlice(c, counts[:], collective.Sum); err != nil {
		return [3]float64{}, 0, err
	}
	var acc [3]float64
	for s := range acc {
		acc[s] = counts[2*s] / max(counts[2*s+1], 1)
	}
	return acc, counts[6] / max(counts[3], 1), nil
}

// identity reports whether src lists exactly the n local rows 0..n−1 in
// order.
func identity(src []int64, local []int64, n int) bool {
	if len(src) != n {
		return false
	}
	for i, g := range src {
		if local[g] != int64(i) {
			return false
		}
	}
	return true
}

// evalChunk is one chunk of layer-wise inference: the destinations'
// full-neighbour adjacency (normalised for GCN) and the plan that gathers
// its sources. The same chunks recur in every evaluation and, where the
// boundaries agree, in every layer, so they are built once.
type evalChunk struct {
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
	blk := sampling.FullBlock(t.d.Adj, owned[lo:hi])
	ch := &evalChunk{adj: t.adjacency(blk), src: blk.Src}
	// One rank, one chunk: the sources are this rank's rows in order, so
	// nothing is exchanged.
	if ch.inPlace = identity(blk.Src, t.ebook.Local, len(owned)); !ch.inPlace {
		ch.plan = alltoall.NewPlan(blk.Src, t.ebook, t.c.Rank())
	}
	if t.chunkCache == nil {
		t.chunkCache = map[[2]int]*evalChunk{}
	}
	t.chunkCache[key] = ch
	return ch
}

func (t *trainer) ckptPath() string { return filepath.Join(t.cfg.CheckpointDir, CheckpointFile) }

// makeFingerprint describes everything that must match for a resumed run to
// continue the same loss curve.
func (t *trainer) makeFingerprint() string {
	cfg := t.cfg
	cfg.Epochs, cfg.EvalEvery, cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Resume, cfg.EvalMemory = 0, 0, "", 0, false, 0
	b, _ := json.Marshal(struct {
		Config Config
		Ranks  int
		dataID
	}{cfg, t.c.Size(), dataIDOf(t.d)})
	return string(b)
}

func int32Bytes(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return b
}

// save writes the checkpoint after epoch (rank 0; every rank holds the same
// model and optimizer state).
func (t *trainer) save(epoch int) error {
	if t.c.Rank() != 0 {
		return nil
	}
	ck := &checkpoint{
		Header: ckptHeader{Fingerprint: t.fingerprint, Epoch: epoch, Seed: t.cfg.Seed, Ranks: t.c.Size(),
			BestEpoch: t.bestEpoch, BestVal: t.bestVal, BestTest: t.bestTest, History: t.history},
		Weights: t.m.FlattenWeights(nil),
		Opt:     t.opt.State(),
		Best:    t.best,
	}
	if !finite(ck.Weights) {
		return fmt.Errorf("train: epoch %d: parameters are not finite; not checkpointing", epoch)
	}
	b, err := ck.encode()
	if err != nil {
		return err
	}
	return writeAtomic(t.ckptPath(), b)
}

// resume reads the checkpoint on rank 0, broadcasts it, restores the state
// and returns the first epoch to run.
func (t *trainer) resume() (int, error) {
	c := t.c
	defer collective.SetPhase(c, PhaseSetup)()
	var data []byte
	var rerr error
	if c.Rank() == 0 {
		ck, err := readCheckpoint(t.ckptPath())
		if err == nil {
			data, err = ck.encode()
		}
		rerr = err
	}
	n := []int64{int64(len(data))}
	if rerr != nil {
		n[0] = -1
	}
	if err := collective.BcastSlice(c, n, 0); err != nil {
		return 0, err
	}
	if n[0] < 0 {
		if rerr == nil {
			rerr = fmt.Errorf("train: rank 0 could not read the checkpoint %s", t.ckptPath())
		}
		return 0, rerr
	}
	if c.Rank() != 0 {
		data = make([]byte, n[0])
	}
	if err := collective.BcastSlice(c, data, 0); err != nil {
		return 0, err
	}
	ck, err := decodeCheckpoint(data, t.ckptPath())
	if err != nil {
		return 0, err
	}
	if ck.Header.Fingerprint != t.fingerprint {
		return 0, fmt.Errorf("train: checkpoint %s was written by a run with other settings; resume needs the same model, data, partition, seed and rank count\n  checkpoint: %s\n  this run:   %s", t.ckptPath(), ck.Header.Fingerprint, t.fingerprint)
	}
	if len(ck.Weights) != t.m.NumParams() {
		return 0, fmt.Errorf("train: checkpoint %s has %d parameters, the model %d", t.ckptPath(), len(ck.Weights), t.m.NumParams())
	}
	t.m.SetWeights(ck.Weights)
	if err := t.opt.SetState(ck.Opt); err != nil {
		return 0, fmt.Errorf("train: checkpoint %s: %w", t.ckptPath(), err)
	}
	h := ck.Header
	t.history = slices.Clone(h.History)
	t.bestEpoch, t.bestVal, t.bestTest, t.best = h.BestEpoch, h.BestVal, h.BestTest, slices.Clone(ck.Best)
	return h.Epoch + 1, nil
}

func (t *trainer) result() *Result {
	res := &Result{Epochs: t.history, BestEpoch: t.bestEpoch, BestValAcc: t.bestVal, TestAcc: t.bestTest,
		NumParams: t.m.NumParams(), Best: t.best, BytesPerEpoch: map[string]int64{}, Stores: t.stores}
	if len(t.history) > 0 {
		s := make([]float64, len(t.history))
		for i, e := range t.history {
			s[i] = e.Seconds
			for p, b := range e.Bytes {
				res.BytesPerEpoch[p] += b
			}
			res.RemoteRowsPerEpoch += float64(e.RemoteRows) / float64(len(t.history))
		}
		res.MedianEpochS = median(s)
		for p := range res.BytesPerEpoch {
			res.BytesPerEpoch[p] /= int64(len(t.history))
		}
	}
	return res
}

// median returns the median of s (the mean of the middle two for an even
// length), sorting s.
func median(s []float64) float64 {
	sort.Float64s(s)
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
