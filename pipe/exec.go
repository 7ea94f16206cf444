package pipe

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/model"
)

// Phases of the byte counts (collective.SetPhase).
const (
	PhaseAct       = "act"       // stage-to-stage activations (Send/Recv)
	PhaseGrad      = "grad"      // stage-to-stage gradients (Send/Recv)
	PhaseHalo      = "halo"      // rows between pipelines (graph parts), both directions
	PhaseAllreduce = "allreduce" // weight gradients
	PhaseEval      = "eval"      // exact inference: activations and halos
	PhaseMetrics   = "metrics"   // loss and accuracy reductions
)

// Stream ids under Config.Seed.
const (
	streamWeights = 201 // + layer: one stream per layer, so any stage split gives the same weights
	streamDropout = 202
	streamOrder   = 203
)

// Message tags of the stage-to-stage transfers.
const (
	tagAct  = 1
	tagGrad = 2
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

	Optimizer   string // "adam" or "sgd"
	LR          float32
	WeightDecay float32
	Momentum    float32

	Seed uint64
	BLAS blas.Float32Level3 `json:"-"`
}

// Data is one rank's input: the replicated plan, labels and masks, and the
// feature rows of the rank's part.
type Data struct {
	Plan   *Plan
	Feat   *dense.Matrix // part-local rows of the rank's part (Plan.Members order); only read
	Labels []int32       // every vertex
	// RowNormalize scales every feature row to sum 1 (dense.RowNormalized)
	// on the trainer's own copy: sparse features are normalised in place
	// of their nonzeros, and the trainer then keeps no dense copy at all.
	RowNormalize bool
	// Train, Val and Test mark every vertex's split.
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
	lo, hi           int // conv layers [lo, hi)
	first, last      bool
	hasIn            bool // holds the input layer (stage 0; every stage for GCNII)
	w                int

	in       *model.Linear
	xs       *sparseRows  // the features as sparse rows, when sparse enough (input.go)
	convs    []model.Conv // layers lo..hi−1
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
	flat                 []float32
	xbuf                 []float32 // the conv layers' input rows (convInput)
	halo                 []float32 // staging rows of haloForward (send) and haloBackward (receive)
}

// flight is a chunk in flight through the stage: its layers' caches and the
// rows that enter and leave. The rows are released after the chunk's
// backward (but the receive buffers u and dy); the layers' caches stay, to
// be overwritten by the next epoch's forward.
type flight struct {
	in    *model.Linear
	xs    *sparseRows // the chunk's dropped-out input rows (sparse input layer)
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
	L := cfg.Layout
	mc := cfg.Model
	switch {
	case L.Stages < 1 || L.Pipelines < 1 || L.Ranks() != c.Size():
		return nil, fmt.Errorf("pipe: %d stages × %d pipelines for %d ranks", L.Stages, L.Pipelines, c.Size())
	case d.Plan == nil || d.Plan.Parts != L.Pipelines:
		return nil, fmt.Errorf("pipe: the plan must have one part per pipeline (%d)", L.Pipelines)
	case mc.Layers < L.Stages:
		return nil, fmt.Errorf("pipe: %d layers for %d stages; every stage needs a layer", mc.Layers, L.Stages)
	case cfg.SnapshotEvery < 0:
		return nil, fmt.Errorf("pipe: snapshot every %d epochs", cfg.SnapshotEvery)
	}
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	t := &Trainer{c: c, cfg: cfg, d: d, k: L.Pipeline(c.Rank()), s: L.Stage(c.Rank()), w: mc.Hidden}
	t.lo, t.hi = Layers(mc.Layers, L.Stages, t.s)
	t.first, t.last = t.s == 0, t.s == L.Stages-1
	t.hasIn = t.first || mc.Kind == model.ConvGCNII
	p := d.Plan
	nk := len(p.Members[t.k])
	if t.hasIn && (d.Feat == nil || d.Feat.Rows != nk || d.Feat.Cols != mc.In) {
		return nil, fmt.Errorf("pipe: rank %d needs the %d×%d features of part %d", c.Rank(), nk, mc.In, t.k)
	}
	var err error
	if t.pipeC, err = c.Split(t.k, t.s); err != nil {
		return nil, err
	}
	if t.stageC, err = c.Split(t.s, t.k); err != nil {
		return nil, err
	}

	switch {
	case t.hasIn && density(d.Feat) < sparseDensity:
		t.xs = toSparse(d.Feat)
		if d.RowNormalize {
			t.xs.normalizeRows()
		}
		t.d.Feat = nil // every read goes to t.xs
	case t.hasIn && d.RowNormalize:
		t.d.Feat = dense.RowNormalized(d.Feat)
	}
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
	switch cfg.Optimizer {
	case "adam":
		t.opt = model.NewAdam(cfg.LR, cfg.WeightDecay)
	case "sgd":
		t.opt = model.NewSGD(cfg.LR, cfg.Momentum, cfg.WeightDecay)
	default:
		return nil, fmt.Errorf("pipe: unknown optimizer %q", cfg.Optimizer)
	}

	normalize := mc.Kind != model.ConvSAGE
	t.blocks = p.Blocks(t.k, normalize, false)
	if L.Pipelines > 1 {
		t.served = p.Served(t.k, false)
	}
	if p.Chunks == 1 {
		// The one chunk is the whole part (TestOneChunkIsTheWholePart).
		t.whole, t.servedWhole = t.blocks[0], t.served
	} else {
		t.whole = p.Blocks(t.k, normalize, true)[0]
		if L.Pipelines > 1 {
			t.servedWhole = p.Served(t.k, true)
		}
	}
	sched, err := Schedule(L.Stages, p.Chunks)
	if err != nil {
		return nil, err
	}
	t.sched = sched[t.s]
	for _, tr := range d.Train {
		if tr {
			t.numTrain++
		}
	}
	if t.numTrain == 0 {
		return nil, errors.New("pipe: no training vertices")
	}
	if p.Chunks == 1 {
		t.rows, t.rowGrads = dense.New(nk, t.w), dense.New(nk, t.w)
	} else {
		for range t.hi - t.lo {
			t.hist = append(t.hist, dense.New(nk, t.w))
			t.histGrad = append(t.histGrad, dense.New(nk, t.w))
		}
	}
	t.flights = make([]*flight, p.Chunks)
	return t, nil
}

