package train

import (
	"fmt"
	"hash/crc32"
	"slices"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/pipe"
	"gnnmpi/sparse"
)

// FullConfig configures full-graph training of a deep model (RunFull; Run's
// minibatch trainer is the other kind of training). It must be the same on
// every rank.
type FullConfig struct {
	Common
	// Mode is ModeGraph, ModePipe or ModeHybrid.
	Mode Mode
	// Pipelines is the number of pipelines (graph parts) of ModeHybrid;
	// ModeGraph uses one per rank and ModePipe one.
	Pipelines int
	// Chunks is the number of chunks each part is split into (1 in
	// ModeGraph), by ChunkMetis or ChunkRandom.
	Chunks      int
	ChunkMethod ChunkMethod
	// Model is the deep model; RunFull sets its In and Out from the data.
	Model model.DeepConfig
	// GNNPipe's staleness remedies (pipe.Config): a new chunk order every
	// epoch, dropping historical gradients left at an epoch's end, and a
	// snapshot of the historical embeddings every SnapshotEvery epochs
	// (0: none).
	ShuffleChunks, ClearGrads bool
	SnapshotEvery             int
}

// pipeConfig returns the configuration of package pipe's trainer (with a
// zero Layout, which RunFull sets).
func (c *FullConfig) pipeConfig() pipe.Config {
	return pipe.Config{Model: c.Model, ShuffleChunks: c.ShuffleChunks, ClearGrads: c.ClearGrads, SnapshotEvery: c.SnapshotEvery,
		Optimizer: c.Optimizer, LR: c.LR, WeightDecay: c.WeightDecay, Momentum: c.Momentum, Seed: c.Seed, BLAS: c.BLAS}
}

// Layout returns the layout of the mode on p ranks.
func (c *FullConfig) Layout(p int) (pipe.Layout, error) {
	switch c.Mode {
	case ModeGraph:
		return pipe.Layout{Stages: 1, Pipelines: p}, nil
	case ModePipe:
		return pipe.Layout{Stages: p, Pipelines: 1}, nil
	case ModeHybrid:
		if c.Pipelines < 1 || p%c.Pipelines != 0 {
			return pipe.Layout{}, fmt.Errorf("train: %d pipelines do not divide the %d ranks", c.Pipelines, p)
		}
		return pipe.Layout{Stages: p / c.Pipelines, Pipelines: c.Pipelines}, nil
	}
	return pipe.Layout{}, fmt.Errorf("train: unknown mode %q for full-graph training (want %s, %s or %s)", c.Mode, ModeGraph, ModePipe, ModeHybrid)
}

// Validate reports the first invalid setting for p ranks.
func (c *FullConfig) Validate(p int) error {
	lay, err := c.Layout(p)
	if err != nil {
		return err
	}
	if err := c.Common.Validate(); err != nil {
		return err
	}
	mc := c.Model
	switch {
	case mc.Layers < lay.Stages:
		return fmt.Errorf("train: %d layers for %d pipeline stages; every stage needs a layer", mc.Layers, lay.Stages)
	case c.Chunks < 1:
		return fmt.Errorf("train: %d chunks < 1", c.Chunks)
	case c.Mode == ModeGraph && c.Chunks != 1:
		return settingErrorf("train: %s %s processes each part whole; %s is for %s and %s", SettingMode, ModeGraph, SettingChunks, ModePipe, ModeHybrid)
	case c.ChunkMethod != ChunkMetis && c.ChunkMethod != ChunkRandom:
		return errorOf(ParseChunkMethod(string(c.ChunkMethod)))
	case c.SnapshotEvery < 0:
		return fmt.Errorf("train: snapshot every %d epochs < 0", c.SnapshotEvery)
	}
	probe := mc
	probe.In, probe.Out = max(probe.In, 1), max(probe.Out, 1)
	return probe.Validate()
}

// FullStages returns the number of ranks that hold each graph part (the
// feature replication of Load) in the mode on p ranks.
func FullStages(cfg FullConfig, p int) (int, error) {
	lay, err := cfg.Layout(p)
	return lay.Stages, err
}

