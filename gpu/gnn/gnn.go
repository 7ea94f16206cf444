package gnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	gblas "gnnmpi/gpu/blas"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/kernels"
	"gnnmpi/internal/enum"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

// ErrUnsupported is wrapped by the errors for what does not run on the
// device.
var ErrUnsupported = errors.New("not supported on the GPU")

// Check reports whether a model of cfg runs on the device: GraphSAGE, GCN
// or GAT, without normalised hidden layers. The error wraps ErrUnsupported
// and names the model.Config field.
func Check(cfg model.Config) error {
	switch {
	case !slices.Contains(model.MinibatchKinds, cfg.Kind):
		return fmt.Errorf("gpu/gnn: Kind %s is %w (only %s run on the device)", cfg.Kind, ErrUnsupported, enum.Or(model.MinibatchKinds))
	case cfg.Normalize:
		return fmt.Errorf("gpu/gnn: Normalize is %w", ErrUnsupported)
	}
	return nil
}

// layer is one layer's shape and its parameters' offsets (in float32
// elements) in the flat vectors. A SAGE layer has both weights; a GCN
// layer only the weight of the aggregated term, at wNeigh (gcn set, wSelf
// unused), and its aggregation weighs the block's entries by their Values
// instead of 1/deg. A GAT layer (gat set) has heads heads of width d:
// its W (fin×heads·d) at wNeigh, the attention vectors a_l and a_r
// (heads×d) at attL and attR; fout is heads·d with concat, else d.
type layer struct {
	fin, fout           int
	gcn, gat, concat    bool
	heads, d            int
	wSelf, wNeigh, bias int64
	attL, attR          int64
}

// buffer is device scratch memory, grown as needed.
type buffer struct {
	p     cuda.DevicePtr
	bytes int64
}

// cache is what the backward pass reads of one layer's forward.
type cache struct {
	nd, ns          int
	csr             gblas.CSR
	x, xd, agg, out cuda.DevicePtr // input, dropped input (x without dropout), aggregated input, output (after ReLU)
	mask            cuda.DevicePtr // 0: no dropout
	// With sparse input rows (layer 0 of StepSparse): the dropped input
	// rows and the projection Z = X·W_neigh (NSrc×fout); x, xd, agg and
	// mask are then unused.
	sparse bool
	xs     gblas.CSR
	z      cuda.DevicePtr
	gat    gatCache // a GAT layer's
}

// Model is a GraphSAGE or GCN model (model.Model of kind "sage" or
// "gcn") whose weights, gradients and Adam moments live on a device. It is
// not safe for concurrent use.
type Model struct {
	ctx      *cuda.Context
	bl       *gblas.BLAS
	sp       *gblas.Sparse
	fn       map[string]*cuda.Function
	image    string // what the kernels were loaded as (cuda.Module.Image)
	layers   []layer
	n        int            // scalars in the flat vectors
	w, g     cuda.DevicePtr // weights and gradients, FlattenWeights order
	m, v     cuda.DevicePtr // Adam moments
	drops    []model.Dropout
	bufs     map[string]*buffer
	caches   []cache
	keys     []dropKey  // the dropout of the last step, per layer
	edges    []gatEdges // per GAT layer: the attended edges of the last step
	attnDrop float32    // GAT's attention dropout rate
	xsPtr    []int32    // StepSparse's input row offsets, on the host
}

