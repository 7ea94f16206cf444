package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/internal/enum"
	"gnnmpi/internal/sat"
	"gnnmpi/sparse"
)

// Kinds of the Hidden→Hidden layers of a deep model (DeepConfig.Kind).
const (
	// ConvGCN is out = ReLU(Â·x·W + b) (Kipf and Welling 2017).
	ConvGCN = KindGCN
	// ConvSAGE is out = ReLU(SAGE_mean(x)), GraphSAGE with the mean
	// aggregator and no normalisation.
	ConvSAGE = KindSAGE
	// ConvResGCN is the pre-activation residual GCN block of DeeperGCN
	// ("res+", Li et al. 2020): out = aux + Â·ReLU(LayerNorm(x))·W + b,
	// aux being the destinations' undropped input and the LayerNorm
	// applied to every source row of the (dropped-out) input x. There is
	// no activation after the addition, so the residual stream is not
	// amplified layer after layer.
	ConvResGCN = KindResGCN
	// ConvGCNII is GCNII (Chen et al. 2020) with initial residual and
	// identity mapping; see NewConv.
	ConvGCNII = KindGCNII
)

// DeepConfig describes a deep full-graph GNN:
//
//	H⁰ = ReLU(dropout(X)·W_in + b_in)                 (Linear In→Hidden)
//	Hˡ = Convₗ(dropout(Hˡ⁻¹), aux),  l = 1..Layers    (Hidden→Hidden, activation inside)
//	logits = dropout(H^L)·W_out + b_out               (Linear Hidden→Out)
//
// Dropout is applied by the caller, not by Linear or Conv. aux is the
// destinations' rows of Hˡ⁻¹ before dropout for ConvResGCN, those of H⁰ for
// ConvGCNII, and nil otherwise. Every Conv applies its own nonlinearity:
// after the convolution for gcn, sage and gcnii, before it for resgcn, whose
// block is the pre-activation residual Hˡ = Hˡ⁻¹ + Â·ReLU(LN(dropout(Hˡ⁻¹)))·W + b
// of DeeperGCN, LN a learnable per-row LayerNorm (see NewConv).
type DeepConfig struct {
	// Kind is ConvGCN, ConvSAGE, ConvResGCN or ConvGCNII.
	Kind Kind
	// In is the number of input features, Hidden the width of every
	// Conv, Out the number of classes.
	In, Hidden, Out int
	// Layers is the number of Convs, at least 1.
	Layers int
	// Dropout is the feature dropout rate, in [0, 1), applied by the
	// caller to the input of every Linear and Conv in training.
	Dropout float32
	// Alpha is GCNII's initial-residual weight α, in [0, 1], and Lambda
	// its identity-mapping strength λ > 0: layer l uses
	// β_l = ln(λ/l + 1). Other kinds ignore them.
	Alpha, Lambda float64
}

// DefaultDeep returns the configuration of kind with the GCNII paper's
// defaults: 32 layers of width 100, dropout 0.5, α = 0.1 and λ = 0.5.
// In and Out are zero and must be set before use.
func DefaultDeep(kind Kind) DeepConfig {
	return DeepConfig{Kind: kind, Hidden: 100, Layers: 32, Dropout: 0.5, Alpha: 0.1, Lambda: 0.5}
}

// Validate returns nil if c describes a valid deep model, else an error
// wrapping ErrConfig: an unknown Kind, Layers, In, Hidden or Out below 1,
// Dropout outside [0, 1), or, for ConvGCNII, Alpha outside [0, 1] or
// Lambda not finite and positive.
func (c DeepConfig) Validate() error {
	switch c.Kind {
	case ConvGCN, ConvSAGE, ConvResGCN, ConvGCNII:
	default:
		return fmt.Errorf("%w: deep kind %q, want %s", ErrConfig, c.Kind, enum.Or(DeepKinds))
	}
	switch {
	case c.Layers < 1:
		return fmt.Errorf("%w: %d layers, want ≥ 1", ErrConfig, c.Layers)
	case c.In < 1 || c.Hidden < 1 || c.Out < 1:
		return fmt.Errorf("%w: in %d, hidden %d, out %d, want ≥ 1", ErrConfig, c.In, c.Hidden, c.Out)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("%w: dropout %g, want [0, 1)", ErrConfig, c.Dropout)
	}
	if c.Kind == ConvGCNII {
		if err := c.gcniiErr(); err != nil {
			return err
		}
	}
	return nil
}