// FullResult adds to Result what full-graph runs report.
type FullResult struct {
	Result
	Layout pipe.Layout
	// Analytical is the analytical traffic (pipe.Analytical), bytes per
	// epoch by phase, plus metrics.PhaseEval per evaluation.
	Analytical map[string]int64
	// HaloRows is pipe.Plan.HaloRows of the training chunks.
	HaloRows int64
	// StateBytes is every rank's trainer state (pipe.Trainer.StateBytes);
	// Result.PeakRSS has every rank's peak resident memory.
	StateBytes []int64
}

// RunFull trains cfg.Model on the whole graph of d, graph parallel,
// pipelined or hybrid, d having been loaded with the feature replication
// FullStages (the ranks of a pipeline hold its part's rows). Every epoch
// is one optimizer step. With cfg.CheckpointDir every rank checkpoints its
// state (pipe.State); with cfg.Resume the run continues from the last
// checkpoint with exactly the losses of an uninterrupted run. The epoch
// loop (resume, evaluation and checkpoint cadence, best epoch) is the one
// Run shares.
//
// RunFull is collective over c.
func RunFull(c collective.Comm, d *Data, cfg FullConfig, h Hooks) (*FullResult, error) {
	if err := cfg.Validate(c.Size()); err != nil {
		return nil, err
	}
	if h.Log == nil {
		h.Log = func(string, ...any) {}
	}
	unlock, err := lockCheckpointDir(c, &cfg.Common, h.Log)
	if err != nil {
		return nil, err
	}
	defer unlock()
	d.widenHalf()
	s, res, err := newFullStepper(c, d, cfg, h.Log)
	if err != nil {
		return nil, err
	}
	rec, err := runLoop(s, c, &cfg.Common, h)
	if err != nil {
		return nil, err
	}
	res.Result = rec.result()
	// Evaluations do not run every epoch: the bytes per epoch are
	// training's (FullResult.Analytical has an evaluation's).
	delete(res.BytesPerEpoch, metrics.PhaseEval)
	res.NumParams = pipe.NumParams(s.model)
	defer collective.SetPhase(c, metrics.PhaseMetrics)()
	mem, _, err := collective.AllgatherSlice(c, []int64{s.tr.StateBytes(), memlimit.PeakRSS(), memlimit.PeakAnon(), memlimit.PeakLiveHeap()})
	if err != nil {
		return nil, err
	}
	for r := range c.Size() {
		res.StateBytes = append(res.StateBytes, mem[4*r])
		res.PeakRSS = append(res.PeakRSS, mem[4*r+1])
		res.PeakAnon = append(res.PeakAnon, mem[4*r+2])
		res.PeakLiveHeap = append(res.PeakLiveHeap, mem[4*r+3])
	}
	return res, nil
}

// fullCommPhases are the phases of package pipe's training traffic, whose
// times and bytes every epoch reports (with those of metrics.PhaseEval).
var fullCommPhases = pipe.TrainPhases()

// fullStepper is the full-graph trainer as the epoch loop drives it: one
// rank's pipe.Trainer, with the epoch that train ran kept for summarize.
type fullStepper struct {
	c     collective.Comm
	cfg   FullConfig
	lay   pipe.Layout
	model model.DeepConfig // cfg.Model with the data's input and output widths
	tr    *pipe.Trainer
	fp    string // fullFingerprint

	before    collective.Snapshot
	trainSecs float64
	stats     pipe.Stats
}

var _ stepper = (*fullStepper)(nil)