// New builds a device model for cfg (In and Out set, as model.New takes
// it) on ctx: it allocates the flat weights (zero until LoadWeights),
// gradients and moments, loads cuBLAS and cuSPARSE and compiles the
// kernels. A missing library is an error naming it; a model that does not
// run on the device one wrapping ErrUnsupported.
func New(ctx *cuda.Context, cfg model.Config) (*Model, error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	switch {
	case cfg.Layers < 1 || cfg.In < 1 || cfg.Out < 1 || (cfg.Layers > 1 && cfg.Hidden < 1):
		return nil, fmt.Errorf("gpu/gnn: %w: %d layers, in %d, hidden %d, out %d", model.ErrConfig, cfg.Layers, cfg.In, cfg.Hidden, cfg.Out)
	case !(cfg.Dropout >= 0 && cfg.Dropout < 1):
		return nil, fmt.Errorf("gpu/gnn: %w: dropout %g, want [0, 1)", model.ErrConfig, cfg.Dropout)
	}
	m := &Model{ctx: ctx, fn: map[string]*cuda.Function{}, bufs: map[string]*buffer{}, attnDrop: cfg.AttnDropout}
	fin := cfg.In
	var off int64
	for l := range cfg.Layers {
		last := l == cfg.Layers-1
		fout := cfg.Hidden
		if last {
			fout = cfg.Out
		}
		// FlattenWeights order: SAGE's W_self, W_neigh, b; GCN's W, b;
		// GAT's W, a_l, a_r, b.
		ly := layer{fin: fin, fout: fout, gcn: cfg.Kind == model.KindGCN, gat: cfg.Kind == model.KindGAT, wSelf: off, wNeigh: off}
		switch {
		case ly.gat:
			ly.heads, ly.d, ly.concat = max(cfg.Heads, 1), fout, !last
			if last {
				ly.heads = max(cfg.OutHeads, 1)
			}
			hd := int64(ly.heads * ly.d)
			if ly.concat {
				ly.fout = int(hd)
			}
			ly.attL = off + int64(fin)*hd
			ly.attR = ly.attL + hd
			ly.bias = ly.attR + hd
		case ly.gcn:
			ly.bias = ly.wNeigh + int64(fin*fout)
		default:
			ly.wNeigh = off + int64(fin*fout)
			ly.bias = ly.wNeigh + int64(fin*fout)
		}
		fout = ly.fout
		off = ly.bias + int64(fout)
		m.layers = append(m.layers, ly)
		m.drops = append(m.drops, model.Dropout{Rate: cfg.Dropout, SkipZeros: l == 0})
		fin = fout
	}
	m.n = int(off)
	m.caches = make([]cache, cfg.Layers)
	m.keys = make([]dropKey, cfg.Layers)
	m.edges = make([]gatEdges, cfg.Layers)
	err := ctx.Do(func() (err error) {
		if m.bl, err = gblas.NewBLAS(0); err != nil {
			return err
		}
		if m.sp, err = gblas.NewSparse(cuda.Memory{Ctx: ctx}, 0); err != nil {
			return err
		}
		mod, err := ctx.Compile(kernels.Source(), "kernels.cu")
		if err != nil {
			return err
		}
		m.image = mod.Image()
		for _, name := range kernels.Names {
			if m.fn[name], err = mod.Function(name); err != nil {
				return err
			}
		}
		for _, p := range []*cuda.DevicePtr{&m.w, &m.g, &m.m, &m.v} {
			if *p, err = ctx.Alloc(int64(m.n) * 4); err != nil {
				return err
			}
		}
		zero := make([]float32, m.n)
		return errors.Join(cuda.CopyHtoD(ctx, m.m, zero), cuda.CopyHtoD(ctx, m.v, zero), cuda.CopyHtoD(ctx, m.g, zero))
	})
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	return m, nil
}

// Close frees the device memory and the library handles.
func (m *Model) Close() error {
	var errs []error
	for _, p := range []cuda.DevicePtr{m.w, m.g, m.m, m.v} {
		if p != 0 {
			errs = append(errs, m.ctx.Free(p))
		}
	}
	m.w, m.g, m.m, m.v = 0, 0, 0, 0
	errs = append(errs, m.FreeBuffers())
	errs = append(errs, m.ctx.Do(func() error {
		var errs []error
		if m.sp != nil {
			errs = append(errs, m.sp.Close())
		}
		if m.bl != nil {
			errs = append(errs, m.bl.Close())
		}
		return errors.Join(errs...)
	}))
	m.sp, m.bl = nil, nil
	return errors.Join(errs...)
}

// FreeBuffers frees the device scratch memory the steps and inference
// grew (inputs, blocks, activations), keeping the weights, gradients and
// moments: after layer-wise inference over large chunks, so that training
// gets that memory back. The next step allocates what it needs again.
func (m *Model) FreeBuffers() error {
	var errs []error
	for k, b := range m.bufs {
		errs = append(errs, m.ctx.Free(b.p))
		delete(m.bufs, k)
	}
	return errors.Join(errs...)
}

// Image says what the model's kernels were loaded as: "CUBIN sm_90", or
// "PTX compute_90 (…)" with the reason the CUBIN was not used.
func (m *Model) Image() string { return m.image }

// NumParams returns the number of scalar weights (model.Model.NumParams).
func (m *Model) NumParams() int { return m.n }