// gcniiErr returns an error wrapping ErrConfig if Alpha or Lambda is invalid.
func (c DeepConfig) gcniiErr() error {
	switch {
	case !(c.Alpha >= 0 && c.Alpha <= 1):
		return fmt.Errorf("%w: gcnii alpha %g, want [0, 1]", ErrConfig, c.Alpha)
	case !(c.Lambda > 0 && !math.IsInf(c.Lambda, 1)):
		return fmt.Errorf("%w: gcnii lambda %g, want finite > 0", ErrConfig, c.Lambda)
	}
	return nil
}

// Linear is a dense layer y = x·W + b: x is n×fin, W is fin×fout and b is
// 1×fout. It has no activation. Its Params are named "w" and "b".
//
// Forward caches x for Backward; x must not change until Backward returns.
// A Linear is not safe for concurrent use; Shared gives copies that are.
type Linear struct {
	w, b      *Param
	fin, fout int
	impl      blas.Float32Level3

	x  *dense.Matrix
	xs *sparse.Matrix[float32] // the input of the last ForwardSparse
}

// NewLinear returns a Linear layer from fin to fout features with Glorot
// uniform weights drawn from rng and a zero bias. Dense products use impl,
// or gonum's pure Go BLAS if impl is nil. It will panic if fin or fout is
// not positive.
func NewLinear(fin, fout int, rng *rand.Rand, impl blas.Float32Level3) *Linear {
	w, b := newAffine(fin, fout, rng)
	return &Linear{w: w, b: b, fin: fin, fout: fout, impl: dense.BLASOrDefault(impl)}
}

// Forward returns x·W + b as a new n×fout matrix and caches x.
// It will panic if x is nil or x.Cols != fin.
func (l *Linear) Forward(x *dense.Matrix) *dense.Matrix {
	if x == nil || x.Cols != l.fin {
		panic("model: x.Cols != layer input width")
	}
	l.x, l.xs = x, nil
	out := dense.New(x.Rows, l.fout)
	dense.Gemm(l.impl, blas.NoTrans, blas.NoTrans, x.Rows, l.fout, l.fin, 1, x.Data, l.w.W, 0, out.Data)
	addRowVec(out.Data, l.b.W, x.Rows, l.fout)
	return out
}

// Backward adds dL/dW = xᵀ·dy and dL/db (the column sums of dy) into the
// parameters' G and returns dL/dx = dy·Wᵀ (n×fin, new) if needInput, else
// nil (after ForwardSparse: no dL/dx, and a panic if needInput). It will
// panic if no Forward preceded it or dy is not n×fout.
func (l *Linear) Backward(dy *dense.Matrix, needInput bool) *dense.Matrix {
	if l.xs != nil {
		noInputGrad(needInput)
		n := int(l.xs.NRows)
		checkGrad(dy, n, l.fout)
		colSumAdd(l.b.Grad(), dy.Data, n, l.fout)
		sparseTMulAddTerms(l.xs, l.fout, gradTerm(l.w, dy.Data, n))
		return nil
	}
	if l.x == nil {
		panic("model: Backward before Forward")
	}
	n := l.x.Rows
	checkGrad(dy, n, l.fout)
	colSumAdd(l.b.Grad(), dy.Data, n, l.fout)
	dw, beta := l.w.gemmDst()
	dense.Gemm(l.impl, blas.Trans, blas.NoTrans, l.fin, l.fout, n, 1, l.x.Data, dy.Data, beta, dw)
	if !needInput {
		return nil
	}
	dx := dense.New(n, l.fin)
	dense.Gemm(l.impl, blas.NoTrans, blas.Trans, n, l.fin, l.fout, 1, dy.Data, l.w.W, 0, dx.Data)
	return dx
}

// Params returns W and b; the slice is new, the Params are the layer's own.
func (l *Linear) Params() []*Param { return []*Param{l.w, l.b} }

// Shared returns a Linear with the same *Param values as l (Forward reads
// the same W, Backward adds into the same G) and its own forward cache, so
// that several inputs can be in flight through one layer. l and its copies
// must not run concurrently with each other.
func (l *Linear) Shared() *Linear {
	return &Linear{w: l.w, b: l.b, fin: l.fin, fout: l.fout, impl: l.impl}
}

