package train

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/model"
	"gnnmpi/pipe"
)

// Full-graph training modes (FullConfig.Mode).
const (
	ModeGraph  = "graph"  // graph parallelism: one part per rank, halo exchange at every layer
	ModePipe   = "pipe"   // GNNPipe: one stage per rank, chunks through the pipeline
	ModeHybrid = "hybrid" // Pipelines pipelines over graph parts, halos between them
)

// FullConfig configures full-graph training of a deep model (Run's
// minibatch trainer is the other kind of training).
type FullConfig struct {
	Mode string
	// Pipelines is the number of pipelines (graph parts) of ModeHybrid;
	// ModeGraph uses one per rank and ModePipe one.
	Pipelines int
	// Chunks is the number of chunks each part is split into (1 in
	// ModeGraph), by ChunkMethod "metis" or "random".
	Chunks      int
	ChunkMethod string
	// Pipe carries the model, the staleness remedies, the optimizer and
	// the seed; its Layout is set from Mode.
	Pipe        pipe.Config
	FeatureNorm string // "row" or "none"
	Epochs      int
	EvalEvery   int
	Select      string

	// CheckpointDir, if not "", receives a checkpoint every
	// CheckpointEvery epochs and after the last: one file per rank and a
	// manifest (see saveFull). Resume continues from it.
	CheckpointDir   string
	CheckpointEvery int
	Resume          bool
}

// FullDefaults returns the defaults of full-graph training with a deep
// model of kind (model.ConvGCN, ConvSAGE, ConvResGCN or ConvGCNII): 32
// layers of width 100, Adam, all of GNNPipe's staleness remedies on
// (snapshot every 23 epochs, as in the original).
func FullDefaults(kind string) FullConfig {
	return FullConfig{
		Mode: ModePipe, Pipelines: 1, Chunks: 4, ChunkMethod: "metis",
		Pipe: pipe.Config{Model: model.DefaultDeep(kind), ShuffleChunks: true, ClearGrads: true, SnapshotEvery: 23,
			Optimizer: "adam", LR: 0.01, WeightDecay: 5e-4, Seed: 1},
		FeatureNorm: "row", Epochs: 100, EvalEvery: 1, Select: SelectAcc, CheckpointEvery: 10,
	}
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
	return pipe.Layout{}, fmt.Errorf("train: unknown mode %q (want %s, %s or %s)", c.Mode, ModeGraph, ModePipe, ModeHybrid)
}