// checkLen returns an error unless len(s) is NumParams.
func (m *Model) checkLen(what string, s []float32) error {
	if len(s) != m.n {
		return fmt.Errorf("gpu/gnn: %s of %d scalars for a model of %d", what, len(s), m.n)
	}
	return nil
}

// LoadWeights copies the flat weights w (model.Model.FlattenWeights order)
// to the device.
func (m *Model) LoadWeights(w []float32) error {
	if err := m.checkLen("weights", w); err != nil {
		return err
	}
	return cuda.CopyHtoD(m.ctx, m.w, w)
}

// StoreWeights copies the device weights into dst (FlattenWeights order,
// len NumParams), for model.Model.SetWeights.
func (m *Model) StoreWeights(dst []float32) error {
	if err := m.checkLen("weights", dst); err != nil {
		return err
	}
	return cuda.CopyDtoH(m.ctx, dst, m.w)
}

// Grads copies the gradients of the last step into dst (FlattenGrads
// order, len NumParams): host staging for an Allreduce.
func (m *Model) Grads(dst []float32) error {
	if err := m.checkLen("gradients", dst); err != nil {
		return err
	}
	return cuda.CopyDtoH(m.ctx, dst, m.g)
}

// GradPtr returns the device address of the gradients of the last step:
// one contiguous buffer of NumParams float32 values in FlattenGrads order,
// which a device collective (nccl.Comm.AllreduceDevice) may sum in place
// over the ranks before AdamStep. It is valid until Close.
func (m *Model) GradPtr() cuda.DevicePtr { return m.g }

// SetGrads copies src (FlattenGrads order) into the device gradients, for
// AdamStep.
func (m *Model) SetGrads(src []float32) error {
	if err := m.checkLen("gradients", src); err != nil {
		return err
	}
	return cuda.CopyHtoD(m.ctx, m.g, src)
}

// ZeroGrad sets the device gradients to zero: the gradients of a rank
// with no seeds in a step.
func (m *Model) ZeroGrad() error {
	return cuda.CopyHtoD(m.ctx, m.g, make([]float32, m.n))
}

// LoadAdam copies o's moments (model.Adam.Moments) to the device.
func (m *Model) LoadAdam(o *model.Adam) error {
	mm, vv := o.Moments(m.n)
	return errors.Join(cuda.CopyHtoD(m.ctx, m.m, mm), cuda.CopyHtoD(m.ctx, m.v, vv))
}

// StoreAdam copies the device moments into o's (model.Adam.Moments), so
// that o.State, and a checkpoint, see them.
func (m *Model) StoreAdam(o *model.Adam) error {
	mm, vv := o.Moments(m.n)
	return errors.Join(cuda.CopyDtoH(m.ctx, mm, m.m), cuda.CopyDtoH(m.ctx, vv, m.v))
}

// AdamStep applies one step of o's update (model.Adam.Step) to the device
// weights from the device gradients and moments: o counts the step
// (Advance) and gives the hyperparameters; its host moments are not
// touched (StoreAdam copies them back).
func (m *Model) AdamStep(o *model.Adam) error {
	step, bc2s := o.Advance()
	return m.launch("adam_step", m.n, m.w, m.g, m.m, m.v, int64(m.n), step, bc2s, o.Beta1, o.Beta2, o.Eps, o.WeightDecay)
}