// Params returns the parameters this rank trains: its stage's layers, then
// (GCNII) the replicated input layer.
func (t *Trainer) Params() []*model.Param { return append(slices.Clone(t.params), t.inParams...) }

// order returns pipeline k's chunk order in epoch.
func (t *Trainer) order(epoch, k int) []int {
	n := t.d.Plan.Chunks
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

// pass is one sweep over a chunking: training (chunks, dropout, historical
// embeddings) or evaluation (one chunk per part, exact).
type pass struct {
	train  bool
	epoch  int
	blocks []*Block
	served [][][]int32
	orders [][]int // per pipeline: chunk at each position
	hist   func(i int) *dense.Matrix
}

// Epoch trains one epoch (1-based) and applies one optimizer step.
// It is collective over the trainer's communicator.
func (t *Trainer) Epoch(epoch int) (Stats, error) {
	if t.cfg.SnapshotEvery > 0 && t.snap != nil {
		for i := range t.hist {
			copy(t.hist[i].Data, t.snap[i].Data)
		}
	}
	ps := &pass{train: true, epoch: epoch, blocks: t.blocks, served: t.served, hist: t.histAt}
	for k := range t.cfg.Layout.Pipelines {
		ps.orders = append(ps.orders, t.order(epoch, k))
	}
	var lossSum float64
	var correct int64
	for _, st := range t.sched {
		c := ps.orders[t.k][st.MB]
		fl := t.flight(c)
		b := t.blocks[c]
		var err error
		switch st.Kind {
		case RecvAct:
			fl.u = ensure(fl.u, len(b.Dst), t.w)
			err = t.recv(fl.u, st.Peer, tagAct, PhaseAct)
		case Forward:
			var l float64
			var n int64
			l, n, err = t.forward(ps, st.MB, fl)
			lossSum += l
			correct += n
		case SendAct:
			err = t.send(fl.y, st.Peer, tagAct, PhaseAct)
		case RecvGrad:
			fl.dy = ensure(fl.dy, len(b.Dst), t.w)
			err = t.recv(fl.dy, st.Peer, tagGrad, PhaseGrad)
		case Backward:
			err = t.backward(ps, st.MB, fl)
		case SendGrad:
			err = t.send(fl.dx, st.Peer, tagGrad, PhaseGrad)
			fl.dx = nil
		}
		if err != nil {
			return Stats{}, fmt.Errorf("pipe: epoch %d, %v: %w", epoch, st, err)
		}
	}
	if t.cfg.ClearGrads {
		for _, g := range t.histGrad {
			clear(g.Data)
		}
	}
	if err := t.step(); err != nil {
		return Stats{}, err
	}
	if r := t.cfg.SnapshotEvery; r > 0 && epoch%r == 0 {
		if t.snap == nil {
			for _, h := range t.hist {
				t.snap = append(t.snap, dense.New(h.Rows, h.Cols))
			}
		}
		for i := range t.hist {
			copy(t.snap[i].Data, t.hist[i].Data)
		}
	}
	defer collective.SetPhase(t.c, PhaseMetrics)()
	sums := []float64{lossSum, float64(correct)}
	if err := collective.AllreduceSlice(t.c, sums, collective.Sum); err != nil {
		return Stats{}, err
	}
	return Stats{Loss: sums[0] / float64(t.numTrain), TrainAcc: sums[1] / float64(t.numTrain)}, nil
}

// step reduces the weight gradients (a stage's over its pipelines; GCNII's
// replicated input layer over every rank), applies the optimizer and zeroes
// the gradients.
func (t *Trainer) step() error {
	defer collective.SetPhase(t.c, PhaseAllreduce)()
	if err := t.reduce(t.stageC, t.params); err != nil {
		return err
	}
	if err := t.reduce(t.c, t.inParams); err != nil {
		return err
	}
	all := t.Params()
	t.opt.Step(all)
	for _, p := range all {
		clear(p.G)
	}
	return nil
}

// reduce sums the gradients of ps over c.
func (t *Trainer) reduce(c collective.Comm, ps []*model.Param) error {
	if c.Size() == 1 || len(ps) == 0 {
		return nil
	}
	n := 0
	for _, p := range ps {
		n += len(p.G)
	}
	if cap(t.flat) < n {
		t.flat = make([]float32, n)
	}
	flat := t.flat[:n]
	off := 0
	for _, p := range ps {
		off += copy(flat[off:], p.G)
	}
	b := collective.BufOf(flat)
	if err := c.Allreduce(b, b, collective.Sum); err != nil {
		return err
	}
	off = 0
	for _, p := range ps {
		off += copy(p.G, flat[off:])
	}
	return nil
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
	if cap(t.xbuf) < n*t.w {
		t.xbuf = make([]float32, n*t.w)
	}
	return &dense.Matrix{Rows: n, Cols: t.w, Data: t.xbuf[:n*t.w]}
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

func (t *Trainer) send(m *dense.Matrix, peer, tag int, phase string) error {
	defer collective.SetPhase(t.c, phase)()
	return t.pipeC.Send(collective.BufOf(m.Data), peer, tag)
}

func (t *Trainer) recv(m *dense.Matrix, peer, tag int, phase string) error {
	defer collective.SetPhase(t.c, phase)()
	n, err := t.pipeC.Recv(collective.BufOf(m.Data), peer, tag)
	if err == nil && n != len(m.Data) {
		err = fmt.Errorf("pipe: received %d values from stage %d, want %d", n, peer, len(m.Data))
	}
	return err
}

// ensure returns m if it is r×c, else a new r×c matrix.
func ensure(m *dense.Matrix, r, c int) *dense.Matrix {
	if m != nil && m.Rows == r && m.Cols == c {
		return m
	}
	return dense.New(r, c)
}

// gather returns the rows ids of src as a new matrix.
func gather(src *dense.Matrix, ids []int32) *dense.Matrix {
	out := dense.New(len(ids), src.Cols)
	gatherInto(out, 0, src, ids)
	return out
}

// input computes the input layer on block b's destinations:
// H⁰ = ReLU(dropout(X)·W_in + b_in).
func (t *Trainer) input(ps *pass, b *Block, lin *model.Linear, fl *flight) *dense.Matrix {
	whole := !ps.train && len(b.Dst) == len(t.d.Plan.Members[t.k]) && identity(b.Dst) // the part in order: no copy
	var h *dense.Matrix
	if t.xs != nil {
		x := t.xs
		if !whole {
			x = gatherSparse(t.xs, b.Dst)
		}
		if ps.train {
			dropSparse(x, b.Gids, t.cfg.Model.Dropout, t.dropKey(ps.epoch, 0))
		}
		fl.xs = x
		h = sparseLinear(x, lin)
	} else {
		x := t.d.Feat
		if !whole {
			x = gather(t.d.Feat, b.Dst)
		}
		if ps.train {
			dropNonzeros(x, b.Gids, t.cfg.Model.Dropout, t.dropKey(ps.epoch, 0))
		}
		h = lin.Forward(x)
	}
	for i, v := range h.Data {
		if v < 0 {
			h.Data[i] = 0
		}
	}
	return h
}

func identity(ids []int32) bool {
	for i, id := range ids {
		if int(id) != i {
			return false
		}
	}
	return true
}

// forward runs the stage's layers on the chunk at position mb and, on the
// last stage, the output layer and the loss. It returns the chunk's summed
// training loss and correct count (last stage, training pass).
func (t *Trainer) forward(ps *pass, mb int, fl *flight) (float64, int64, error) {
	c := ps.orders[t.k][mb]
	b := ps.blocks[c]
	mc := t.cfg.Model
	nd := len(b.Dst)
	in, convs, out := fl.in, fl.convs, fl.out
	if !ps.train {
		// Evaluation runs throwaway copies of the layers (below, one per
		// conv layer), so that no layer keeps its cache after its Forward.
		in, out, convs = nil, nil, t.convs
		if t.in != nil {
			in = t.in.Shared()
		}
	}
	if t.hasIn {
		fl.h0 = t.input(ps, b, in, fl)
	}
	if t.first {
		fl.u = fl.h0
	}
	u := fl.u
	for i, cv := range convs {
		if !ps.train {
			cv = cv.Shared()
		}
		l := t.lo + i
		// x: the dropped-out input rows d, then the other chunks' and
		// parts' rows. Every row is rewritten, and the conv does not keep
		// x (model.Conv), so one buffer serves every layer and chunk.
		x := t.convInput(b.NSrc())
		d := &dense.Matrix{Rows: nd, Cols: t.w, Data: x.Data[:nd*t.w]}
		copy(d.Data, u.Data)
		if ps.train && mc.Dropout > 0 {
			dropRows(d, b.Gids, mc.Dropout, t.dropKey(ps.epoch, l))
		}
		h := ps.hist(i)
		scatterRows(h, b.Dst, d)
		gatherInto(x, nd, h, b.Local)
		if err := t.haloForward(ps, mb, b, x, h); err != nil {
			return 0, 0, err
		}
		var aux *dense.Matrix
		switch mc.Kind {
		case model.ConvResGCN:
			aux = u
		case model.ConvGCNII:
			aux = fl.h0
		}
		u = cv.Forward(b.Conv, x, aux)
	}
	fl.y = u
	if !t.last || !ps.train {
		return 0, 0, nil
	}
	z := u
	if mc.Dropout > 0 {
		z = dense.New(nd, t.w)
		copy(z.Data, u.Data)
		dropRows(z, b.Gids, mc.Dropout, t.dropKey(ps.epoch, mc.Layers+1))
	}
	logits := out.Forward(z)
	pred := model.Argmax(logits)
	var rows []int
	for i, v := range b.Gids {
		if t.d.Train[v] {
			rows = append(rows, i)
		}
	}
	fl.dlog = dense.New(nd, mc.Out)
	var loss float64
	var correct int64
	inv := float32(1 / float64(t.numTrain))
	for _, i := range rows {
		row := logits.Data[i*mc.Out : (i+1)*mc.Out]
		y := t.d.Labels[b.Gids[i]]
		loss += model.CrossEntropy(row, y)
		softmaxGrad(fl.dlog.Data[i*mc.Out:(i+1)*mc.Out], row, y, inv)
		if pred[i] == y {
			correct++
		}
	}
	return loss, correct, nil
}

// softmaxGrad sets g = (softmax(row) − onehot(y))·scale.
func softmaxGrad(g, row []float32, y int32, scale float32) {
	mx := float32(math.Inf(-1))
	for _, v := range row {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v - mx))
	}
	for j, v := range row {
		p := math.Exp(float64(v-mx)) / sum
		if j == int(y) {
			p--
		}
		g[j] = float32(p) * scale
	}
}