// newFullStepper splits every part into chunks, plans the layout's
// exchanges and builds this rank's pipe.Trainer; it returns the stepper and
// a result that holds the plan's analytical traffic.
//
// newFullStepper is collective over c.
func newFullStepper(c collective.Comm, d *Data, cfg FullConfig, log func(string, ...any)) (*fullStepper, *FullResult, error) {
	p := c.Size()
	lay, _ := cfg.Layout(p)
	parts := len(d.Offsets) - 1
	if d.Offsets == nil {
		parts = d.Book.Parts
	}
	if parts != lay.Pipelines {
		return nil, nil, fmt.Errorf("train: the data has %d parts; %s mode on %d ranks needs %d (load with feature replication %d)", parts, cfg.Mode, p, lay.Pipelines, lay.Stages)
	}
	plan, chunks, err := fullPlan(c, d, cfg, lay, log)
	if err != nil {
		return nil, nil, err
	}
	pc := cfg.pipeConfig()
	pc.Layout = lay
	pc.Model.In, pc.Model.Out = d.NumFeatures(), d.NumClasses
	if err := checkFullFootprint(c.Rank(), pc, int64(len(plan.Gids))); err != nil {
		return nil, nil, err
	}
	pd := partData(d, plan)
	pd.Feat, pd.FeatCSR, pd.RowNormalize = d.Feat, d.FeatCSR, cfg.FeatureNorm.Resolve(d.NonNegative) == FeatureNormRow
	tr, err := pipe.New(c, pc, pd)
	if err != nil {
		return nil, nil, err
	}
	res := &FullResult{Layout: lay, HaloRows: plan.HaloRows(false)}
	vol := pipe.Analytical(plan, lay, pc.Model)
	res.Analytical = map[string]int64{metrics.PhaseEval: vol.Eval}
	for ph, b := range vol.Train {
		res.Analytical[ph] = b
	}
	log("%s mode: %d stages × %d pipelines, %d chunks per part; %d halo rows per layer; analytical bytes per epoch act %d act-grad %d halo %d grad %d",
		cfg.Mode, lay.Stages, lay.Pipelines, cfg.Chunks, res.HaloRows, vol.Train[metrics.PhaseAct], vol.Train[metrics.PhaseActGrad], vol.Train[metrics.PhaseHalo], vol.Train[metrics.PhaseGrad])
	s := &fullStepper{c: c, cfg: cfg, lay: lay, model: pc.Model, tr: tr, fp: fullFingerprint(cfg, lay, p, d, chunks)}
	return s, res, nil
}

// fullPlan returns the plan of this rank's part and the CRC-32C of the
// chunks for the fingerprint. On the replicated topology it splits every
// part (fullChunks) and derives the part's plan from the plan of the whole
// graph; the CRC is that of every vertex's chunk. On a partitioned dataset
// (d.Offsets) it splits the part from its own rows (partChunks) and builds
// the plan from them (pipe.NewBlockPlan), no rank holding the whole graph;
// the CRC is that of every pipeline's chunks' CRCs, in pipeline order.
//
// fullPlan is collective over c; it fails on every rank if it fails on one.
func fullPlan(c collective.Comm, d *Data, cfg FullConfig, lay pipe.Layout, log func(string, ...any)) (*pipe.PartPlan, uint32, error) {
	k := lay.Pipeline(c.Rank())
	if d.Offsets == nil {
		chunk, err := fullChunks(c, d, cfg, log)
		if err != nil {
			return nil, 0, err
		}
		plan, err := pipe.NewPlan(d.Adj, d.Book.Part, chunk, lay.Pipelines, cfg.Chunks)
		if err != nil {
			return nil, 0, err
		}
		return plan.PartPlan(k), crc32.Checksum(int32Bytes(chunk), castagnoli), nil
	}
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	var chunk []int32
	err := checkRows(d, k)
	if err == nil {
		if c.Rank() == 0 && cfg.Chunks > 1 {
			log("splitting each of %d parts into %d chunks (%s) on its own ranks", lay.Pipelines, cfg.Chunks, cfg.ChunkMethod)
		}
		chunk, err = partChunks(d, k, cfg)
	}
	if err := collective.Agree(c, err); err != nil {
		return nil, 0, err
	}
	plan, err := pipe.NewBlockPlan(c, lay, d.Offsets, d.Adj, chunk, cfg.Chunks)
	if err != nil {
		return nil, 0, err
	}
	crcs, _, err := collective.AllgatherSlice(c, []int64{int64(crc32.Checksum(int32Bytes(chunk), castagnoli))})
	if err != nil {
		return nil, 0, err
	}
	var perPart []int64
	for q := range lay.Pipelines {
		perPart = append(perPart, crcs[q*lay.Stages])
	}
	return plan, crc32.Checksum(int64Bytes(perPart), castagnoli), nil
}