// launch runs kernel name over n elements (grid-stride: any grid covers
// them).
func (m *Model) launch(name string, n int, args ...any) error {
	const block = 256
	grid := uint32(min(max((n+block-1)/block, 1), 4096))
	return m.fn[name].Launch([3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, nil, args...)
}

// scratch returns the device buffer key of at least bytes bytes.
func (m *Model) scratch(key string, bytes int64) (cuda.DevicePtr, error) {
	bytes = max(bytes, 16)
	b := m.bufs[key]
	if b != nil && b.bytes >= bytes {
		return b.p, nil
	}
	if b != nil {
		if err := m.ctx.Free(b.p); err != nil {
			return 0, err
		}
		delete(m.bufs, key)
	}
	p, err := m.ctx.Alloc(bytes)
	if err != nil {
		return 0, fmt.Errorf("gpu/gnn: %d bytes of device memory for %s: %w", bytes, key, err)
	}
	m.bufs[key] = &buffer{p: p, bytes: bytes}
	return p, nil
}

// upload copies s into the device buffer key and returns it.
func upload[T cuda.Elem](m *Model, key string, s []T) (cuda.DevicePtr, error) {
	p, err := m.scratch(key, cuda.Bytes[T](len(s)))
	if err != nil {
		return 0, err
	}
	return p, cuda.CopyHtoD(m.ctx, p, s)
}

// blockCSR uploads block a of layer l as its aggregation matrix: the
// row-mean matrix (values 1/deg, as model's mean aggregation weights the
// rows) for SAGE, the block's Values as float32 (model.GCN's Â) for GCN.
func (m *Model) blockCSR(l int, a *sparse.CSR) (gblas.CSR, error) {
	gcn := m.layers[l].gcn
	if gcn && a.Values == nil {
		return gblas.CSR{}, fmt.Errorf("gpu/gnn: GCN block %d has no Values (see model.GCNNorm)", l)
	}
	nnz := a.NNZ()
	if nnz > math.MaxInt32 || a.NRows >= math.MaxInt32 || a.NCols > math.MaxInt32 {
		return gblas.CSR{}, fmt.Errorf("gpu/gnn: block %d has %d entries in %d×%d: over cuSPARSE's 32-bit indices", l, nnz, a.NRows, a.NCols)
	}
	ptr := make([]int32, a.NRows+1)
	col := make([]int32, nnz)
	val := make([]float32, nnz)
	for i := range a.NRows {
		ptr[i+1] = int32(a.Indptr[i+1])
		d := a.Indptr[i+1] - a.Indptr[i]
		for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
			col[e] = int32(a.Indices[e])
			if gcn {
				val[e] = float32(a.Values[e])
			} else {
				val[e] = 1 / float32(d)
			}
		}
	}
	return m.uploadCSR(fmt.Sprint(l), int(a.NRows), int(a.NCols), ptr, col, val)
}

// uploadCSR uploads a rows×cols CSR matrix into the device buffers named
// after key and returns it.
func (m *Model) uploadCSR(key string, rows, cols int, ptr, col []int32, val []float32) (gblas.CSR, error) {
	c := gblas.CSR{Rows: rows, Cols: cols, NNZ: len(col)}
	rp, err := upload(m, "ptr"+key, ptr)
	if err != nil {
		return gblas.CSR{}, err
	}
	ci, err := upload(m, "col"+key, col)
	if err != nil {
		return gblas.CSR{}, err
	}
	vp, err := upload(m, "val"+key, val)
	if err != nil {
		return gblas.CSR{}, err
	}
	c.RowOffsets, c.ColIndices, c.Values = uintptr(rp), uintptr(ci), uintptr(vp)
	return c, nil
}

// Result is a step's output on the host.
type Result struct {
	// Logits are the output layer's NDst×Out logits (for the accuracy).
	Logits *dense.Matrix
	// Loss is the mean cross-entropy over the rows, as
	// model.SoftmaxCrossEntropy returns it (before scale).
	Loss float64
}

// Step runs one training step on a minibatch whose input rows x
// (blocks[0].NCols×In) are on the host, uploaded once: see StepDevice.
func (m *Model) Step(blocks []*sparse.CSR, ids [][]int64, x *dense.Matrix, labels []int32, scale float32, rng *rand.Rand) (Result, error) {
	if x.Cols != m.layers[0].fin {
		return Result{}, fmt.Errorf("gpu/gnn: input of %d columns for a model of %d inputs", x.Cols, m.layers[0].fin)
	}
	var res Result
	err := m.ctx.Do(func() error {
		p, err := upload(m, "x", x.Data)
		if err != nil {
			return err
		}
		res, err = m.step(blocks, ids, input{x: p, rows: x.Rows}, labels, scale, rng)
		return err
	})
	return res, err
}

// StepDevice runs one training step on the minibatch of the blocks (input
// layer first, as model.Model.Forward takes them) whose input rows are the
// rows×In row-major float32 matrix at x on the device; labels are the
// output layer's destinations' classes. It computes the logits and the
// loss, and leaves on the device the gradients of scale times the mean
// loss (the trainer's share of a global mean), as model.Model.Backward
// after model.SoftmaxCrossEntropy with its gradient scaled; dropout masks
// come from rng, drawn as model.Model.ForwardIDs draws them with ids (nil:
// as model.Model.Forward; see the package doc). With no labels the
// gradients are zero.
func (m *Model) StepDevice(blocks []*sparse.CSR, ids [][]int64, x cuda.DevicePtr, rows int, labels []int32, scale float32, rng *rand.Rand) (Result, error) {
	var res Result
	err := m.ctx.Do(func() (err error) {
		res, err = m.step(blocks, ids, input{x: x, rows: rows}, labels, scale, rng)
		return err
	})
	return res, err
}