// Validate reports the first invalid setting for p ranks.
func (c *FullConfig) Validate(p int) error {
	lay, err := c.Layout(p)
	if err != nil {
		return err
	}
	mc := c.Pipe.Model
	switch {
	case mc.Layers < lay.Stages:
		return fmt.Errorf("train: %d layers for %d pipeline stages; every stage needs a layer", mc.Layers, lay.Stages)
	case c.Chunks < 1:
		return fmt.Errorf("train: %d chunks < 1", c.Chunks)
	case c.Mode == ModeGraph && c.Chunks != 1:
		return fmt.Errorf("train: --mode graph processes each part whole; --chunks is for pipe and hybrid")
	case c.ChunkMethod != "metis" && c.ChunkMethod != "random":
		return fmt.Errorf("train: chunk partition %q (want metis or random)", c.ChunkMethod)
	case c.Pipe.SnapshotEvery < 0:
		return fmt.Errorf("train: snapshot every %d epochs < 0", c.Pipe.SnapshotEvery)
	case c.Pipe.Optimizer != "adam" && c.Pipe.Optimizer != "sgd":
		return fmt.Errorf("train: unknown optimizer %q (want adam or sgd)", c.Pipe.Optimizer)
	case !(c.Pipe.LR > 0):
		return fmt.Errorf("train: learning rate %g must be positive", c.Pipe.LR)
	case c.FeatureNorm != "row" && c.FeatureNorm != "none":
		return fmt.Errorf("train: unknown feature normalisation %q (want row or none)", c.FeatureNorm)
	case c.Epochs < 0 || c.EvalEvery < 0:
		return fmt.Errorf("train: %d epochs, eval every %d; want both ≥ 0", c.Epochs, c.EvalEvery)
	case c.Select != SelectAcc && c.Select != SelectLoss:
		return fmt.Errorf("train: unknown model selection %q (want %s or %s)", c.Select, SelectAcc, SelectLoss)
	case c.CheckpointDir != "" && c.CheckpointEvery < 1:
		return fmt.Errorf("train: checkpoint every %d < 1", c.CheckpointEvery)
	case c.Resume && c.CheckpointDir == "":
		return fmt.Errorf("train: resume needs a checkpoint directory")
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
	// epoch by phase, plus "eval" per evaluation.
	Analytical map[string]int64
	// HaloRows is pipe.Plan.HaloRows of the training chunks.
	HaloRows int64
	// StateBytes is every rank's trainer state (pipe.Trainer.StateBytes)
	// and PeakRSS every rank's peak resident memory (VmHWM; 0 where
	// unknown).
	StateBytes, PeakRSS []int64
}

// RunFull trains cfg.Pipe.Model on the whole graph of d, graph parallel,
// pipelined or hybrid, d having been loaded with the feature replication
// FullStages (the ranks of a pipeline hold its part's rows). Every epoch
// is one optimizer step. With cfg.CheckpointDir every rank checkpoints its
// state (pipe.State); with cfg.Resume the run continues from the last
// checkpoint with exactly the losses of an uninterrupted run.
//
// RunFull is collective over c.
func RunFull(c collective.Comm, d *Data, cfg FullConfig, h Hooks) (*FullResult, error) {
	p := c.Size()
	if err := cfg.Validate(p); err != nil {
		return nil, err
	}
	if h.Log == nil {
		h.Log = func(string, ...any) {}
	}
	lay, _ := cfg.Layout(p)
	if d.Book.Parts != lay.Pipelines {
		return nil, fmt.Errorf("train: the data has %d parts; %s mode on %d ranks needs %d (load with feature replication %d)", d.Book.Parts, cfg.Mode, p, lay.Pipelines, lay.Stages)
	}
	chunk, err := fullChunks(c, d, cfg, h.Log)
	if err != nil {
		return nil, err
	}
	plan, err := pipe.NewPlan(d.Adj, d.Book.Part, chunk, lay.Pipelines, cfg.Chunks)
	if err != nil {
		return nil, err
	}
	pc := cfg.Pipe
	pc.Layout = lay
	pc.Model.In, pc.Model.Out = d.Feat.Cols, d.NumClasses
	n := d.NumNodes()
	tr, err := pipe.New(c, pc, pipe.Data{Plan: plan, Feat: d.Feat, RowNormalize: cfg.FeatureNorm == "row", Labels: d.Labels,
		Train: mask(n, d.Split.Train), Val: mask(n, d.Split.Valid), Test: mask(n, d.Split.Test)})
	if err != nil {
		return nil, err
	}
	res := &FullResult{Layout: lay, HaloRows: plan.HaloRows(false)}
	vol := pipe.Analytical(plan, lay, pc.Model)
	res.Analytical = map[string]int64{pipe.PhaseEval: vol.Eval}
	for ph, b := range vol.Train {
		res.Analytical[ph] = b
	}
	h.Log("%s mode: %d stages × %d pipelines, %d chunks per part; %d halo rows per layer; analytical bytes per epoch act %d grad %d halo %d allreduce %d",
		cfg.Mode, lay.Stages, lay.Pipelines, cfg.Chunks, res.HaloRows, vol.Train[pipe.PhaseAct], vol.Train[pipe.PhaseGrad], vol.Train[pipe.PhaseHalo], vol.Train[pipe.PhaseAllreduce])

	fp := fullFingerprint(cfg, lay, p, d, chunk)
	start := 1
	if cfg.Resume {
		ck, err := resumeFull(c, cfg.CheckpointDir, fp, tr)
		if err != nil {
			return nil, err
		}
		res.Epochs, res.BestEpoch, res.BestValAcc, res.TestAcc = ck.History, ck.BestEpoch, ck.BestVal, ck.BestTest
		start = ck.Epoch + 1
		h.Log("resumed from %s at epoch %d", cfg.CheckpointDir, ck.Epoch)
	}

	phases := []string{pipe.PhaseAct, pipe.PhaseGrad, pipe.PhaseHalo, pipe.PhaseAllreduce, pipe.PhaseEval}
	for epoch := start; epoch <= cfg.Epochs; epoch++ {
		before := collective.SnapshotOf(c)
		t0 := time.Now()
		st, err := tr.Epoch(epoch)
		if err != nil {
			return nil, err
		}
		trainSecs := time.Since(t0).Seconds()
		if math.IsNaN(st.Loss) || math.IsInf(st.Loss, 0) {
			return nil, fmt.Errorf("train: epoch %d: loss is %v (diverged; lower --lr?)", epoch, st.Loss)
		}
		es := EpochStats{Epoch: epoch, Loss: st.Loss, TrainAcc: st.TrainAcc, Batches: cfg.Chunks}
		evalSecs := 0.0
		if cfg.EvalEvery > 0 && (epoch%cfg.EvalEvery == 0 || epoch == cfg.Epochs) {
			t1 := time.Now()
			ev, err := tr.Evaluate()
			if err != nil {
				return nil, err
			}
			evalSecs = time.Since(t1).Seconds()
			es.Evaluated, es.ValAcc, es.ValLoss, es.TestAcc = true, ev.ValAcc, ev.ValLoss, ev.TestAcc
		}
		// Reductions: slowest rank's times, bytes by phase summed.
		delta := collective.SnapshotOf(c).Sub(before)
		restore := collective.SetPhase(c, PhaseMetrics)
		times := []float64{trainSecs, evalSecs}
		for _, ph := range phases[:4] {
			times = append(times, delta.Phase(ph).Seconds)
		}
		err = collective.AllreduceSlice(c, times, collective.Max)
		bytes := make([]int64, len(phases))
		for i, ph := range phases {
			bytes[i] = delta.Phase(ph).SentBytes
		}
		if err == nil {
			err = collective.AllreduceSlice(c, bytes, collective.Sum)
		}
		restore()
		if err != nil {
			return nil, err
		}
		es.Seconds = times[0]
		es.PhaseSeconds = map[string]float64{PhaseEval: times[1]}
		for i, ph := range phases[:4] {
			es.PhaseSeconds[ph] = times[2+i]
		}
		es.Bytes = map[string]int64{}
		for i, ph := range phases {
			es.Bytes[ph] = bytes[i]
		}
		res.Epochs = append(res.Epochs, es)
		if es.Evaluated && better(cfg.Select, es, res.Epochs, res.BestEpoch) {
			res.BestEpoch, res.BestValAcc, res.TestAcc = epoch, es.ValAcc, es.TestAcc
		}
		if cfg.CheckpointDir != "" && (epoch%cfg.CheckpointEvery == 0 || epoch == cfg.Epochs) {
			r := c.Rank()
			hdr := rankHeader{Fingerprint: fp, Epoch: epoch, Rank: r, Ranks: p, Stage: lay.Stage(r), Pipeline: lay.Pipeline(r),
				BestEpoch: res.BestEpoch, BestVal: res.BestValAcc, BestTest: res.TestAcc, History: res.Epochs}
			if err := saveFull(c, cfg.CheckpointDir, hdr, tr.State()); err != nil {
				return nil, err
			}
		}
		if h.Epoch != nil {
			if err := h.Epoch(es); err != nil {
				return nil, err
			}
		}
	}
	res.NumParams = pipe.NumParams(pc.Model)
	res.BytesPerEpoch = map[string]int64{}
	if len(res.Epochs) > 0 {
		s := make([]float64, len(res.Epochs))
		for i, e := range res.Epochs {
			s[i] = e.Seconds
			for ph, b := range e.Bytes {
				if ph != PhaseEval {
					res.BytesPerEpoch[ph] += b
				}
			}
		}
		for ph := range res.BytesPerEpoch {
			res.BytesPerEpoch[ph] /= int64(len(res.Epochs))
		}
		res.MedianEpochS = median(s)
	}
	defer collective.SetPhase(c, PhaseMetrics)()
	mem, _, err := collective.AllgatherSlice(c, []int64{tr.StateBytes(), peakRSS()})
	if err != nil {
		return nil, err
	}
	for r := range p {
		res.StateBytes = append(res.StateBytes, mem[2*r])
		res.PeakRSS = append(res.PeakRSS, mem[2*r+1])
	}
	return res, nil
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
		ch, err := graph.SubPartition(d.Adj, d.Book, cfg.Chunks, cfg.ChunkMethod, int(cfg.Pipe.Seed))
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