// OutDim returns fout.
func (l *Linear) OutDim() int { return l.fout }

// Conv is one Hidden→Hidden layer of a deep model (see DeepConfig), its
// activation included. Implementations are returned by NewConv; they are
// not safe for concurrent use, and neither are copies from Shared with one
// another, since they add into the same gradients.
//
// A Conv keeps, from Forward to Backward, only what depends on its input:
// everything derived from the block alone (float32 values, transposes)
// lives in the Block and is shared by every layer on it, and Backward's
// scratch is freed when it returns.
type Conv interface {
	// Forward computes the layer on block b, whose CSR is NDst×NSrc with
	// the destinations as its first NDst sources. For gcn, resgcn and
	// gcnii it must carry Values (GCNNorm with full-graph degrees,
	// self-loops included); sage ignores Values (mean aggregator). x is
	// NSrc×w, the layer input already dropped out by the caller (resgcn
	// normalises its rows itself). aux is NDst×w: for resgcn the
	// destinations' input rows before dropout (the residual), for gcnii
	// the destinations' rows of H⁰ (the initial residual); gcn and sage
	// take nil (aux is ignored). It returns a new NDst×w matrix, which the
	// Conv does not keep.
	// Forward caches what Backward needs: per layer one NDst×w matrix and
	// a ReLU mask of one bit per output for gcn and gcnii, two matrices
	// for sage, x̂ (NSrc×w) and an NDst×w matrix for resgcn. It keeps
	// neither x nor aux, which the caller may reuse once it returns (the
	// layers aggregate before they multiply: their widths in and out are
	// equal and NDst ≤ NSrc). b and the Params must not change until
	// Backward returns, and a later Forward replaces the cache.
	// It will panic if the shapes do not conform, a needed aux is nil or
	// a gcn, resgcn or gcnii block has no Values.
	Forward(b *Block, x, aux *dense.Matrix) *dense.Matrix
	// Backward takes dL/dout (NDst×w), adds the parameter gradients into
	// Param.Grad and returns dL/dx (NSrc×w, new) and dL/daux (NDst×w, new;
	// nil when UsesAux is false). It will panic if no Forward preceded it
	// or dy is not NDst×w.
	Backward(dy *dense.Matrix) (dx, daux *dense.Matrix)
	// Params returns the layer's parameters; the slice is new, the Params
	// are the layer's own: W and b ("w", "b") for gcn, W, b and the
	// LayerNorm's gain γ and bias β ("w", "b", "ln_g", "ln_b", the last
	// two 1×w) for resgcn, W_self, W_neigh and b ("w_self", "w_neigh",
	// "b") for sage, W ("w") for gcnii.
	Params() []*Param
	// UsesAux reports whether Forward reads aux (resgcn and gcnii).
	UsesAux() bool
	// Shared returns a Conv of the same kind with the same *Param values
	// (gradients accumulate into the same G) and its own cache, so that
	// several graph chunks can be in flight through one layer
	// (pipelining).
	Shared() Conv
}

