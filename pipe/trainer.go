package pipe

import (
	"errors"
	"fmt"
	"slices"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

// Stream ids under Config.Seed.
const (
	streamWeights = 201 // + layer: one stream per layer, so any stage split gives the same weights
	streamDropout = 202
	streamOrder   = 203
)

// Config configures a Trainer. It must be the same on every rank.
type Config struct {
	Model  model.DeepConfig
	Layout Layout

	// The staleness remedies of GNNPipe, each switchable.
	//
	// ShuffleChunks draws a new chunk order every epoch (the same on every
	// stage of a pipeline); otherwise chunks run in index order.
	ShuffleChunks bool
	// ClearGrads drops, at the end of each epoch, the historical
	// gradients that arrived after their chunk's backward (gradients of
	// stale rows); otherwise they are added in the next epoch.
	ClearGrads bool
	// SnapshotEvery R > 0 takes a snapshot of the historical embeddings
	// at the end of every R-th epoch and restores them from it at the
	// start of every later epoch; 0 disables it.
	SnapshotEvery int

	Optimizer   model.OptimizerKind // model.OptimizerAdam or model.OptimizerSGD
	LR          float32
	WeightDecay float32
	Momentum    float32

	Seed uint64
	BLAS blas.Float32Level3 `json:"-"`
}

// Data is one rank's input: the plan of its part (Plan.PartPlan or
// NewBlockPlan), and the labels, split masks and feature rows of the part's
// vertices, all in part-local order (PartPlan.Gids).
type Data struct {
	Plan *PartPlan
	Feat *dense.Matrix // part-local rows of the rank's part; only read
	// FeatCSR are the same rows as sparse rows (Values nil: a pattern),
	// given instead of Feat; only read. The input layer then multiplies
	// them sparsely whatever their density.
	FeatCSR *sparse.Matrix[float32]
	Labels  []int32 // the part's vertices'
	// RowNormalize scales every feature row to sum 1 (dense.RowNormalized)
	// on the trainer's own copy: sparse features are normalised in place
	// of their nonzeros, and the trainer then keeps no dense copy at all.
	RowNormalize bool
	// Train, Val and Test mark the split of the part's vertices.
	Train, Val, Test []bool
}

// Stats is one epoch's training summary, the same on every rank.
type Stats struct {
	Loss     float64 // mean cross-entropy over the training vertices
	TrainAcc float64 // accuracy on the training vertices in training mode
}

// Eval is the result of exact inference, the same on every rank.
type Eval struct {
	ValAcc, ValLoss, TestAcc float64
}

// Trainer runs full-graph training of a deep model on one rank of a Layout:
// graph parallel, GNNPipe pipelined or hybrid.
type Trainer struct {
	c, pipeC, stageC collective.Comm
	cfg              Config
	d                Data
	k, s             int // pipeline (part) and stage
	nk, chunks       int // the part's vertices and chunks
	lo, hi           int // conv layers [lo, hi)
	first, last      bool
	hasIn            bool // holds the input layer (stage 0; every stage for GCNII)
	w                int

	in       *model.Linear
	xs       *sparse.Matrix[float32] // the features as sparse rows, when sparse enough (input.go)
	convs    []model.Conv            // layers lo..hi−1
	out      *model.Linear
	params   []*model.Param // this rank's own stage parameters (reduced over stageC)
	inParams []*model.Param // GCNII's replicated input layer (reduced over c)
	opt      model.Optimizer

	blocks      []*Block // training chunks of the rank's part
	whole       *Block   // the whole part (evaluation)
	served      [][][]int32
	servedWhole [][][]int32
	sched       []Step
	numTrain    int64

	// hist, histGrad and snap are, per conv layer, the historical
	// embeddings (part rows × w), their gradients and snapshot. With one
	// chunk per part nothing is historical: every row a layer reads was
	// written earlier in the same pass, and every gradient row is consumed
	// in the same layer's backward. The layers then share rows and rowGrads
	// instead, and hist, histGrad and snap stay empty.
	hist, histGrad, snap []*dense.Matrix
	rows, rowGrads       *dense.Matrix // one chunk per part: part rows × w each
	flights              []*flight     // per chunk
	flat                 []float32     // the packed weight gradients of reduce
	xbuf                 []float32     // the conv layers' input rows (convInput)
	halo                 []float32     // staging rows of haloForward (send) and haloBackward (receive)
	haloIDs              []int32       // the served rows of the last halo exchange (haloRows)
}

// flight is a chunk in flight through the stage: its layers' caches and the
// rows that enter and leave. The rows are released after the chunk's
// backward (but the receive buffers u and dy); the layers' caches stay, to
// be overwritten by the next epoch's forward.
type flight struct {
	in    *model.Linear
	xs    *sparse.Matrix[float32] // the chunk's dropped-out input rows (sparse input layer)
	convs []model.Conv
	out   *model.Linear
	h0    *dense.Matrix // ReLU output of the input layer (nil without one)
	u     *dense.Matrix // stage input rows (received, or h0)
	y     *dense.Matrix // stage output rows
	dy    *dense.Matrix // gradient of y (received, or from the loss)
	dx    *dense.Matrix // gradient of u, sent back
	dlog  *dense.Matrix
}

// New builds rank c.Rank()'s trainer: its stage's layers (weights drawn
// per layer from Seed, so they do not depend on the layout), its chunks'
// blocks, historical embeddings, and the pipeline and stage communicators.
//
// New is collective over c (it splits c).
func New(c collective.Comm, cfg Config, d Data) (*Trainer, error) {
	if err := validate(c, cfg, d); err != nil {
		return nil, err
	}
	L, mc := cfg.Layout, cfg.Model
	t := &Trainer{c: c, cfg: cfg, d: d, k: L.Pipeline(c.Rank()), s: L.Stage(c.Rank()), w: mc.Hidden}
	t.lo, t.hi = Layers(mc.Layers, L.Stages, t.s)
	t.first, t.last = t.s == 0, t.s == L.Stages-1
	t.hasIn = t.first || mc.Kind == model.ConvGCNII
	t.nk, t.chunks = len(d.Plan.Gids), d.Plan.Chunks
	nk := t.nk
	rows, cols := -1, -1
	switch {
	case d.FeatCSR != nil:
		rows, cols = int(d.FeatCSR.NRows), int(d.FeatCSR.NCols)
	case d.Feat != nil:
		rows, cols = d.Feat.Rows, d.Feat.Cols
	}
	if t.hasIn && (rows != nk || cols != mc.In) {
		return nil, fmt.Errorf("pipe: rank %d needs the %d×%d features of part %d", c.Rank(), nk, mc.In, t.k)
	}
	var err error
	if t.pipeC, err = c.Split(t.k, t.s); err != nil {
		return nil, err
	}
	if t.stageC, err = c.Split(t.s, t.k); err != nil {
		return nil, err
	}
	t.initFeatures()
	if err := t.initLayers(); err != nil {
		return nil, err
	}
	if err := t.initChunks(); err != nil {
		return nil, err
	}
	return t, nil
}

// validate checks cfg and d against c before New builds anything.
func validate(c collective.Comm, cfg Config, d Data) error {
	L, mc := cfg.Layout, cfg.Model
	switch {
	case L.Stages < 1 || L.Pipelines < 1 || L.Ranks() != c.Size():
		return fmt.Errorf("pipe: %d stages × %d pipelines for %d ranks", L.Stages, L.Pipelines, c.Size())
	case d.Plan == nil || d.Plan.Parts != L.Pipelines:
		return fmt.Errorf("pipe: the plan must have one part per pipeline (%d)", L.Pipelines)
	case d.Plan.Part != L.Pipeline(c.Rank()):
		return fmt.Errorf("pipe: rank %d is in pipeline %d but has the plan of part %d", c.Rank(), L.Pipeline(c.Rank()), d.Plan.Part)
	case len(d.Labels) != len(d.Plan.Gids) || len(d.Train) != len(d.Plan.Gids) || len(d.Val) != len(d.Plan.Gids) || len(d.Test) != len(d.Plan.Gids):
		return fmt.Errorf("pipe: rank %d has %d labels and %d, %d and %d split marks for the %d vertices of part %d",
			c.Rank(), len(d.Labels), len(d.Train), len(d.Val), len(d.Test), len(d.Plan.Gids), d.Plan.Part)
	case mc.Layers < L.Stages:
		return fmt.Errorf("pipe: %d layers for %d stages; every stage needs a layer", mc.Layers, L.Stages)
	case cfg.SnapshotEvery < 0:
		return fmt.Errorf("pipe: snapshot every %d epochs", cfg.SnapshotEvery)
	}
	return mc.Validate()
}

// initFeatures keeps the input layer's features sparse when they are given
// sparse or are sparse enough, and row-normalises them (on a copy) when
// asked to. Sparse rows always get values (dropout scales them).
func (t *Trainer) initFeatures() {
	switch {
	case t.hasIn && t.d.FeatCSR != nil:
		t.xs = withValues(t.d.FeatCSR)
		if t.d.RowNormalize {
			t.xs = sparse.RowNormalized(t.d.FeatCSR)
		}
		t.d.Feat, t.d.FeatCSR = nil, nil // every read goes to t.xs
	case t.hasIn && density(t.d.Feat) < sparseDensity:
		t.xs = sparse.FromDense(t.d.Feat.Rows, t.d.Feat.Cols, t.d.Feat.Data)
		if t.d.RowNormalize {
			t.xs = sparse.RowNormalized(t.xs)
		}
		t.d.Feat = nil // every read goes to t.xs
	case t.hasIn && t.d.RowNormalize:
		t.d.Feat = dense.RowNormalized(t.d.Feat)
	}
}

// initLayers builds the stage's layers, its parameter lists and the
// optimizer.
func (t *Trainer) initLayers() error {
	cfg, mc := t.cfg, t.cfg.Model
	if t.hasIn {
		t.in = model.NewLinear(mc.In, mc.Hidden, rng.New(cfg.Seed, streamWeights, 0), cfg.BLAS)
		if mc.Kind == model.ConvGCNII {
			t.inParams = t.in.Params()
		} else {
			t.params = append(t.params, t.in.Params()...)
		}
	}
	for l := t.lo; l < t.hi; l++ {
		cv := model.NewConv(mc, l, rng.New(cfg.Seed, streamWeights, uint64(l)), cfg.BLAS)
		t.convs = append(t.convs, cv)
		t.params = append(t.params, cv.Params()...)
	}
	if t.last {
		t.out = model.NewLinear(mc.Hidden, mc.Out, rng.New(cfg.Seed, streamWeights, uint64(mc.Layers+1)), cfg.BLAS)
		t.params = append(t.params, t.out.Params()...)
	}
	var err error
	if t.opt, err = model.NewOptimizer(cfg.Optimizer, cfg.LR, cfg.Momentum, cfg.WeightDecay); err != nil {
		return fmt.Errorf("pipe: %w", err)
	}
	return nil
}

// initChunks builds the part's blocks (training chunks and the whole
// part), the rows it serves other pipelines, the stage's schedule and the
// historical embeddings (or the shared rows with one chunk per part), and
// counts the training vertices of all parts (an Allreduce over the stage).
// The trainer keeps nothing of the plan but what it derives here.
func (t *Trainer) initChunks() error {
	p, L := t.d.Plan, t.cfg.Layout
	t.d.Plan = nil
	normalize := t.cfg.Model.Kind != model.ConvSAGE
	t.blocks = p.Blocks(normalize, false)
	if L.Pipelines > 1 {
		t.served = p.Served(false)
	}
	if p.Chunks == 1 {
		// The one chunk is the whole part (TestOneChunkIsTheWholePart).
		t.whole, t.servedWhole = t.blocks[0], t.served
	} else {
		t.whole = p.Blocks(normalize, true)[0]
		if L.Pipelines > 1 {
			t.servedWhole = p.Served(true)
		}
	}
	sched, err := Schedule(L.Stages, p.Chunks)
	if err != nil {
		return err
	}
	t.sched = sched[t.s]
	for _, tr := range t.d.Train {
		if tr {
			t.numTrain++
		}
	}
	// Each pipeline counts its part once.
	if t.numTrain, err = collective.AllreduceScalar(t.stageC, t.numTrain, collective.Sum); err != nil {
		return err
	}
	if t.numTrain == 0 {
		return errors.New("pipe: no training vertices")
	}
	nk := t.nk
	if p.Chunks == 1 {
		t.rows, t.rowGrads = dense.New(nk, t.w), dense.New(nk, t.w)
	} else {
		for range t.hi - t.lo {
			t.hist = append(t.hist, dense.New(nk, t.w))
			t.histGrad = append(t.histGrad, dense.New(nk, t.w))
		}
	}
	t.flights = make([]*flight, p.Chunks)
	return nil
}

// Params returns the parameters this rank trains: its stage's layers, then
// (GCNII) the replicated input layer.
func (t *Trainer) Params() []*model.Param { return append(slices.Clone(t.params), t.inParams...) }

// order returns pipeline k's chunk order in epoch.
func (t *Trainer) order(epoch, k int) []int {
	n := t.chunks
	if !t.cfg.ShuffleChunks {
		o := make([]int, n)
		for i := range o {
			o[i] = i
		}
		return o
	}
	return rng.New(t.cfg.Seed, streamOrder, uint64(epoch), uint64(k)).Perm(n)
}

// dropKey returns the dropout key of layer l (0: input, Layers+1: output)
// in epoch.
func (t *Trainer) dropKey(epoch, l int) uint64 {
	return rng.Mix(t.cfg.Seed, streamDropout, uint64(epoch), uint64(l))
}

// histAt returns the historical embeddings of the stage's conv layer i
// (t.rows with one chunk per part).
func (t *Trainer) histAt(i int) *dense.Matrix {
	if t.rows != nil {
		return t.rows
	}
	return t.hist[i]
}

// histGradAt returns the historical gradients of the stage's conv layer i
// (t.rowGrads, zero between layers, with one chunk per part).
func (t *Trainer) histGradAt(i int) *dense.Matrix {
	if t.rowGrads != nil {
		return t.rowGrads
	}
	return t.histGrad[i]
}

// convInput returns an n×w matrix on the trainer's buffer for the conv
// layers' inputs, which every layer of every chunk reuses. Its contents
// are unspecified.
func (t *Trainer) convInput(n int) *dense.Matrix {
	t.xbuf = dense.Grow(t.xbuf, n*t.w)
	return &dense.Matrix{Rows: n, Cols: t.w, Data: t.xbuf}
}

// flight returns chunk c's flight, creating its layer copies on first use.
func (t *Trainer) flight(c int) *flight {
	if fl := t.flights[c]; fl != nil {
		return fl
	}
	fl := &flight{}
	if t.in != nil {
		fl.in = t.in.Shared()
	}
	for _, cv := range t.convs {
		fl.convs = append(fl.convs, cv.Shared())
	}
	if t.out != nil {
		fl.out = t.out.Shared()
	}
	t.flights[c] = fl
	return fl
}

// StateBytes returns the bytes of the state this rank keeps between
// epochs: weights and gradients, historical embeddings, their gradients and
// snapshot (or the layers' shared rows with one chunk per part), the
// feature rows, the blocks' indices and values and what the conv layers
// derived from them (model.Block.Bytes), and the buffer of the conv
// layers' inputs. Layer caches of chunks in flight
// come on top (per layer and chunk, gcnii: about two matrices of NDst rows;
// see model.BenchmarkDeepStack).
func (t *Trainer) StateBytes() int64 {
	var n int64
	for _, p := range t.Params() {
		n += int64(2*len(p.W)) * 4 // weights and gradient
	}
	for _, ms := range [][]*dense.Matrix{t.hist, t.histGrad, t.snap, {t.rows, t.rowGrads}} {
		for _, m := range ms {
			if m != nil {
				n += int64(len(m.Data)) * 4
			}
		}
	}
	switch {
	case t.xs != nil:
		n += int64(len(t.xs.Indptr)+len(t.xs.Indices))*8 + int64(len(t.xs.Values))*4
	case t.hasIn:
		n += int64(len(t.d.Feat.Data)) * 4
	}
	n += int64(cap(t.xbuf)) * 4
	blocks := slices.Clone(t.blocks)
	if t.whole != t.blocks[0] {
		blocks = append(blocks, t.whole)
	}
	for _, b := range blocks {
		n += int64(len(b.A.Indptr)+len(b.A.Indices))*8 + int64(len(b.A.Values))*8 + b.Conv.Bytes()
	}
	return n
}