// scatterRows writes the rows of src into dst at ids.
func scatterRows(dst *dense.Matrix, ids []int32, src *dense.Matrix) {
	f := dst.Cols
	for i, id := range ids {
		copy(dst.Data[int(id)*f:(int(id)+1)*f], src.Data[i*f:(i+1)*f])
	}
}

// gatherInto copies rows ids of src into dst's rows from off on.
func gatherInto(dst *dense.Matrix, off int, src *dense.Matrix, ids []int32) {
	f := dst.Cols
	for i, id := range ids {
		copy(dst.Data[(off+i)*f:(off+i+1)*f], src.Data[int(id)*f:(int(id)+1)*f])
	}
}

// addRows adds src's rows from off on into dst at ids.
func addRows(dst *dense.Matrix, ids []int32, src *dense.Matrix, off int) {
	f := dst.Cols
	for i, id := range ids {
		d := dst.Data[int(id)*f : (int(id)+1)*f]
		s := src.Data[(off+i)*f : (off+i+1)*f]
		for j, v := range s {
			d[j] += v
		}
	}
}

// haloForward fills the Remote rows of x from the other pipelines' stage
// (one Alltoallv over the stage communicator) and serves the rows they
// read from h. It does nothing with one pipeline.
func (t *Trainer) haloForward(ps *pass, mb int, b *Block, x, h *dense.Matrix) error {
	P := t.cfg.Layout.Pipelines
	if P == 1 {
		return nil
	}
	phase := PhaseHalo
	if !ps.train {
		phase = PhaseEval
	}
	defer collective.SetPhase(t.c, phase)()
	f := t.w
	sendCounts := make([]int, P)
	recvCounts := make([]int, P)
	send := t.halo[:0]
	for q := range P {
		if q == t.k {
			continue
		}
		ids := ps.served[q][ps.orders[q][mb]]
		for _, id := range ids {
			send = append(send, h.Data[int(id)*f:(int(id)+1)*f]...)
		}
		sendCounts[q] = len(ids) * f
		recvCounts[q] = len(b.Remote[q]) * f
	}
	t.halo = send
	off := (len(b.Dst) + len(b.Local)) * f
	recv := x.Data[off:]
	return t.stageC.Alltoallv(collective.BufOf(send), sendCounts, collective.BufOf(recv), recvCounts)
}

