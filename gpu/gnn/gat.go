package gnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/gpu/cuda"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

// gatEdges is what a GAT layer's step keeps of its block on the host: the
// attended edges (model.AttendedEdges), their transpose, and the attention
// dropout scales drawn for them (nil without attention dropout).
type gatEdges struct {
	ptr, src, dst []int32 // ptr: NDst+1; src, dst: E
	tptr, tedge   []int32 // NSrc+1 and E: the edges of each source, in order
	drop, dbuf    []float32
}

// gatCache is what a GAT layer's backward reads of its forward: device
// buffers of Z = X'·W (NSrc×h·d), the logits before the LeakyReLU and the
// coefficients (E×h each), the dropout scales (0 without), and the edge
// arrays.
type gatCache struct {
	z, s, alpha, drop             cuda.DevicePtr
	eptr, esrc, edst, tptr, tedge cuda.DevicePtr
	ne                            int
}

// drawGAT sets layer l's attended edges of block a and, in training (rng
// not nil) with attention dropout, draws their scales from rng as
// model.GAT.Forward does (model.AttentionMask, keyed by the sources' global
// ids if ids is not nil).
func (m *Model) drawGAT(l int, a *sparse.CSR, ids []int64, rng *rand.Rand) error {
	g, h := &m.edges[l], m.layers[l].heads
	g.ptr, g.src = model.AttendedEdges(a, g.ptr, g.src)
	if len(g.src) > math.MaxInt32/h {
		return fmt.Errorf("gpu/gnn: GAT block %d attends over %d edges of %d heads: over 32-bit indices", l, len(g.src), h)
	}
	g.drop = nil
	if m.attnDrop > 0 && rng != nil {
		g.dbuf = model.AttentionMask(g.dbuf, g.ptr, g.src, ids, h, m.attnDrop, rng)
		g.drop = g.dbuf
	}
	return nil
}

// transpose sets g.dst and the transpose of g's edges over ns sources.
func (g *gatEdges) transpose(ns int) {
	g.dst = model.EdgeDestinations(g.ptr, g.dst)
	g.tptr, g.tedge = model.EdgesBySource(g.src, ns, g.tptr, g.tedge)
}

// forwardGAT runs GAT layer l on its dropped input: the dense rows at xd,
// or, when xd is 0, layer 0's sparse rows (cache.xs). Per head k, with
// Z = X'·W (cuBLAS SGEMM, or cuSPARSE SpMM for sparse rows),
//
//	el = Z[:NDst]·a_l, er = Z·a_r (gat_scores),
//	α = softmax over i's edges of LeakyReLU(el_i + er_j) (gat_softmax),
//	out_i = Σ_j α'_ij z_j, heads concatenated or averaged (gat_aggregate),
//
// α' being α times the dropout scales; then the bias and, between layers,
// ELU (finish).
func (m *Model) forwardGAT(l int, xd cuda.DevicePtr) (cuda.DevicePtr, error) {
	ly, c, g := m.layers[l], &m.caches[l], &m.edges[l]
	h, d, hd := ly.heads, ly.d, ly.heads*ly.d
	nd, ns, ne := c.nd, c.ns, len(g.src)
	g.transpose(ns)
	gc := &c.gat
	gc.ne = ne
	f32 := func(key string, n int) (cuda.DevicePtr, error) { return m.scratch(fmt.Sprint(key, l), int64(n)*4) }
	var err error
	for _, u := range []struct {
		p   *cuda.DevicePtr
		key string
		s   []int32
	}{{&gc.eptr, "eptr", g.ptr}, {&gc.esrc, "esrc", g.src}, {&gc.edst, "edst", g.dst}, {&gc.tptr, "tptr", g.tptr}, {&gc.tedge, "tedge", g.tedge}} {
		if *u.p, err = upload(m, fmt.Sprint(u.key, l), u.s); err != nil {
			return 0, err
		}
	}
	gc.drop = 0
	if g.drop != nil {
		if gc.drop, err = upload(m, fmt.Sprint("adrop", l), g.drop); err != nil {
			return 0, err
		}
	}
	var el, er cuda.DevicePtr
	for _, b := range []struct {
		p *cuda.DevicePtr
		k string
		n int
	}{{&gc.z, "z", ns * hd}, {&el, "el", nd * h}, {&er, "er", ns * h}, {&gc.s, "s", ne * h}, {&gc.alpha, "alpha", ne * h}, {&c.out, "out", nd * ly.fout}} {
		if *b.p, err = f32(b.k, b.n); err != nil {
			return 0, err
		}
	}
	if xd == 0 {
		err = m.sp.SpMM(blas.NoTrans, 1, c.xs, m.wAt(ly.wNeigh), hd, 0, uintptr(gc.z))
	} else {
		err = m.bl.Sgemm(blas.NoTrans, blas.NoTrans, ns, hd, ly.fin, 1, uintptr(xd), m.wAt(ly.wNeigh), 0, uintptr(gc.z))
	}
	if err != nil {
		return 0, err
	}
	concat := int32(0)
	if ly.concat {
		concat = 1
	}
	if err := errors.Join(
		m.launch("gat_scores", ns*h, el, er, gc.z, cuda.DevicePtr(m.wAt(ly.attL)), cuda.DevicePtr(m.wAt(ly.attR)), int32(ns), int32(nd), int32(h), int32(d)),
		m.launch("gat_softmax", nd*h, gc.s, gc.alpha, el, er, gc.eptr, gc.esrc, int32(nd), int32(h), float32(model.LeakySlope)),
		m.launch("gat_aggregate", nd*ly.fout, c.out, gc.alpha, gc.drop, gc.z, gc.eptr, gc.esrc, int32(nd), int32(h), int32(d), concat),
	); err != nil {
		return 0, err
	}
	return m.finish(l, c.out, nd)
}