// input is a step's input rows: rows dense rows at x on the device or,
// when xs is set, sparse rows on the host.
type input struct {
	x    cuda.DevicePtr
	rows int
	xs   *sparse.Matrix[float32]
}

// dropKey is a layer's dropout in a step: model.Dropout.MaskKey's draw,
// from which the dropout_mask kernel makes the mask on the device (ok
// false: no dropout), and the global ids of the layer's input rows that
// key its rows' streams (nil: the row indices).
type dropKey struct {
	key  uint64
	t    uint32
	keep float32
	ok   bool
	ids  []int64
}

// step is StepDevice, or StepSparse, with the context current.
func (m *Model) step(blocks []*sparse.CSR, ids [][]int64, in input, labels []int32, scale float32, rng *rand.Rand) (Result, error) {
	if len(blocks) != len(m.layers) {
		return Result{}, fmt.Errorf("gpu/gnn: %d blocks for %d layers", len(blocks), len(m.layers))
	}
	if ids != nil && len(ids) != len(blocks) {
		return Result{}, fmt.Errorf("gpu/gnn: ids of %d layers for %d blocks", len(ids), len(blocks))
	}
	layerIDs := func(l int) []int64 {
		if ids == nil {
			return nil
		}
		return ids[l]
	}
	for l, a := range blocks {
		if ids != nil && int64(len(ids[l])) != a.NCols {
			return Result{}, fmt.Errorf("gpu/gnn: %d ids for block %d of %d sources", len(ids[l]), l, a.NCols)
		}
	}
	last := m.layers[len(m.layers)-1]
	if len(labels) == 0 {
		return Result{Logits: dense.New(0, last.fout)}, m.ZeroGrad()
	}
	ns := in.rows
	for l, a := range blocks {
		if int(a.NCols) != ns {
			return Result{}, fmt.Errorf("gpu/gnn: block %d has %d sources; its input has %d rows", l, a.NCols, ns)
		}
		ns = int(a.NRows)
	}
	if ns != len(labels) {
		return Result{}, fmt.Errorf("gpu/gnn: %d labels for %d output rows", len(labels), ns)
	}
	// The masks' keys, in Forward's order of draws (ForwardSparse's for
	// sparse input rows, whose dropout is applied on the host).
	// A GAT layer then draws its attention dropout.
	var xs *sparse.Matrix[float32]
	for l, a := range blocks {
		if l == 0 && in.xs != nil {
			xs, m.keys[0] = m.drops[0].ForwardSparseIDs(in.xs, layerIDs(0), true, rng), dropKey{}
		} else {
			k := &m.keys[l]
			k.key, k.t, k.keep, k.ok = m.drops[l].MaskKey(true, rng)
			k.ids = layerIDs(l)
		}
		if m.layers[l].gat {
			if err := m.drawGAT(l, a, layerIDs(l), rng); err != nil {
				return Result{}, err
			}
		}
	}
	logits, err := m.forward(blocks, in.x, xs)
	if err != nil {
		return Result{}, err
	}
	nd, out := len(labels), last.fout
	lab, err := upload(m, "labels", labels)
	if err != nil {
		return Result{}, err
	}
	dl, err := m.scratch("dlogits", int64(nd*out)*4)
	if err != nil {
		return Result{}, err
	}
	lossDev, err := m.scratch("loss", int64(nd)*4)
	if err != nil {
		return Result{}, err
	}
	if err := m.launch("softmax_xent", nd, dl, lossDev, logits, lab, int32(nd), int32(out), scale/float32(nd)); err != nil {
		return Result{}, err
	}
	res := Result{Logits: dense.New(nd, out)}
	loss := make([]float32, nd)
	if err := errors.Join(cuda.CopyDtoH(m.ctx, res.Logits.Data, logits), cuda.CopyDtoH(m.ctx, loss, lossDev)); err != nil {
		return Result{}, err
	}
	for _, v := range loss {
		res.Loss += float64(v)
	}
	res.Loss /= float64(nd)
	return res, m.backward(dl)
}