// haloBackward sends the gradients of dx's Remote rows to their parts and
// adds what the other pipelines send for this part's rows into g.
func (t *Trainer) haloBackward(ps *pass, mb int, b *Block, dx, g *dense.Matrix) error {
	P := t.cfg.Layout.Pipelines
	if P == 1 {
		return nil
	}
	defer collective.SetPhase(t.c, PhaseHalo)()
	f := t.w
	sendCounts := make([]int, P)
	recvCounts := make([]int, P)
	for q := range P {
		if q == t.k {
			continue
		}
		sendCounts[q] = len(b.Remote[q]) * f
		recvCounts[q] = len(ps.served[q][ps.orders[q][mb]]) * f
	}
	off := (len(b.Dst) + len(b.Local)) * f
	n := 0
	for _, c := range recvCounts {
		n += c
	}
	if cap(t.halo) < n {
		t.halo = make([]float32, n)
	}
	recv := t.halo[:n]
	if err := t.stageC.Alltoallv(collective.BufOf(dx.Data[off:]), sendCounts, collective.BufOf(recv), recvCounts); err != nil {
		return err
	}
	rm := &dense.Matrix{Rows: n / f, Cols: f, Data: recv}
	pos := 0
	for q := range P {
		if q == t.k {
			continue
		}
		ids := ps.served[q][ps.orders[q][mb]]
		addRows(g, ids, rm, pos)
		pos += len(ids)
	}
	return nil
}