// backwardGAT back-propagates dy = dL/dout (after the activation's
// backward and the bias gradient) through GAT layer l: the weight
// gradients
//
//	dα (gat_dalpha), the softmax and LeakyReLU's backward (gat_softmax_backward:
//	ds per edge, del_i = Σ ds), dZ (gat_src_grad: over each source's edges,
//	plus der_j·a_r and del_j·a_l), da_r = Σ_j der_j z_j and
//	da_l = Σ_i del_i z_i (SGEMM Eᵀ·Z, its diagonal blocks: diag_blocks),
//	dW = X'ᵀ·dZ (SGEMM, or SpMM with op(X) = Xᵀ for sparse rows),
//
// and returns dL/dX' = dZ·Wᵀ (0 for layer 0, whose input gets no
// gradient).
func (m *Model) backwardGAT(l int, dy cuda.DevicePtr) (cuda.DevicePtr, error) {
	ly, c := m.layers[l], &m.caches[l]
	gc := &c.gat
	h, d, hd := ly.heads, ly.d, ly.heads*ly.d
	nd, ns, ne := c.nd, c.ns, gc.ne
	var dal, ds, del, der, dz, pr, pl cuda.DevicePtr
	for _, b := range []struct {
		p *cuda.DevicePtr
		k string
		n int
	}{{&dal, "dal", ne * h}, {&ds, "ds", ne * h}, {&del, "del", nd * h}, {&der, "der", ns * h}, {&dz, "dz", ns * hd}, {&pr, "pr", h * hd}, {&pl, "pl", h * hd}} {
		var err error
		if *b.p, err = m.scratch(fmt.Sprint(b.k, l), int64(b.n)*4); err != nil {
			return 0, err
		}
	}
	concat := int32(0)
	if ly.concat {
		concat = 1
	}
	attL, attR := cuda.DevicePtr(m.wAt(ly.attL)), cuda.DevicePtr(m.wAt(ly.attR))
	err := errors.Join(
		m.launch("gat_dalpha", ne*h, dal, dy, gc.z, gc.drop, gc.edst, gc.esrc, int64(ne), int32(h), int32(d), concat),
		m.launch("gat_softmax_backward", nd*h, ds, del, gc.alpha, dal, gc.s, gc.eptr, int32(nd), int32(h), float32(model.LeakySlope)),
		m.launch("gat_src_grad", ns*hd, dz, der, dy, gc.alpha, gc.drop, ds, del, attL, attR, gc.tptr, gc.tedge, gc.edst, int32(ns), int32(nd), int32(h), int32(d), concat),
		m.bl.Sgemm(blas.Trans, blas.NoTrans, h, hd, ns, 1, uintptr(der), uintptr(gc.z), 0, uintptr(pr)),
		m.launch("diag_blocks", hd, cuda.DevicePtr(m.gAt(ly.attR)), pr, int32(h), int32(d)),
		m.bl.Sgemm(blas.Trans, blas.NoTrans, h, hd, nd, 1, uintptr(del), uintptr(gc.z), 0, uintptr(pl)),
		m.launch("diag_blocks", hd, cuda.DevicePtr(m.gAt(ly.attL)), pl, int32(h), int32(d)),
	)
	if err != nil {
		return 0, err
	}
	if c.sparse {
		return 0, m.sp.SpMM(blas.Trans, 1, c.xs, uintptr(dz), hd, 0, m.gAt(ly.wNeigh))
	}
	if err := m.bl.Sgemm(blas.Trans, blas.NoTrans, ly.fin, hd, ns, 1, uintptr(c.xd), uintptr(dz), 0, m.gAt(ly.wNeigh)); err != nil {
		return 0, err
	}
	if l == 0 {
		return 0, nil
	}
	dx, err := m.scratch(fmt.Sprint("dx", l), int64(ns*ly.fin)*4)
	if err != nil {
		return 0, err
	}
	return dx, m.bl.Sgemm(blas.NoTrans, blas.Trans, ns, ly.fin, hd, 1, uintptr(dz), m.wAt(ly.wNeigh), 0, uintptr(dx))
}