// checkRows checks that a partitioned dataset's rows on this rank are those
// of run part k.
func checkRows(d *Data, k int) error {
	o := d.Offsets
	rows := d.RowHi - d.RowLo
	switch {
	case d.RowLo != o[k] || d.RowHi != o[k+1]:
		return fmt.Errorf("train: %s: this rank holds rows [%d, %d), but its pipeline's part %d is [%d, %d)", d.Name, d.RowLo, d.RowHi, k, o[k], o[k+1])
	case d.Adj.NRows != rows || int64(len(d.Labels)) != rows || int64(d.OwnRows()) != rows:
		return fmt.Errorf("train: %s: part %d has %d rows but %d adjacency rows, %d labels and %d feature rows", d.Name, k, rows, d.Adj.NRows, len(d.Labels), d.OwnRows())
	}
	for _, set := range [][]int64{d.Split.Train, d.Split.Valid, d.Split.Test} {
		for _, v := range set {
			if v < d.RowLo || v >= d.RowHi {
				return fmt.Errorf("train: %s: split %s lists vertex %d outside the rank's rows [%d, %d)", d.Name, d.SplitName, v, d.RowLo, d.RowHi)
			}
		}
	}
	return nil
}

// partData returns the labels and split marks of plan's part in part-local
// order (pipe.Data without features): d's own on a partitioned dataset,
// gathered from the replicated ones otherwise.
func partData(d *Data, plan *pipe.PartPlan) pipe.Data {
	nk := len(plan.Gids)
	pd := pipe.Data{Plan: plan, Train: make([]bool, nk), Val: make([]bool, nk), Test: make([]bool, nk)}
	lid := func(v int64) int64 { return v - d.RowLo }
	if d.Offsets == nil {
		lid = d.Book.LocalID
		pd.Labels = make([]int32, nk)
		for i, v := range plan.Gids {
			pd.Labels[i] = d.Labels[v]
		}
	} else {
		pd.Labels = d.Labels
	}
	for i, set := range [][]int64{d.Split.Train, d.Split.Valid, d.Split.Test} {
		m := [][]bool{pd.Train, pd.Val, pd.Test}[i]
		for _, v := range set {
			if d.Offsets != nil || int(d.Book.Part[v]) == plan.Part {
				m[lid(v)] = true
			}
		}
	}
	return pd
}

// train runs one epoch of the pipe trainer (one optimizer step); there are
// no minibatches to report to progress.
func (s *fullStepper) train(epoch int, _ stepRun) error {
	s.before = collective.SnapshotOf(s.c)
	t0 := time.Now()
	st, err := s.tr.Epoch(epoch)
	if err != nil {
		return err
	}
	s.stats, s.trainSecs = st, time.Since(t0).Seconds()
	return nil
}

// evaluate runs the pipe trainer's exact inference.
func (s *fullStepper) evaluate() (evaluation, error) {
	ev, err := s.tr.Evaluate()
	return evaluation{ValAcc: ev.ValAcc, ValLoss: ev.ValLoss, TestAcc: ev.TestAcc}, err
}

// summarize reduces the epoch over the ranks: the slowest rank's times,
// bytes by phase summed (the loss and accuracy are already global).
func (s *fullStepper) summarize(epoch int, ev *evaluation, evalSecs float64) (EpochStats, error) {
	c := s.c
	es := EpochStats{Epoch: epoch, Loss: s.stats.Loss, TrainAcc: s.stats.TrainAcc, Batches: s.cfg.Chunks}
	if ev != nil {
		es.Evaluated, es.ValAcc, es.ValLoss, es.TestAcc = true, ev.ValAcc, ev.ValLoss, ev.TestAcc
	}
	delta := collective.SnapshotOf(c).Sub(s.before)
	phases := append(slices.Clone(fullCommPhases), metrics.PhaseEval)
	restore := collective.SetPhase(c, metrics.PhaseMetrics)
	times := []float64{s.trainSecs, evalSecs}
	for _, ph := range fullCommPhases {
		times = append(times, delta.Phase(ph).Seconds)
	}
	err := collective.AllreduceSlice(c, times, collective.Max)
	bytes := make([]int64, len(phases))
	for i, ph := range phases {
		bytes[i] = delta.Phase(ph).SentBytes
	}
	if err == nil {
		err = collective.AllreduceSlice(c, bytes, collective.Sum)
	}
	restore()
	if err != nil {
		return EpochStats{}, err
	}
	es.Seconds = times[0]
	es.PhaseSeconds = map[string]float64{metrics.PhaseEval: times[1]}
	for i, ph := range fullCommPhases {
		es.PhaseSeconds[ph] = times[2+i]
	}
	es.Bytes = map[string]int64{}
	for i, ph := range phases {
		es.Bytes[ph] = bytes[i]
	}
	return es, nil
}