// backward back-propagates the chunk at position mb through the stage.
func (t *Trainer) backward(ps *pass, mb int, fl *flight) error {
	c := ps.orders[t.k][mb]
	b := ps.blocks[c]
	mc := t.cfg.Model
	nd := len(b.Dst)
	du := fl.dy
	if t.last {
		dz := fl.out.Backward(fl.dlog, true)
		if mc.Dropout > 0 {
			dropRows(dz, b.Gids, mc.Dropout, t.dropKey(ps.epoch, mc.Layers+1))
		}
		du = dz
	}
	var dh0 *dense.Matrix
	for i := len(fl.convs) - 1; i >= 0; i-- {
		l := t.lo + i
		dx, daux := fl.convs[i].Backward(du)
		g := t.histGradAt(i)
		if err := t.haloBackward(ps, mb, b, dx, g); err != nil {
			return err
		}
		addRows(g, b.Local, dx, nd)
		// Own rows: this chunk's part plus what other chunks and parts
		// sent, which is then consumed.
		dd := dense.New(nd, t.w)
		copy(dd.Data, dx.Data[:nd*t.w])
		f := t.w
		for j, id := range b.Dst {
			row := g.Data[int(id)*f : (int(id)+1)*f]
			out := dd.Data[j*f : (j+1)*f]
			for k, v := range row {
				out[k] += v
			}
			clear(row)
		}
		if mc.Dropout > 0 {
			dropRows(dd, b.Gids, mc.Dropout, t.dropKey(ps.epoch, l))
		}
		switch mc.Kind {
		case model.ConvResGCN:
			addTo(dd, daux)
		case model.ConvGCNII:
			if dh0 == nil {
				dh0 = daux
			} else {
				addTo(dh0, daux)
			}
		}
		du = dd
	}
	if t.first {
		if dh0 == nil {
			dh0 = du
		} else {
			addTo(dh0, du)
		}
	}
	if t.hasIn && dh0 != nil {
		for i, v := range fl.h0.Data {
			if v <= 0 {
				dh0.Data[i] = 0
			}
		}
		if t.xs != nil {
			sparseLinearBackward(fl.xs, fl.in, dh0)
		} else {
			fl.in.Backward(dh0, false)
		}
	}
	// Release what the next epoch's forward recomputes (a later stage's u
	// and dy stay: they are its receive buffers); dx goes to the previous
	// stage (SendGrad).
	fl.h0, fl.xs, fl.y, fl.dlog = nil, nil, nil, nil
	if t.first {
		fl.u = nil
	} else {
		fl.dx = du
	}
	return nil
}

