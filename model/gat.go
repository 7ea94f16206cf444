package model

import (
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// LeakySlope is the negative slope of the LeakyReLU on GAT attention logits
// (the GAT paper's 0.2).
const LeakySlope = 0.2

// GAT is a multi-head graph attention layer (Veličković et al. 2018; PyG
// GATConv). With h heads of width d, Z = X·W is NSrc×(h·d) and for head k
//
//	e_ij = LeakyReLU_0.2(a_l·z_i + a_r·z_j),
//	α_ij = softmax_j e_ij  over j ∈ N(i) ∪ {i},
//	o_i  = Σ_j α_ij·z_j,
//
// where z_i is head k of row i of Z. The self-loop (i, i) is always in the
// softmax: the layer adds it when row i of the block lacks it. The block's
// Values are ignored. With Concat the heads are concatenated (output width
// h·d), otherwise averaged (width d, as in the GAT paper's output layer);
// a bias of the output width is added. W is fin×(h·d), a_l and a_r are h×d.
//
// During training, AttnDropout zeroes each α_ij with that probability and
// scales the rest by 1/(1−p), as PyG does. The softmax subtracts each row's
// maximum.
type GAT struct {
	// AttnDropout is the dropout rate on attention coefficients in
	// training; 0 disables it.
	AttnDropout float32

	w, attL, attR, b *Param
	fin, heads, d    int
	concat           bool
	impl             blas.Float32Level3

	// ids are the global ids of the next forward's sources, which key
	// its attention dropout (AttentionMask); nil keys it by edge order.
	// A Model sets them (ForwardIDs).
	ids []int64

	a     *sparse.CSR
	x     *dense.Matrix
	xs    *sparse.Matrix[float32] // the input of the last ForwardSparse, else nil
	eptr  []int                   // NDst+1: edge offsets, self-loop included
	esrc  []int                   // E: source of each edge
	z     []float32               // NSrc×(h·d)
	el    []float32               // NDst×h: a_l·z_i
	er    []float32               // NSrc×h: a_r·z_j
	s     []float32               // E×h: attention logits before the LeakyReLU
	alpha []float32               // E×h: softmax
	drop  []float32               // E×h: dropout scale (0 or 1/(1−p)); nil without dropout
	dbuf  []float32               // storage of drop
	mx    []float32               // h scratch
	dz    []float32               // NSrc×(h·d) scratch
	del   []float32               // NDst×h scratch
	der   []float32               // NSrc×h scratch
	dal   []float32               // E×h scratch: dL/dα
	sum   []float32               // h scratch

	// own makes Forward and Backward return matrices the layer owns, as
	// SAGE's own (a Model's layers).
	own     bool
	out, dx *dense.Matrix // the results when own
}

var _ Layer = (*GAT)(nil)

// release drops g's forward cache and buffers (Model.Release).
func (g *GAT) release() {
	*g = GAT{AttnDropout: g.AttnDropout, w: g.w, attL: g.attL, attR: g.attR, b: g.b,
		fin: g.fin, heads: g.heads, d: g.d, concat: g.concat, impl: g.impl, own: g.own}
}

// NewGAT returns a GAT layer from fin features to heads heads of width d,
// concatenated or averaged, with Glorot uniform W, a_l and a_r drawn from rng
// in that order (fans fin, h·d for W and h, d for a_l and a_r, as PyG) and a
// zero bias. Dense products use impl, or gonum's pure Go BLAS if impl is nil.
// It will panic if fin, d or heads is not positive.
func NewGAT(fin, d, heads int, concat bool, rng *rand.Rand, impl blas.Float32Level3) *GAT {
	if fin <= 0 || d <= 0 || heads <= 0 {
		panic("model: non-positive layer width or heads")
	}
	g := &GAT{
		w:      NewParam("w", fin, heads*d),
		attL:   NewParam("att_l", heads, d),
		attR:   NewParam("att_r", heads, d),
		fin:    fin,
		heads:  heads,
		d:      d,
		concat: concat,
		impl:   dense.BLASOrDefault(impl),
	}
	g.b = NewParam("b", 1, g.OutDim())
	glorot(g.w, fin, heads*d, rng)
	glorot(g.attL, heads, d, rng)
	glorot(g.attR, heads, d, rng)
	return g
}

// Params returns W, a_l, a_r and b.
func (g *GAT) Params() []*Param { return []*Param{g.w, g.attL, g.attR, g.b} }

// OutDim returns h·d with Concat, d otherwise.
func (g *GAT) OutDim() int {
	if g.concat {
		return g.heads * g.d
	}
	return g.d
}

// Heads returns the number of attention heads.
func (g *GAT) Heads() int { return g.heads }

// Concat reports whether the heads are concatenated rather than averaged.
func (g *GAT) Concat() bool { return g.concat }

// Forward computes the layer on block a and returns an NDst×OutDim()
// matrix: a new one, or, in a Model, one the layer owns, valid until its
// next Forward or ForwardSparse (callers that keep it copy it). With train and AttnDropout > 0 it draws the attention dropout mask
// from rng. It will panic if the shapes do not conform, or if dropout is
// needed and rng is nil.
func (g *GAT) Forward(a *sparse.CSR, x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	checkBlock(a, x, g.fin)
	g.a, g.x, g.xs = a, x, nil
	ns, hd := int(a.NCols), g.heads*g.d
	g.z = dense.Grow(g.z, ns*hd)
	dense.Gemm(g.impl, blas.NoTrans, blas.NoTrans, ns, hd, g.fin, 1, x.Data, g.w.W, 0, g.z)
	return g.attend(train, rng)
}

// ForwardSparse is Forward with x given as sparse rows (NSrc×fin): Z =
// X·W is a sparse product, the attention is Forward's. Backward after it
// adds the parameter gradients and panics if needInput is true.
// It will panic if the shapes do not conform, or if dropout is needed and
// rng is nil.
func (g *GAT) ForwardSparse(a *sparse.CSR, x *sparse.Matrix[float32], train bool, rng *rand.Rand) *dense.Matrix {
	checkSparseBlock(a, x, g.fin)
	g.a, g.x, g.xs = a, nil, x
	ns, hd := int(a.NCols), g.heads*g.d
	g.z = dense.Grow(g.z, ns*hd)
	sparseMulTo(g.z, x, ns, g.w.W, hd)
	return g.attend(train, rng)
}

// attend computes the layer's output from Z = X·W in g.z: the attention
// logits and coefficients, their dropout in training, and the weighted sum.
func (g *GAT) attend(train bool, rng *rand.Rand) *dense.Matrix {
	a := g.a
	nd, ns, h, d := int(a.NRows), int(a.NCols), g.heads, g.d
	hd := h * d
	g.el = dense.Grow(g.el, nd*h)
	g.er = dense.Grow(g.er, ns*h)
	for j := range ns {
		for k := range h {
			zk := g.z[j*hd+k*d : j*hd+(k+1)*d]
			g.er[j*h+k] = dense.Dot(g.attR.W[k*d:(k+1)*d], zk)
			if j < nd {
				g.el[j*h+k] = dense.Dot(g.attL.W[k*d:(k+1)*d], zk)
			}
		}
	}

	g.edges(a)
	ne := len(g.esrc)
	g.attention(nd, ne)

	g.drop = nil
	if train && g.AttnDropout > 0 {
		if rng == nil {
			panic("model: attention dropout needs an rng")
		}
		g.dbuf = AttentionMask(g.dbuf, g.eptr, g.esrc, g.ids, h, g.AttnDropout, rng)
		g.drop = g.dbuf
	}

	od := g.OutDim()
	out := ownedMatrix(g.own, &g.out, nd, od)
	clear(out.Data) // the rows accumulate
	for i := range nd {
		row := out.Data[i*od : (i+1)*od]
		for e := g.eptr[i]; e < g.eptr[i+1]; e++ {
			j := g.esrc[e]
			for k := range h {
				c := g.alpha[e*h+k]
				if g.drop != nil {
					c *= g.drop[e*h+k]
				}
				dst := row
				if g.concat {
					dst = row[k*d : (k+1)*d]
				}
				dense.Axpy(c, g.z[j*hd+k*d:j*hd+(k+1)*d], dst)
			}
		}
		if !g.concat {
			dense.Scale(1/float32(h), row)
		}
	}
	addRowVec(out.Data, g.b.W, nd, od)
	return out
}

// edges sets g.eptr and g.esrc to the edge list of block a with the
// self-loops (AttendedEdges).
func (g *GAT) edges(a *sparse.CSR) {
	g.eptr, g.esrc = AttendedEdges(a, g.eptr, g.esrc)
}

// AttendedEdges returns the edges a GAT layer attends over on block a, in
// the order its Forward computes and draws for them: the sources of
// destination i are src[ptr[i]:ptr[i+1]], a's row i followed by i itself
// when the row lacks it (the self-loop). It reuses ptr's and src's storage.
// The device's GAT (gpu/gnn) uploads the same list.
func AttendedEdges[T int | int32](a *sparse.CSR, ptr, src []T) ([]T, []T) {
	nd := int(a.NRows)
	if cap(ptr) < nd+1 {
		ptr = make([]T, nd+1)
	}
	ptr = ptr[:nd+1]
	ptr[0] = 0
	src = src[:0]
	for i := range nd {
		self := false
		for _, j := range a.Row(int64(i)) {
			src = append(src, T(j))
			self = self || int(j) == i
		}
		if !self {
			src = append(src, T(i))
		}
		ptr[i+1] = T(len(src))
	}
	return ptr, src
}

// EdgesBySource returns the transpose of an edge list over ns sources,
// src[e] being edge e's source (AttendedEdges' src): the edges whose source
// is j are edge[ptr[j]:ptr[j+1]], in increasing order. It reuses ptr's
// and edge's storage. The device's GAT backward gathers through it.
func EdgesBySource[T int | int32](src []T, ns int, ptr, edge []T) ([]T, []T) {
	if cap(ptr) < ns+1 {
		ptr = make([]T, ns+1)
	}
	ptr = ptr[:ns+1]
	clear(ptr)
	for _, j := range src {
		ptr[j+1]++
	}
	for j := range ns {
		ptr[j+1] += ptr[j]
	}
	if cap(edge) < len(src) {
		edge = make([]T, len(src))
	}
	edge = edge[:len(src)]
	next := append([]T(nil), ptr[:ns]...)
	for e, j := range src {
		edge[next[j]] = T(e)
		next[j]++
	}
	return ptr, edge
}

// EdgeDestinations returns the destination of each edge of an edge list
// whose destination i has the edges ptr[i]:ptr[i+1] (AttendedEdges' ptr),
// in dst's storage.
func EdgeDestinations[T int | int32](ptr, dst []T) []T {
	ne := int(ptr[len(ptr)-1])
	if cap(dst) < ne {
		dst = make([]T, ne)
	}
	dst = dst[:ne]
	for i := range len(ptr) - 1 {
		for e := ptr[i]; e < ptr[i+1]; e++ {
			dst[e] = T(i)
		}
	}
	return dst
}

// attention sets g.s to the logits el[i] + er[j] of the nd destinations'
// ne edges (g.edges) and g.alpha to their attention coefficients: the
// softmax of the LeakyReLU logits over each row, per head.
func (g *GAT) attention(nd, ne int) {
	h := g.heads
	g.s = dense.Grow(g.s, ne*h)
	g.alpha = dense.Grow(g.alpha, ne*h)
	g.mx = dense.Grow(g.mx, h)
	g.sum = dense.Grow(g.sum, h)
	for i := range nd {
		lo, hi := g.eptr[i], g.eptr[i+1]
		for k := range h {
			g.mx[k] = float32(math.Inf(-1))
			g.sum[k] = 0
		}
		for e := lo; e < hi; e++ {
			j := g.esrc[e]
			for k := range h {
				s := g.el[i*h+k] + g.er[j*h+k]
				g.s[e*h+k] = s
				if s < 0 {
					s *= LeakySlope
				}
				g.alpha[e*h+k] = s
				g.mx[k] = max(g.mx[k], s)
			}
		}
		for e := lo; e < hi; e++ {
			for k := range h {
				v := float32(math.Exp(float64(g.alpha[e*h+k] - g.mx[k])))
				g.alpha[e*h+k] = v
				g.sum[k] += v
			}
		}
		for k := range h {
			g.sum[k] = 1 / g.sum[k]
		}
		for e := lo; e < hi; e++ {
			for k := range h {
				g.alpha[e*h+k] *= g.sum[k]
			}
		}
	}
}

// AttentionMask returns the attention dropout scales (each 0, or
// 1/(1−rate) for a kept one) of the h heads of the E edges ptr, src of
// AttendedEdges, coefficient e·h+k, in dst's storage, drawn from rng as
// Forward draws them in training. It draws one key from rng. With nil ids
// the E·h coefficients draw in order from one stream. Otherwise ids are
// the global ids of the block's sources (destination i's is ids[i]: the
// destinations are the first sources), and edge e from j to i draws its h
// decisions, in head order, from its own stream rng.PCG{Hi: rng.Mix(key,
// ids[i]), Lo: ids[j]}: a coefficient's scale then depends on the edge's
// two vertices, not on the order of the rows or of the edges (a minibatch
// trainer's, which gives a vertex's edges the same scales on any rank).
// It will panic if an edge's source or destination has no id.
func AttentionMask[T int | int32](dst []float32, ptr, src []T, ids []int64, h int, rate float32, rng *rand.Rand) []float32 {
	dst = dense.Grow(dst, len(src)*h)
	if ids == nil {
		dropMask(dst, rate, rng)
		return dst
	}
	key := rng.Uint64()
	proto := newDropper(rate, 0, 0)
	for i := range len(ptr) - 1 {
		hi := mixKey(key, uint64(ids[i]))
		for e := ptr[i]; e < ptr[i+1]; e++ {
			d := proto.stream(hi, uint64(ids[src[e]]))
			for k := range h {
				dst[int(e)*h+k] = d.next()
			}
		}
	}
	return dst
}

// Backward adds dL/dW, dL/da_l, dL/da_r and dL/db into the parameters' G and
// returns dL/dx (NSrc×fin; new, or in a Model the layer's own until its
// next Backward) if needInput, else nil. It will panic if dy
// is not NDst×OutDim() or no Forward preceded it, or if needInput follows a
// ForwardSparse.
func (g *GAT) Backward(dy *dense.Matrix, needInput bool) *dense.Matrix {
	if g.a == nil {
		panic("model: Backward before Forward")
	}
	nd, ns, h, d := int(g.a.NRows), int(g.a.NCols), g.heads, g.d
	hd, od := h*d, g.OutDim()
	checkGrad(dy, nd, od)
	if g.xs != nil {
		noInputGrad(needInput)
	}
	colSumAdd(g.b.Grad(), dy.Data, nd, od)

	ne := len(g.esrc)
	g.dz = dense.Grow(g.dz, ns*hd)
	clear(g.dz)
	g.del = dense.Grow(g.del, nd*h)
	clear(g.del)
	g.der = dense.Grow(g.der, ns*h)
	clear(g.der)
	g.dal = dense.Grow(g.dal, ne*h)
	dal := g.dal // dL/dα
	hs := float32(1)
	if !g.concat {
		hs = 1 / float32(h)
	}
	for i := range nd {
		lo, hi := g.eptr[i], g.eptr[i+1]
		gy := dy.Data[i*od : (i+1)*od]
		for e := lo; e < hi; e++ {
			j := g.esrc[e]
			for k := range h {
				gk := gy
				if g.concat {
					gk = gy[k*d : (k+1)*d]
				}
				zk := g.z[j*hd+k*d : j*hd+(k+1)*d]
				c := g.alpha[e*h+k]
				dc := hs * dense.Dot(gk, zk)
				if g.drop != nil {
					c *= g.drop[e*h+k]
					dc *= g.drop[e*h+k]
				}
				dal[e*h+k] = dc
				dense.Axpy(hs*c, gk, g.dz[j*hd+k*d:j*hd+(k+1)*d])
			}
		}
		// Softmax backward, then the LeakyReLU.
		for k := range h {
			var s float32
			for e := lo; e < hi; e++ {
				s += g.alpha[e*h+k] * dal[e*h+k]
			}
			for e := lo; e < hi; e++ {
				ds := g.alpha[e*h+k] * (dal[e*h+k] - s)
				if g.s[e*h+k] <= 0 {
					ds *= LeakySlope
				}
				g.del[i*h+k] += ds
				g.der[g.esrc[e]*h+k] += ds
			}
		}
	}
	dattR, dattL := g.attR.Grad(), g.attL.Grad()
	for j := range ns {
		for k := range h {
			zk := g.z[j*hd+k*d : j*hd+(k+1)*d]
			dzk := g.dz[j*hd+k*d : j*hd+(k+1)*d]
			if r := g.der[j*h+k]; r != 0 {
				dense.Axpy(r, g.attR.W[k*d:(k+1)*d], dzk)
				dense.Axpy(r, zk, dattR[k*d:(k+1)*d])
			}
			if j < nd {
				if l := g.del[j*h+k]; l != 0 {
					dense.Axpy(l, g.attL.W[k*d:(k+1)*d], dzk)
					dense.Axpy(l, zk, dattL[k*d:(k+1)*d])
				}
			}
		}
	}
	if g.xs != nil {
		sparseTMulAddTerms(g.xs, hd, gradTerm(g.w, g.dz, ns))
		return nil
	}
	dw, beta := g.w.gemmDst()
	dense.Gemm(g.impl, blas.Trans, blas.NoTrans, g.fin, hd, ns, 1, g.x.Data, g.dz, beta, dw)
	if !needInput {
		return nil
	}
	dx := ownedMatrix(g.own, &g.dx, ns, g.fin)
	dense.Gemm(g.impl, blas.NoTrans, blas.Trans, ns, g.fin, hd, 1, g.dz, g.w.W, 0, dx.Data)
	return dx
}