// save writes every rank's file of the checkpoint after epoch and the
// manifest (saveFull).
func (s *fullStepper) save(epoch int, rec *record) error {
	r := s.c.Rank()
	hdr := rankHeader{Fingerprint: s.fp, Epoch: epoch, Rank: r, Ranks: s.c.Size(), Stage: s.lay.Stage(r), Pipeline: s.lay.Pipeline(r),
		ckptRecord: ckptRecordOf(rec)}
	return saveFull(s.c, s.cfg.CheckpointDir, hdr, s.tr.State())
}

// resume restores the trainer from the checkpoint the manifest names
// (resumeFull).
func (s *fullStepper) resume() (resumed, error) {
	ck, err := resumeFull(s.c, s.cfg.CheckpointDir, s.fp, s.tr)
	if err != nil {
		return resumed{}, err
	}
	return resumed{epoch: ck.Epoch, rec: ck.record(), from: s.cfg.CheckpointDir}, nil
}

// fullChunks returns every vertex's chunk within its part: computed on rank
// 0 (METIS) and broadcast (onRoot).
func fullChunks(c collective.Comm, d *Data, cfg FullConfig, log func(string, ...any)) ([]int32, error) {
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	n := d.NumNodes()
	chunk := make([]int32, n)
	if cfg.Chunks == 1 {
		return chunk, nil
	}
	err := onRoot(c, func() error {
		log("splitting each of %d parts into %d chunks (%s)", d.Book.Parts, cfg.Chunks, cfg.ChunkMethod)
		ch, err := graph.SubPartition(d.Adj, d.Book, cfg.Chunks, partition.Method(cfg.ChunkMethod), int(cfg.Seed))
		copy(chunk, ch)
		return err
	}, chunk)
	if err != nil {
		return nil, err
	}
	return chunk, nil
}

// genStreamSubRandom is graph.SubPartition's stream of random chunks:
// partChunks deals a part's vertices as it does.
const genStreamSubRandom = 102

// partChunks splits part k of a partitioned dataset, whose rows d holds,
// into cfg.Chunks chunks from those rows alone and returns the chunk of
// each: what graph.SubPartition gives the part on the whole graph. METIS
// splits the part's induced subgraph (its rows, the columns in the part);
// random deals the part's vertices in graph.SubPartition's order.
func partChunks(d *Data, k int, cfg FullConfig) ([]int32, error) {
	rows := d.RowHi - d.RowLo
	n := cfg.Chunks
	if n == 1 {
		return make([]int32, rows), nil
	}
	if rows < int64(n) {
		return nil, fmt.Errorf("train: %s: part %d has %d vertices, fewer than %d chunks", d.Name, k, rows, n)
	}
	if cfg.ChunkMethod == ChunkRandom {
		chunk := make([]int32, rows)
		for i, j := range rng.New(cfg.Seed, genStreamSubRandom, uint64(k)).Perm(int(rows)) {
			chunk[j] = int32(i % n)
		}
		return chunk, nil
	}
	sub := &sparse.CSR{NRows: rows, NCols: rows, Indptr: make([]int64, rows+1)}
	for i := range rows {
		for _, j := range d.Adj.Row(i) {
			if j >= d.RowLo && j < d.RowHi {
				sub.Indices = append(sub.Indices, j-d.RowLo)
			}
		}
		sub.Indptr[i+1] = int64(len(sub.Indices))
	}
	chunk, err := graph.SubPartition(sub, partition.Block(rows, 1), n, partition.Method(cfg.ChunkMethod), int(cfg.Seed))
	if err != nil {
		return nil, fmt.Errorf("train: %s: part %d: %w", d.Name, k, err)
	}
	return chunk, nil
}