// forward runs the layers on the input, x on the device or, when xs is
// not nil, the sparse rows xs (dropout applied), and returns the logits.
func (m *Model) forward(blocks []*sparse.CSR, x cuda.DevicePtr, xs *sparse.Matrix[float32]) (cuda.DevicePtr, error) {
	for l, a := range blocks {
		var err error
		if l > 0 {
			xs = nil
		}
		if x, err = m.forwardLayer(l, a, x, xs); err != nil {
			return 0, err
		}
	}
	return x, nil
}

// forwardLayer runs layer l on block a and its input, x on the device or,
// for layer 0 when xs is not nil, the sparse rows xs (dropout applied),
// with the dropout of m.keys[l] and the attended edges of m.edges[l] (GAT),
// and returns its output (after a hidden layer's activation) on the
// device, in layer l's buffers.
func (m *Model) forwardLayer(l int, a *sparse.CSR, x cuda.DevicePtr, xs *sparse.Matrix[float32]) (cuda.DevicePtr, error) {
	f32 := func(n int) int64 { return int64(n) * 4 }
	ly, c := m.layers[l], &m.caches[l]
	c.nd, c.ns, c.x, c.mask, c.sparse = int(a.NRows), int(a.NCols), x, 0, false
	fin, fout, nd, ns := ly.fin, ly.fout, c.nd, c.ns
	var err error
	if !ly.gat {
		if c.csr, err = m.blockCSR(l, a); err != nil {
			return 0, err
		}
	}
	if xs != nil {
		if ly.gat {
			c.sparse = true
			if c.xs, err = m.inputCSR(xs); err != nil {
				return 0, err
			}
			return m.forwardGAT(l, 0)
		}
		return m.forwardSparse(xs)
	}
	c.xd = x
	if k := m.keys[l]; k.ok {
		if c.mask, err = m.scratch(fmt.Sprint("mask", l), f32(ns*fin)); err != nil {
			return 0, err
		}
		var skip int32
		if m.drops[l].SkipZeros {
			skip = 1
		}
		var ids cuda.DevicePtr // null: row r's stream is r
		if k.ids != nil {
			if ids, err = upload(m, fmt.Sprint("ids", l), k.ids); err != nil {
				return 0, err
			}
		}
		if err := m.launch("dropout_mask", ns, c.mask, x, ids, int64(ns), int32(fin), int64(k.key), int32(k.t), k.keep, skip); err != nil {
			return 0, err
		}
		if c.xd, err = m.scratch(fmt.Sprint("xd", l), f32(ns*fin)); err != nil {
			return 0, err
		}
		if err := m.launch("mul_mask", ns*fin, c.xd, x, c.mask, int64(ns*fin)); err != nil {
			return 0, err
		}
	}
	if ly.gat {
		return m.forwardGAT(l, c.xd)
	}
	if c.agg, err = m.scratch(fmt.Sprint("agg", l), f32(nd*fin)); err != nil {
		return 0, err
	}
	if c.out, err = m.scratch(fmt.Sprint("out", l), f32(nd*fout)); err != nil {
		return 0, err
	}
	if err := m.sp.SpMM(blas.NoTrans, 1, c.csr, uintptr(c.xd), fin, 0, uintptr(c.agg)); err != nil {
		return 0, err
	}
	return m.combine(l, c.xd, c.agg, c.out, nd)
}

// combine computes SAGE or GCN layer l's output into out from its first nd
// input rows xd (SAGE's self term; unread for GCN) and their aggregated
// rows agg: X'[:NDst]·W_self + agg·W_neigh for SAGE, agg·W for GCN, then
// the bias and a hidden layer's activation (finish). It returns out.
func (m *Model) combine(l int, xd, agg, out cuda.DevicePtr, nd int) (cuda.DevicePtr, error) {
	ly := m.layers[l]
	var beta float32
	if !ly.gcn {
		if err := m.bl.Sgemm(blas.NoTrans, blas.NoTrans, nd, ly.fout, ly.fin, 1, uintptr(xd), m.wAt(ly.wSelf), 0, uintptr(out)); err != nil {
			return 0, err
		}
		beta = 1
	}
	if err := m.bl.Sgemm(blas.NoTrans, blas.NoTrans, nd, ly.fout, ly.fin, 1, uintptr(agg), m.wAt(ly.wNeigh), beta, uintptr(out)); err != nil {
		return 0, err
	}
	return m.finish(l, out, nd)
}