// NewConv returns Conv layer l (1-based, 1..cfg.Layers) of kind cfg.Kind and
// width w = cfg.Hidden, with Glorot uniform weights drawn from rng and zero
// biases. Dense products use impl, or gonum's pure Go BLAS if impl is nil.
// The kinds compute, for a block Â (with Values) or A (sage), input x and
// aux:
//
//	gcn:     out = ReLU(Â·x·W + b)                   (GCN, W w×w, b 1×w)
//	sage:    out = ReLU(x_i·W_self + mean_j x_j·W_neigh + b)   (SAGE, no normalisation)
//	resgcn:  z_j = ReLU(LN(x_j)) for every source j,  out = aux + Â·z·W + b
//	gcnii:   S = (1−α)·Â·x + α·aux,  out = ReLU((1−β_l)·S + β_l·S·W)
//
// with, for resgcn, LN(v) = γ⊙(v − mean(v))/√(var(v) + 1e-5) + β the
// LayerNorm of a row v over its w features (biased variance), γ and β
// learnable 1×w (initially 1 and 0) and W w×w, b 1×w: the pre-activation
// "res+" block of DeeperGCN (Li et al. 2020, Norm → ReLU → Dropout →
// GraphConv → Addition) with the caller's dropout moved first; and, for
// gcnii, α = cfg.Alpha, β_l = ln(cfg.Lambda/l + 1) and W w×w without bias
// (Chen et al. 2020, the variant without the "variant" flag).
// Only Kind, Hidden, Layers, Alpha and Lambda are read. It will panic if
// cfg.Kind is unknown, cfg.Hidden < 1, l is outside [1, cfg.Layers], or,
// for gcnii, Alpha or Lambda is invalid (see Validate).
func NewConv(cfg DeepConfig, l int, rng *rand.Rand, impl blas.Float32Level3) Conv {
	w := cfg.Hidden
	if w < 1 {
		panic("model: non-positive layer width")
	}
	if l < 1 || l > cfg.Layers {
		panic("model: conv layer index outside [1, Layers]")
	}
	switch cfg.Kind {
	case ConvGCN:
		return &reluConv[*GCN]{l: NewGCN(w, w, rng, impl)}
	case ConvResGCN:
		c := &resConv{g: NewGCN(w, w, rng, impl), gain: NewParam("ln_g", 1, w), bias: NewParam("ln_b", 1, w), width: w}
		for i := range c.gain.W {
			c.gain.W[i] = 1
		}
		return c
	case ConvSAGE:
		s := NewSAGE(w, w, false, rng, impl)
		s.dstOnly = true
		return &reluConv[*SAGE]{l: s}
	case ConvGCNII:
		if cfg.gcniiErr() != nil {
			panic("model: invalid gcnii alpha or lambda")
		}
		c := &gcniiConv{
			w:     NewParam("w", w, w),
			width: w,
			alpha: cfg.Alpha,
			beta:  gcniiBeta(cfg.Lambda, l),
			impl:  dense.BLASOrDefault(impl),
		}
		glorot(c.w, w, w, rng)
		return c
	default:
		panic("model: unknown conv kind")
	}
}

// gcniiBeta returns GCNII's identity-mapping weight of layer l,
// β_l = ln(λ/l + 1).
func gcniiBeta(lambda float64, l int) float64 { return math.Log(lambda/float64(l) + 1) }

// checkAux panics unless aux is NDst×w for block a.
func checkAux(a *sparse.CSR, aux *dense.Matrix, w int) {
	if aux == nil || int64(aux.Rows) != a.NRows || aux.Cols != w {
		panic("model: aux is not NDst×width")
	}
}

// reluConv is the gcn and the sage Conv: a GCN layer, or a SAGE layer
// (mean aggregator, no normalisation), followed by ReLU.
type reluConv[L reluConvLayer[L]] struct {
	l    L
	relu reluMask
}

// reluConvLayer is what reluConv uses of its layer (*GCN or *SAGE).
type reluConvLayer[L any] interface {
	forward(b *Block, x *dense.Matrix) *dense.Matrix
	Backward(dy *dense.Matrix, needInput bool) *dense.Matrix
	Params() []*Param
	shared() L
}

func (c *reluConv[L]) Forward(b *Block, x, _ *dense.Matrix) *dense.Matrix {
	return c.relu.forward(c.l.forward(b, x))
}

func (c *reluConv[L]) Backward(dy *dense.Matrix) (dx, daux *dense.Matrix) {
	return c.l.Backward(c.relu.backward(dy), true), nil
}

func (c *reluConv[L]) Params() []*Param { return c.l.Params() }

func (c *reluConv[L]) UsesAux() bool { return false }

func (c *reluConv[L]) Shared() Conv { return &reluConv[L]{l: c.l.shared()} }

// lnEps is the LayerNorm's variance epsilon (PyTorch's default).
const lnEps = 1e-5

// resConv is the resgcn Conv, DeeperGCN's pre-activation residual block:
//
//	x̂_j = (x_j − μ_j)·r_j,  r_j = 1/√(σ²_j + ε),  z_j = ReLU(γ⊙x̂_j + β)
//	out = aux + Â·z·W + b
//
// for every source row j (μ_j, σ²_j the mean and biased variance of x_j's w
// entries). The rows are independent, so the LayerNorm splits across
// goroutines without changing any result. Forward keeps x̂ and r; z is the
// GCN's input only (aggregate first keeps Â·z instead), and Backward
// recomputes where z > 0 from x̂, γ and β.
type resConv struct {
	g          *GCN
	gain, bias *Param // γ ("ln_g") and β ("ln_b"), 1×w
	width      int

	ns   int
	xhat []float32 // NSrc×w: x̂
	rstd []float32 // NSrc: r_j
}