// addTo adds src into dst (same shape).
func addTo(dst, src *dense.Matrix) {
	for i, v := range src.Data {
		dst.Data[i] += v
	}
}

// Evaluate runs exact full-graph inference (one chunk per part, no
// dropout, no historical embeddings) and returns validation and test
// accuracy and the validation loss. It is collective.
func (t *Trainer) Evaluate() (Eval, error) {
	defer collective.SetPhase(t.c, PhaseEval)()
	nk := len(t.d.Plan.Members[t.k])
	scratch := t.rows
	if scratch == nil {
		scratch = dense.New(nk, t.w)
	}
	ps := &pass{blocks: []*Block{t.whole}, served: t.servedWhole,
		orders: make([][]int, t.cfg.Layout.Pipelines),
		hist:   func(int) *dense.Matrix { return scratch }}
	for k := range ps.orders {
		ps.orders[k] = []int{0}
	}
	fl := &flight{}
	b := t.whole
	if !t.first {
		fl.u = dense.New(nk, t.w)
		if err := t.recv(fl.u, t.s-1, tagAct, PhaseEval); err != nil {
			return Eval{}, err
		}
	}
	if _, _, err := t.forward(ps, 0, fl); err != nil {
		return Eval{}, err
	}
	if !t.last {
		if err := t.send(fl.y, t.s+1, tagAct, PhaseEval); err != nil {
			return Eval{}, err
		}
	}
	// counts: val correct, val loss, val n, test correct, test n
	sums := make([]float64, 5)
	if t.last {
		logits := t.out.Shared().Forward(fl.y)
		pred := model.Argmax(logits)
		o := t.cfg.Model.Out
		for i, v := range b.Gids {
			row := logits.Data[i*o : (i+1)*o]
			y := t.d.Labels[v]
			ok := 0.0
			if pred[i] == y {
				ok = 1
			}
			if t.d.Val[v] {
				sums[0] += ok
				sums[1] += model.CrossEntropy(row, y)
				sums[2]++
			}
			if t.d.Test[v] {
				sums[3] += ok
				sums[4]++
			}
		}
	}
	restore := collective.SetPhase(t.c, PhaseMetrics)
	err := collective.AllreduceSlice(t.c, sums, collective.Sum)
	restore()
	if err != nil {
		return Eval{}, err
	}
	var e Eval
	if sums[2] > 0 {
		e.ValAcc, e.ValLoss = sums[0]/sums[2], sums[1]/sums[2]
	}
	if sums[4] > 0 {
		e.TestAcc = sums[3] / sums[4]
	}
	return e, nil
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
		n += int64(len(p.W)+len(p.G)) * 4
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
		n += int64(len(t.xs.ptr))*8 + int64(len(t.xs.col)+len(t.xs.val))*4
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