// wAt and gAt return the device addresses of the weight and the gradient
// at offset off of the flat vectors.
func (m *Model) wAt(off int64) uintptr { return uintptr(m.w) + uintptr(off*4) }
func (m *Model) gAt(off int64) uintptr { return uintptr(m.g) + uintptr(off*4) }

// finish adds layer l's bias to its NDst×fout output out and applies the
// activation of a hidden layer (ReLU; ELU for GAT, as model.Model), in
// place, and returns out.
func (m *Model) finish(l int, out cuda.DevicePtr, nd int) (cuda.DevicePtr, error) {
	ly := m.layers[l]
	fout := ly.fout
	if err := m.launch("add_bias", nd*fout, out, cuda.DevicePtr(m.wAt(ly.bias)), int64(nd), int32(fout)); err != nil {
		return 0, err
	}
	if l < len(m.layers)-1 {
		if err := m.launch(ly.act()+"_forward", nd*fout, out, out, int64(nd*fout)); err != nil {
			return 0, err
		}
	}
	return out, nil
}

// act names the kernels of the layer's activation between layers.
func (ly layer) act() string {
	if ly.gat {
		return "elu"
	}
	return "relu"
}

// backward back-propagates dy = dL/dlogits through the last forward into
// the gradients (overwritten: each parameter gets one term per step).
func (m *Model) backward(dy cuda.DevicePtr) error {
	for l := len(m.layers) - 1; l >= 0; l-- {
		ly, c := m.layers[l], &m.caches[l]
		fin, fout, nd, ns := ly.fin, ly.fout, c.nd, c.ns
		if l < len(m.layers)-1 {
			if err := m.launch(ly.act()+"_backward", nd*fout, dy, dy, c.out, int64(nd*fout)); err != nil {
				return err
			}
		}
		if err := m.launch("col_sum", fout, cuda.DevicePtr(m.gAt(ly.bias)), dy, int64(nd), int32(fout)); err != nil {
			return err
		}
		if ly.gat {
			dx, err := m.backwardGAT(l, dy)
			if err != nil || l == 0 {
				return err
			}
			if err := m.maskGrad(c, dx, ns*fin); err != nil {
				return err
			}
			dy = dx
			continue
		}
		if c.sparse {
			// Only the input layer takes sparse rows, and they get no
			// gradient.
			return m.backwardSparse(dy)
		}
		if !ly.gcn {
			if err := m.bl.Sgemm(blas.Trans, blas.NoTrans, fin, fout, nd, 1, uintptr(c.xd), uintptr(dy), 0, m.gAt(ly.wSelf)); err != nil {
				return err
			}
		}
		if err := m.bl.Sgemm(blas.Trans, blas.NoTrans, fin, fout, nd, 1, uintptr(c.agg), uintptr(dy), 0, m.gAt(ly.wNeigh)); err != nil {
			return err
		}
		if l == 0 {
			return nil
		}
		dagg, err := m.scratch(fmt.Sprint("dagg", l), int64(nd*fin)*4)
		if err != nil {
			return err
		}
		dx, err := m.scratch(fmt.Sprint("dx", l), int64(ns*fin)*4)
		if err != nil {
			return err
		}
		if err := errors.Join(
			m.bl.Sgemm(blas.NoTrans, blas.Trans, nd, fin, fout, 1, uintptr(dy), m.wAt(ly.wNeigh), 0, uintptr(dagg)),
			m.sp.SpMM(blas.Trans, 1, c.csr, uintptr(dagg), fin, 0, uintptr(dx)),
		); err != nil {
			return err
		}
		if !ly.gcn {
			if err := m.bl.Sgemm(blas.NoTrans, blas.Trans, nd, fin, fout, 1, uintptr(dy), m.wAt(ly.wSelf), 1, uintptr(dx)); err != nil {
				return err
			}
		}
		if err := m.maskGrad(c, dx, ns*fin); err != nil {
			return err
		}
		dy = dx
	}
	return nil
}

// maskGrad applies the dropout mask of layer cache c, if any, to the n
// values of the input gradient dx, in place.
func (m *Model) maskGrad(c *cache, dx cuda.DevicePtr, n int) error {
	if c.mask == 0 {
		return nil
	}
	return m.launch("mul_mask", n, dx, dx, c.mask, int64(n))
}