// lnPre returns γ_k·x̂ + β_k, the input of the LayerNorm's ReLU.
func lnPre(gain, bias float32, xh float32) float32 { return gain*xh + bias }

func (c *resConv) Forward(b *Block, x, aux *dense.Matrix) *dense.Matrix {
	w := c.width
	a := b.CSR()
	checkNormBlock(a, x, w, "model: GCN block has no Values (see GCNNorm)")
	checkAux(a, aux, w)
	ns := x.Rows
	c.ns = ns
	c.xhat = dense.Grow(c.xhat, ns*w)
	c.rstd = dense.Grow(c.rstd, ns)
	z := dense.New(ns, w)
	gain, bias := c.gain.W, c.bias.W
	parallel(ns, 1, int64(ns)*int64(w), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			row := x.Data[j*w : (j+1)*w]
			var mean float64
			for _, v := range row {
				mean += float64(v)
			}
			mean /= float64(w)
			var vr float64
			for _, v := range row {
				d := float64(v) - mean
				vr += d * d
			}
			r := 1 / math.Sqrt(vr/float64(w)+lnEps)
			c.rstd[j] = float32(r)
			xh, z := c.xhat[j*w:(j+1)*w], z.Data[j*w:(j+1)*w]
			for k, v := range row {
				h := float32((float64(v) - mean) * r)
				xh[k] = h
				if p := lnPre(gain[k], bias[k], h); p > 0 {
					z[k] = p
				}
			}
		}
	})
	out := c.g.forward(b, z)
	dense.Axpy(1, aux.Data, out.Data)
	return out
}

func (c *resConv) Backward(dy *dense.Matrix) (dx, daux *dense.Matrix) {
	if c.g.blk == nil {
		panic("model: Backward before Forward")
	}
	w, ns := c.width, c.ns
	checkGrad(dy, int(c.g.blk.CSR().NRows), w)
	// dz, then in place dL/d(γ⊙x̂ + β) through the ReLU, then dL/dx.
	dx = c.g.Backward(dy, true)
	dpre := dx.Data
	gain, bias := c.gain.W, c.bias.W
	for i, h := range c.xhat {
		if k := i % w; !(lnPre(gain[k], bias[k], h) > 0) {
			dpre[i] = 0
		}
	}
	// γ and β: sums over the rows in row order.
	gg, bg := c.gain.Grad(), c.bias.Grad()
	for j := range ns {
		dp, xh := dpre[j*w:(j+1)*w], c.xhat[j*w:(j+1)*w]
		for k, v := range dp {
			gg[k] += v * xh[k]
			bg[k] += v
		}
	}
	// Through the normalisation: with g = γ⊙dpre_j,
	// dx_j = r_j·(g − mean(g) − x̂_j·mean(g⊙x̂_j)), row j in place of dpre_j
	// (each entry is read before it is written).
	parallel(ns, 1, int64(ns)*int64(w), func(lo, hi int) {
		for j := lo; j < hi; j++ {
			dp, xh := dpre[j*w:(j+1)*w], c.xhat[j*w:(j+1)*w]
			var sg, sgx float64
			for k, v := range dp {
				g := float64(gain[k] * v)
				sg += g
				sgx += g * float64(xh[k])
			}
			sg /= float64(w)
			sgx /= float64(w)
			r := float64(c.rstd[j])
			for k, v := range dp {
				g := float64(gain[k] * v)
				dp[k] = float32(r * (g - sg - float64(xh[k])*sgx))
			}
		}
	})
	daux = &dense.Matrix{Rows: dy.Rows, Cols: dy.Cols, Data: append([]float32(nil), dy.Data...)}
	return dx, daux
}

func (c *resConv) Params() []*Param { return append(c.g.Params(), c.gain, c.bias) }

func (c *resConv) UsesAux() bool { return true }

func (c *resConv) Shared() Conv {
	return &resConv{g: c.g.shared(), gain: c.gain, bias: c.bias, width: c.width}
}

