package gpucheck

import (
	"errors"
	"math"
	"math/rand/v2"

	"gnnmpi/gpu/cuda"
	"gnnmpi/model"
	"gnnmpi/sparse"
)

// gatRef is a random GAT layer's attention on the CPU: its inputs (the
// edges of model.AttendedEdges with their transpose, Z, the attention
// vectors, dropout scales and dL/dout) and every intermediate the GAT
// kernels compute, by the formulas of model.GAT, in float64.
type gatRef struct {
	nd, ns, h, d, od int
	concat           bool
	ptr, src, dst    []int32
	tptr, tedge      []int32
	z, attL, attR    []float32 // NSrc×h·d; h×d each
	drop, dy         []float32 // E×h; NDst×od
	el, er, s, alpha []float32 // NDst×h, NSrc×h, E×h, E×h
	out              []float32 // NDst×od
	dal, ds          []float32 // E×h
	del, der, dz     []float32 // NDst×h, NSrc×h, NSrc×h·d
	dattL, dattR     []float32 // h×d
}

// newGATRef draws a layer of 3 heads of width 5 over a random block of 37
// destinations and 53 sources (some rows empty: the self-loop only), heads
// concatenated or averaged, with attention dropout 0.3, and computes its
// reference.
func newGATRef(r *rand.Rand, concat bool) *gatRef {
	g := &gatRef{nd: 37, ns: 53, h: 3, d: 5, concat: concat}
	a := &sparse.CSR{NRows: int64(g.nd), NCols: int64(g.ns), Indptr: make([]int64, g.nd+1)}
	for i := range g.nd {
		for range r.IntN(5) {
			a.Indices = append(a.Indices, int64(r.IntN(g.ns)))
		}
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	g.ptr, g.src = model.AttendedEdges(a, nil, []int32(nil))
	g.dst = model.EdgeDestinations(g.ptr, nil)
	g.tptr, g.tedge = model.EdgesBySource(g.src, g.ns, nil, nil)
	h, d, hd := g.h, g.d, g.h*g.d
	g.od = d
	if concat {
		g.od = hd
	}
	g.z, g.attL, g.attR = randNormal(r, g.ns*hd), randNormal(r, hd), randNormal(r, hd)
	g.drop = model.AttentionMask(nil, g.ptr, g.src, nil, h, 0.3, r)
	g.dy = randNormal(r, g.nd*g.od)
	g.forward()
	g.backward()
	return g
}

// zk returns head k of row j of Z.
func (g *gatRef) zk(j, k int) []float32 { return g.z[(j*g.h+k)*g.d : (j*g.h+k+1)*g.d] }

// dot returns a·b in float64.
func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// hs returns the weight of one head in the output: 1, or 1/h averaged.
func (g *gatRef) hs() float64 {
	if g.concat {
		return 1
	}
	return 1 / float64(g.h)
}

// outCol returns the column of dL/dout that head k's column c reads.
func (g *gatRef) outCol(k, c int) int {
	if g.concat {
		return k*g.d + c
	}
	return c
}

func (g *gatRef) forward() {
	h, d, ne := g.h, g.d, len(g.src)
	g.el, g.er = make([]float32, g.nd*h), make([]float32, g.ns*h)
	for j := range g.ns {
		for k := range h {
			g.er[j*h+k] = float32(dot(g.attR[k*d:(k+1)*d], g.zk(j, k)))
			if j < g.nd {
				g.el[j*h+k] = float32(dot(g.attL[k*d:(k+1)*d], g.zk(j, k)))
			}
		}
	}
	g.s, g.alpha = make([]float32, ne*h), make([]float32, ne*h)
	g.out = make([]float32, g.nd*g.od)
	for i := range g.nd {
		for k := range h {
			lo, hi := int(g.ptr[i]), int(g.ptr[i+1])
			mx, sum := math.Inf(-1), 0.0
			for e := lo; e < hi; e++ {
				g.s[e*h+k] = g.el[i*h+k] + g.er[int(g.src[e])*h+k]
				mx = math.Max(mx, leaky(g.s[e*h+k]))
			}
			for e := lo; e < hi; e++ {
				sum += math.Exp(leaky(g.s[e*h+k]) - mx)
			}
			for e := lo; e < hi; e++ {
				a := math.Exp(leaky(g.s[e*h+k])-mx) / sum
				g.alpha[e*h+k] = float32(a)
				for c := range d {
					g.out[i*g.od+g.outCol(k, c)] += float32(g.hs() * a * float64(g.drop[e*h+k]) * float64(g.zk(int(g.src[e]), k)[c]))
				}
			}
		}
	}
}

// leaky returns LeakyReLU(s) in float64.
func leaky(s float32) float64 {
	if s < 0 {
		return model.LeakySlope * float64(s)
	}
	return float64(s)
}

func (g *gatRef) backward() {
	h, d, hd, ne := g.h, g.d, g.h*g.d, len(g.src)
	dyk := func(i, k int) []float32 {
		if g.concat {
			return g.dy[i*g.od+k*d : i*g.od+(k+1)*d]
		}
		return g.dy[i*g.od : (i+1)*g.od]
	}
	g.dal, g.ds = make([]float32, ne*h), make([]float32, ne*h)
	g.del, g.der, g.dz = make([]float32, g.nd*h), make([]float32, g.ns*h), make([]float32, g.ns*hd)
	for e := range ne {
		for k := range h {
			g.dal[e*h+k] = float32(g.hs() * dot(dyk(int(g.dst[e]), k), g.zk(int(g.src[e]), k)) * float64(g.drop[e*h+k]))
		}
	}
	for i := range g.nd {
		for k := range h {
			var sum float64
			for e := g.ptr[i]; e < g.ptr[i+1]; e++ {
				sum += float64(g.alpha[int(e)*h+k]) * float64(g.dal[int(e)*h+k])
			}
			for e := g.ptr[i]; e < g.ptr[i+1]; e++ {
				q := int(e)*h + k
				v := float64(g.alpha[q]) * (float64(g.dal[q]) - sum)
				if g.s[q] <= 0 {
					v *= model.LeakySlope
				}
				g.ds[q] = float32(v)
				g.del[i*h+k] += float32(v)
				g.der[int(g.src[e])*h+k] += float32(v)
			}
		}
	}
	g.dattL, g.dattR = make([]float32, hd), make([]float32, hd)
	for e := range ne {
		i, j := int(g.dst[e]), int(g.src[e])
		for k := range h {
			a := g.hs() * float64(g.alpha[e*h+k]) * float64(g.drop[e*h+k])
			for c := range d {
				g.dz[j*hd+k*d+c] += float32(a * float64(dyk(i, k)[c]))
			}
		}
	}
	for j := range g.ns {
		for k := range h {
			for c := range d {
				q := k*d + c
				g.dz[j*hd+q] += g.der[j*h+k] * g.attR[q]
				g.dattR[q] += g.der[j*h+k] * g.zk(j, k)[c]
				if j < g.nd {
					g.dz[j*hd+q] += g.del[j*h+k] * g.attL[q]
					g.dattL[q] += g.del[j*h+k] * g.zk(j, k)[c]
				}
			}
		}
	}
}

// gatCase runs a GAT kernel on the device: up uploads the reference's
// arrays, run launches the kernel, and each output buffer is compared with
// its reference within 1e-5 (the device sums in float32, in its own order).
type gatCase struct {
	d    *devBufs
	outs []gatOut
}

type gatOut struct {
	name string
	p    cuda.DevicePtr
	want []float32
}

// out allocates a zeroed output buffer for want.
func (gc *gatCase) out(name string, want []float32) cuda.DevicePtr {
	p := up(gc.d, make([]float32, len(want)))
	gc.outs = append(gc.outs, gatOut{name, p, want})
	return p
}

// check downloads the outputs and compares them.
func (gc *gatCase) check() error {
	var errs []error
	for _, o := range gc.outs {
		got, err := devDownload[float32](gc.d.c, o.p, len(o.want))
		if err == nil {
			err = closeTo(o.name, got, o.want, 1e-5)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// gatKernel returns the check of a GAT kernel: for concatenated and for
// averaged heads, launch runs it (its arguments built with gc.out for the
// outputs and up for the inputs) and its outputs must match the reference.
func gatKernel(launch func(gc *gatCase, fn *cuda.Function, g *gatRef) error) kernelCheck {
	return func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
		for _, concat := range []bool{true, false} {
			gc := &gatCase{d: &devBufs{c: c}}
			err := launch(gc, fn, newGATRef(r, concat))
			if err == nil {
				err = gc.check()
			}
			gc.d.free()
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// gatChecks returns the checks of the GAT kernels of gat.cu against
// gatRef.
func gatChecks() map[string]kernelCheck {
	i32 := func(v int) int32 { return int32(v) }
	cat := func(g *gatRef) int32 {
		if g.concat {
			return 1
		}
		return 0
	}
	return map[string]kernelCheck{
		"gat_scores": gatKernel(func(gc *gatCase, fn *cuda.Function, g *gatRef) error {
			el, er := gc.out("el", g.el), gc.out("er", g.er)
			z, al, ar := up(gc.d, g.z), up(gc.d, g.attL), up(gc.d, g.attR)
			if gc.d.err != nil {
				return gc.d.err
			}
			return launch1D(fn, g.ns*g.h, el, er, z, al, ar, i32(g.ns), i32(g.nd), i32(g.h), i32(g.d))
		}),
		"gat_softmax": gatKernel(func(gc *gatCase, fn *cuda.Function, g *gatRef) error {
			s, alpha := gc.out("s", g.s), gc.out("alpha", g.alpha)
			el, er, ptr, src := up(gc.d, g.el), up(gc.d, g.er), up(gc.d, g.ptr), up(gc.d, g.src)
			if gc.d.err != nil {
				return gc.d.err
			}
			return launch1D(fn, g.nd*g.h, s, alpha, el, er, ptr, src, i32(g.nd), i32(g.h), float32(model.LeakySlope))
		}),
		"gat_aggregate": gatKernel(func(gc *gatCase, fn *cuda.Function, g *gatRef) error {
			out := gc.out("out", g.out)
			alpha, drop, z, ptr, src := up(gc.d, g.alpha), up(gc.d, g.drop), up(gc.d, g.z), up(gc.d, g.ptr), up(gc.d, g.src)
			if gc.d.err != nil {
				return gc.d.err
			}
			return launch1D(fn, g.nd*g.od, out, alpha, drop, z, ptr, src, i32(g.nd), i32(g.h), i32(g.d), cat(g))
		}),
		"gat_dalpha": gatKernel(func(gc *gatCase, fn *cuda.Function, g *gatRef) error {
			dal := gc.out("dal", g.dal)
			dy, z, drop, dst, src := up(gc.d, g.dy), up(gc.d, g.z), up(gc.d, g.drop), up(gc.d, g.dst), up(gc.d, g.src)
			if gc.d.err != nil {
				return gc.d.err
			}
			return launch1D(fn, len(g.src)*g.h, dal, dy, z, drop, dst, src, int64(len(g.src)), i32(g.h), i32(g.d), cat(g))
		}),
		"gat_softmax_backward": gatKernel(func(gc *gatCase, fn *cuda.Function, g *gatRef) error {
			ds, del := gc.out("ds", g.ds), gc.out("del", g.del)
			alpha, dal, s, ptr := up(gc.d, g.alpha), up(gc.d, g.dal), up(gc.d, g.s), up(gc.d, g.ptr)
			if gc.d.err != nil {
				return gc.d.err
			}
			return launch1D(fn, g.nd*g.h, ds, del, alpha, dal, s, ptr, i32(g.nd), i32(g.h), float32(model.LeakySlope))
		}),
		"gat_src_grad": gatKernel(func(gc *gatCase, fn *cuda.Function, g *gatRef) error {
			dz, der := gc.out("dz", g.dz), gc.out("der", g.der)
			dy, alpha, drop, ds, del := up(gc.d, g.dy), up(gc.d, g.alpha), up(gc.d, g.drop), up(gc.d, g.ds), up(gc.d, g.del)
			al, ar, tptr, tedge, dst := up(gc.d, g.attL), up(gc.d, g.attR), up(gc.d, g.tptr), up(gc.d, g.tedge), up(gc.d, g.dst)
			if gc.d.err != nil {
				return gc.d.err
			}
			return launch1D(fn, g.ns*g.h*g.d, dz, der, dy, alpha, drop, ds, del, al, ar, tptr, tedge, dst,
				i32(g.ns), i32(g.nd), i32(g.h), i32(g.d), cat(g))
		}),
		"diag_blocks": gatKernel(func(gc *gatCase, fn *cuda.Function, g *gatRef) error {
			// P = Eᵀ·Z[:rows] (h×h·d) on the CPU for E = der (all rows)
			// and E = del (the destinations); the diagonal blocks are
			// da_r and da_l.
			hd := g.h * g.d
			for _, tc := range []struct {
				name       string
				coef, want []float32
				rows       int
			}{{"datt_r", g.der, g.dattR, g.ns}, {"datt_l", g.del, g.dattL, g.nd}} {
				p := make([]float32, g.h*hd)
				for j := range tc.rows {
					for k := range g.h {
						for q := range hd {
							p[k*hd+q] += tc.coef[j*g.h+k] * g.z[j*hd+q]
						}
					}
				}
				dst, pp := gc.out(tc.name, tc.want), up(gc.d, p)
				if gc.d.err != nil {
					return gc.d.err
				}
				if err := launch1D(fn, hd, dst, pp, i32(g.h), i32(g.d)); err != nil {
					return err
				}
			}
			return nil
		}),
	}
}
