package train

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/model"
	"gnnmpi/pipe"
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

// FullDefaults returns the defaults of full-graph training with a deep
// model of kind (model.ConvGCN, ConvSAGE, ConvResGCN or ConvGCNII): 32
// layers of width 100, Adam, all of GNNPipe's staleness remedies on
// (snapshot every 23 epochs, as in the original).
func FullDefaults(kind string) FullConfig {
	return FullConfig{
		Common: Common{FeatureNorm: FeatureNormAuto, Epochs: 100, Optimizer: OptimizerAdam, LR: 0.01, WeightDecay: 5e-4,
			Seed: 1, EvalEvery: 1, Select: SelectAcc, CheckpointEvery: 10},
		Mode: ModePipe, Pipelines: 1, Chunks: 4, ChunkMethod: ChunkMetis,
		Model: model.DefaultDeep(kind), ShuffleChunks: true, ClearGrads: true, SnapshotEvery: 23,
	}
}

// pipeConfig returns the configuration of package pipe's trainer (with a
// zero Layout, which RunFull sets).
func (c *FullConfig) pipeConfig() pipe.Config {
	return pipe.Config{Model: c.Model, ShuffleChunks: c.ShuffleChunks, ClearGrads: c.ClearGrads, SnapshotEvery: c.SnapshotEvery,
		Optimizer: string(c.Optimizer), LR: c.LR, WeightDecay: c.WeightDecay, Momentum: c.Momentum, Seed: c.Seed, BLAS: c.BLAS}
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
		return fmt.Errorf("train: --mode graph processes each part whole; --chunks is for pipe and hybrid")
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
	// epoch by phase, plus pipe.PhaseEval per evaluation.
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
	s, res, err := newFullStepper(c, d, cfg, h.Log)
	if err != nil {
		return nil, err
	}
	rec, err := runLoop(s, &cfg.Common, h)
	if err != nil {
		return nil, err
	}
	res.Result = rec.result()
	// Evaluations do not run every epoch: the bytes per epoch are
	// training's (FullResult.Analytical has an evaluation's).
	delete(res.BytesPerEpoch, pipe.PhaseEval)
	res.NumParams = pipe.NumParams(s.model)
	defer collective.SetPhase(c, PhaseMetrics)()
	mem, _, err := collective.AllgatherSlice(c, []int64{s.tr.StateBytes(), peakRSS()})
	if err != nil {
		return nil, err
	}
	for r := range c.Size() {
		res.StateBytes = append(res.StateBytes, mem[2*r])
		res.PeakRSS = append(res.PeakRSS, mem[2*r+1])
	}
	return res, nil
}

// fullCommPhases are the phases of package pipe's training traffic, whose
// times and bytes every epoch reports (with those of pipe.PhaseEval).
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
	if d.Book.Parts != lay.Pipelines {
		return nil, nil, fmt.Errorf("train: the data has %d parts; %s mode on %d ranks needs %d (load with feature replication %d)", d.Book.Parts, cfg.Mode, p, lay.Pipelines, lay.Stages)
	}
	chunk, err := fullChunks(c, d, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	plan, err := pipe.NewPlan(d.Adj, d.Book.Part, chunk, lay.Pipelines, cfg.Chunks)
	if err != nil {
		return nil, nil, err
	}
	pc := cfg.pipeConfig()
	pc.Layout = lay
	pc.Model.In, pc.Model.Out = d.NumFeatures(), d.NumClasses
	n := d.NumNodes()
	tr, err := pipe.New(c, pc, pipe.Data{Plan: plan, Feat: d.Feat, FeatCSR: d.FeatCSR, RowNormalize: cfg.FeatureNorm.Resolve(d.NonNegative) == FeatureNormRow, Labels: d.Labels,
		Train: mask(0, n, d.Split.Train), Val: mask(0, n, d.Split.Valid), Test: mask(0, n, d.Split.Test)})
	if err != nil {
		return nil, nil, err
	}
	res := &FullResult{Layout: lay, HaloRows: plan.HaloRows(false)}
	vol := pipe.Analytical(plan, lay, pc.Model)
	res.Analytical = map[string]int64{pipe.PhaseEval: vol.Eval}
	for ph, b := range vol.Train {
		res.Analytical[ph] = b
	}
	log("%s mode: %d stages × %d pipelines, %d chunks per part; %d halo rows per layer; analytical bytes per epoch act %d act-grad %d halo %d grad %d",
		cfg.Mode, lay.Stages, lay.Pipelines, cfg.Chunks, res.HaloRows, vol.Train[pipe.PhaseAct], vol.Train[pipe.PhaseActGrad], vol.Train[pipe.PhaseHalo], vol.Train[pipe.PhaseGrad])
	s := &fullStepper{c: c, cfg: cfg, lay: lay, model: pc.Model, tr: tr, fp: fullFingerprint(cfg, lay, p, d, chunk)}
	return s, res, nil
}

// train runs one epoch of the pipe trainer (one optimizer step); there are
// no minibatches to report to progress.
func (s *fullStepper) train(epoch int, _ func(epoch, batch, batches int)) error {
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
	phases := append(slices.Clone(fullCommPhases), pipe.PhaseEval)
	restore := collective.SetPhase(c, PhaseMetrics)
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
	es.PhaseSeconds = map[string]float64{PhaseEval: times[1]}
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
		BestEpoch: rec.bestEpoch, BestVal: rec.bestVal, BestTest: rec.bestTest, History: rec.history}
	return saveFull(s.c, s.cfg.CheckpointDir, hdr, s.tr.State())
}

// resume restores the trainer from the checkpoint the manifest names
// (resumeFull).
func (s *fullStepper) resume() (resumed, error) {
	ck, err := resumeFull(s.c, s.cfg.CheckpointDir, s.fp, s.tr)
	if err != nil {
		return resumed{}, err
	}
	rec := record{history: ck.History, bestEpoch: ck.BestEpoch, bestVal: ck.BestVal, bestTest: ck.BestTest}
	return resumed{epoch: ck.Epoch, rec: rec, from: s.cfg.CheckpointDir}, nil
}

// fullChunks returns every vertex's chunk within its part: computed on rank
// 0 (METIS) and broadcast (onRoot).
func fullChunks(c collective.Comm, d *Data, cfg FullConfig, log func(string, ...any)) ([]int32, error) {
	defer collective.SetPhase(c, PhaseSetup)()
	n := d.NumNodes()
	chunk := make([]int32, n)
	if cfg.Chunks == 1 {
		return chunk, nil
	}
	err := onRoot(c, func() error {
		log("splitting each of %d parts into %d chunks (%s)", d.Book.Parts, cfg.Chunks, cfg.ChunkMethod)
		ch, err := graph.SubPartition(d.Adj, d.Book, cfg.Chunks, string(cfg.ChunkMethod), int(cfg.Seed))
		copy(chunk, ch)
		return err
	}, chunk)
	if err != nil {
		return nil, err
	}
	return chunk, nil
}

// peakRSS returns the process's peak resident set in bytes (VmHWM of
// /proc/self/status), or 0 where that is not available. Under mpirun a
// process is a rank.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