// gcniiConv is the gcnii Conv:
//
//	S = (1−α)·Â·x + α·aux,  out = ReLU((1−β)·S + β·S·W).
//
// The factor 1−α is folded into the block's float32 values, so that
// dL/dx = ((1−α)·Â)ᵀ·dL/dS uses the same weights; every layer of a stack
// shares them (α is the same for all) and their transpose. Forward keeps S
// and the ReLU's mask.
type gcniiConv struct {
	w           *Param
	width       int
	alpha, beta float64
	impl        blas.Float32Level3

	blk  *Block
	wt   *weighting // (1−α)·Â's values
	s    []float32  // NDst×w: S
	relu reluMask
}

func (c *gcniiConv) Forward(b *Block, x, aux *dense.Matrix) *dense.Matrix {
	w := c.width
	a := b.CSR()
	checkNormBlock(a, x, w, "model: GCNII block has no Values (see GCNNorm)")
	checkAux(a, aux, w)
	nd := int(a.NRows)
	c.wt = b.scaledValues(1 - c.alpha)
	c.s = dense.Grow(c.s, nd*w)
	spmm(c.s, a, c.wt.val, nil, x.Data, w)
	dense.Axpy(float32(c.alpha), aux.Data, c.s)
	pre := dense.New(nd, w)
	copy(pre.Data, c.s)
	dense.Gemm(c.impl, blas.NoTrans, blas.NoTrans, nd, w, w, float32(c.beta), c.s, c.w.W, float32(1-c.beta), pre.Data)
	c.blk = b
	return c.relu.forward(pre)
}

func (c *gcniiConv) Backward(dy *dense.Matrix) (dx, daux *dense.Matrix) {
	if c.blk == nil {
		panic("model: Backward before Forward")
	}
	a := c.blk.CSR()
	w, nd, ns := c.width, int(a.NRows), int(a.NCols)
	checkGrad(dy, nd, w)
	dpre := c.relu.backward(dy)
	// pre = (1−β)·S + β·S·W: dW = β·Sᵀ·dpre, dS = (1−β)·dpre + β·dpre·Wᵀ.
	dw, beta := c.w.gemmDst()
	dense.Gemm(c.impl, blas.Trans, blas.NoTrans, w, w, nd, float32(c.beta), c.s, dpre.Data, beta, dw)
	ds := make([]float32, nd*w)
	copy(ds, dpre.Data)
	dense.Gemm(c.impl, blas.NoTrans, blas.Trans, nd, w, w, float32(c.beta), dpre.Data, c.w.W, float32(1-c.beta), ds)
	daux = dense.New(nd, w)
	dense.Axpy(float32(c.alpha), ds, daux.Data)
	dx = dense.New(ns, w)
	c.blk.transpose(c.wt).mulAdd(dx.Data, ds, w)
	return dx, daux
}

func (c *gcniiConv) Params() []*Param { return []*Param{c.w} }

func (c *gcniiConv) UsesAux() bool { return true }

func (c *gcniiConv) Shared() Conv {
	return &gcniiConv{w: c.w, width: c.width, alpha: c.alpha, beta: c.beta, impl: c.impl}
}

// NumParams returns the number of scalar weights of the whole deep model
// of c, without allocating them: the input Linear (In×Hidden and its
// bias), Layers Convs of c.Kind and the output Linear (Hidden×Out and its
// bias), as a full-graph trainer builds them over all its stages. It
// returns an error wrapping ErrConfig if c is invalid; a count that does
// not fit an int64 is math.MaxInt64.
func (c DeepConfig) NumParams() (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	w := int64(c.Hidden)
	var conv int64
	switch c.Kind {
	case ConvGCN: // w, b
		conv = sat.Add(sat.Mul(w, w), w)
	case ConvResGCN: // w, b, ln_g, ln_b
		conv = sat.Add(sat.Mul(w, w), sat.Mul(3, w))
	case ConvSAGE: // w_self, w_neigh, b
		conv = sat.Add(sat.Mul(sat.Mul(2, w), w), w)
	case ConvGCNII: // w
		conv = sat.Mul(w, w)
	}
	in := sat.Add(sat.Mul(int64(c.In), w), w)
	out := sat.Add(sat.Mul(w, int64(c.Out)), int64(c.Out))
	return sat.Add(sat.Add(in, out), sat.Mul(int64(c.Layers), conv)), nil
}
