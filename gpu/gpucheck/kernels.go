package gpucheck

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gnnmpi/dense"
	"gnnmpi/gpu/cuda"
	"gnnmpi/internal/f16"
	"gnnmpi/model"
)

// launch1D launches fn over n threads' worth of work (the kernels loop
// grid-stride) on the default stream.
func launch1D(fn *cuda.Function, n int, args ...any) error {
	const block = 128
	grid := uint32(min(max((n+block-1)/block, 1), 1<<12))
	return fn.Launch([3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, nil, args...)
}

// devBufs allocates device buffers for a check and frees them all.
type devBufs struct {
	c    *cuda.Context
	ptrs []cuda.DevicePtr
	err  error // the first error of up
}

// up uploads s like devUpload; the first error is kept in d.err, to be
// checked before the buffers are used.
func up[T cuda.Elem](d *devBufs, s []T) cuda.DevicePtr {
	if d.err != nil {
		return 0
	}
	p, err := devUpload(d, s)
	d.err = err
	return p
}

func devUpload[T cuda.Elem](d *devBufs, s []T) (cuda.DevicePtr, error) {
	size := cuda.Bytes[T](max(len(s), 1))
	p, err := d.c.Alloc(size)
	if err != nil {
		return 0, err
	}
	d.ptrs = append(d.ptrs, p)
	return p, cuda.CopyHtoD(d.c, p, s)
}

func devDownload[T cuda.Elem](c *cuda.Context, p cuda.DevicePtr, n int) ([]T, error) {
	s := make([]T, n)
	return s, cuda.CopyDtoH(c, s, p)
}

func (d *devBufs) free() {
	for _, p := range d.ptrs {
		d.c.Free(p)
	}
}

// gatherCase checks the gather kernel name (gather_rows over float32
// tiers, gather_rows_f16 over half-precision ones) on three tiers of rows
// of a ragged width whose bases sit one element past alignment: random
// draws the rows, decode converts a row to float32 as the CPU does, and
// every value the kernel writes must equal the decoded row's bit for bit
// (NaNs included, which closeTo refuses).
func gatherCase[T cuda.Elem](c *cuda.Context, fn *cuda.Function, name string, random func(n int) []T, decode func(dst []float32, src []T), r *rand.Rand) error {
	const width, nDev, nHost, nRemote, rows = 37, 50, 70, 20, 500
	d := &devBufs{c: c}
	defer d.free()
	devRows := random(1 + nDev*width)
	host, err := cuda.HostMapped[T](c, 1+nHost*width)
	if err != nil {
		return err
	}
	defer host.Free()
	remote, err := cuda.HostMapped[T](c, nRemote*width)
	if err != nil {
		return err
	}
	defer remote.Free()
	copy(host.Host, random(len(host.Host)))
	copy(remote.Host, random(len(remote.Host)))
	tier, slot := make([]int32, rows), make([]int32, rows)
	want := make([]float32, rows*width)
	for i := range tier {
		tier[i] = int32(r.IntN(3))
		slot[i] = int32(r.IntN([]int{nDev, nHost, nRemote}[tier[i]]))
		src := [][]T{devRows[1:], host.Host[1:], remote.Host}[tier[i]]
		decode(want[i*width:(i+1)*width], src[int(slot[i])*width:][:width])
	}
	elem := cuda.DevicePtr(cuda.Bytes[T](1))
	got, err := runGather(c, d, fn, up(d, devRows)+elem, host.Dev+elem, remote.Dev, tier, slot, width)
	if err != nil {
		return err
	}
	for k := range want {
		if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
			return fmt.Errorf("%s[%d] got: %v (%#08x) want: %v (%#08x)", name, k, got[k], math.Float32bits(got[k]), want[k], math.Float32bits(want[k]))
		}
	}
	return nil
}

// runGather launches a gather kernel (gather_rows or gather_rows_f16) of
// len(tier) rows of width values from the device, host and remote tiers
// at dev, host and remote (row stride width), by the rows' tier and slot,
// and returns the float32 rows it wrote. Buffers go to d; a failed upload
// is d.err.
func runGather(c *cuda.Context, d *devBufs, fn *cuda.Function, dev, host, remote cuda.DevicePtr, tier, slot []int32, width int) ([]float32, error) {
	rows := len(tier)
	pt := up(d, tier)
	ps := up(d, slot)
	out := up(d, make([]float32, rows*width))
	if d.err != nil {
		return nil, d.err
	}
	w := int64(width)
	if err := fn.Launch([3]uint32{uint32(rows/4 + 1), 1, 1}, [3]uint32{128, 1, 1}, 0, nil,
		out, dev, w, host, w, remote, w, pt, ps, int32(rows), int32(width)); err != nil {
		return nil, err
	}
	return devDownload[float32](c, out, rows*width)
}

func randNormal(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for k := range s {
		s[k] = float32(r.NormFloat64())
	}
	return s
}

// closeTo returns an error naming the first element of got farther than tol
// (relative, plus absolute for small values) from want; tol 0 asks for
// identical bits.
func closeTo(what string, got, want []float32, tol float64) error {
	for k := range want {
		g, w := float64(got[k]), float64(want[k])
		if tol == 0 && math.Float32bits(got[k]) != math.Float32bits(want[k]) ||
			math.Abs(g-w) > tol*(1+math.Abs(w)) || math.IsNaN(g) {
			return fmt.Errorf("%s[%d] got: %v want: %v", what, k, got[k], want[k])
		}
	}
	return nil
}

// checkElementwise runs fn, a kernel of the form fn(out, ins..., n) over
// n = len(want) elements, on copies of ins and a zeroed out, and compares
// out with want within tol (closeTo: 0 asks for the same bits); name
// names the kernel in the error.
func checkElementwise(c *cuda.Context, fn *cuda.Function, name string, tol float64, want []float32, ins ...[]float32) error {
	d := &devBufs{c: c}
	defer d.free()
	n := len(want)
	out := up(d, make([]float32, n))
	args := []any{out}
	for _, in := range ins {
		args = append(args, up(d, in))
	}
	if d.err != nil {
		return d.err
	}
	if err := launch1D(fn, n, append(args, int64(n))...); err != nil {
		return err
	}
	got, err := devDownload[float32](c, out, n)
	if err != nil {
		return err
	}
	return closeTo(name, got, want, tol)
}

type kernelCheck func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error

// kernelChecks returns the check of each kernel: random inputs, the kernel
// on the device, its reference on the CPU (model's loss and Adam where
// they exist).
func kernelChecks() map[string]kernelCheck {
	const n = 4099
	checks := gatChecks()
	for name, check := range map[string]kernelCheck{
		"gather_rows": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			// Three tiers of float32 rows of a ragged width, at unaligned
			// bases.
			return gatherCase(c, fn, "gather_rows", func(n int) []float32 { return randNormal(r, n) },
				func(dst, src []float32) { copy(dst, src) }, r)
		},
		"gather_rows_f16": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			// The same over half-precision tiers: random bit patterns
			// (normal, subnormal, zero, infinite and NaN halves) must
			// convert exactly as internal/f16 does; the odd width and the
			// bases one half past alignment start rows at every 2-byte
			// offset of their 128-byte segment.
			randHalves := func(n int) []uint16 {
				h := make([]uint16, n)
				for k := range h {
					h[k] = uint16(r.Uint32())
				}
				return h
			}
			return gatherCase(c, fn, "gather_rows_f16", randHalves, f16.Decode, r)
		},
		"relu_forward": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			x := randNormal(r, n)
			want := make([]float32, n)
			for k, v := range x {
				want[k] = max(v, 0)
			}
			return checkElementwise(c, fn, "relu_forward", 0, want, x)
		},
		"relu_backward": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			x, dy := randNormal(r, n), randNormal(r, n)
			want := make([]float32, n)
			for k := range x {
				if x[k] > 0 {
					want[k] = dy[k]
				}
			}
			return checkElementwise(c, fn, "relu_backward", 0, want, dy, x)
		},
		"add_bias": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			const rows, cols = 97, 13
			d := &devBufs{c: c}
			defer d.free()
			m, b := randNormal(r, rows*cols), randNormal(r, cols)
			pm := up(d, m)
			pb := up(d, b)
			if d.err != nil {
				return d.err
			}
			if err := launch1D(fn, rows*cols, pm, pb, int64(rows), int32(cols)); err != nil {
				return err
			}
			got, err := devDownload[float32](c, pm, rows*cols)
			if err != nil {
				return err
			}
			for k := range m {
				m[k] += b[k%cols]
			}
			return closeTo("add_bias", got, m, 0)
		},
		"scale_add": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			d := &devBufs{c: c}
			defer d.free()
			x, y := randNormal(r, n), randNormal(r, n)
			px := up(d, x)
			py := up(d, y)
			if d.err != nil {
				return d.err
			}
			const a = -0.375
			if err := launch1D(fn, n, py, float32(a), px, int64(n)); err != nil {
				return err
			}
			got, err := devDownload[float32](c, py, n)
			if err != nil {
				return err
			}
			for k := range y {
				y[k] += a * x[k]
			}
			return closeTo("scale_add", got, y, 1e-6) // the GPU may fuse the multiply-add
		},
		"softmax_xent": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			const rows, cols = 61, 9
			d := &devBufs{c: c}
			defer d.free()
			logits := dense.New(rows, cols)
			copy(logits.Data, randNormal(r, rows*cols))
			labels := make([]int32, rows)
			for i := range labels {
				labels[i] = int32(r.IntN(cols))
			}
			_, wantGrad := model.SoftmaxCrossEntropy(logits, labels)
			masked := append([]int32(nil), labels...)
			masked[5] = -1 // an unlabelled row: no loss, no gradient
			for j := range cols {
				wantGrad.Data[5*cols+j] = 0
			}
			wantLoss := make([]float32, rows)
			for i := range rows {
				if masked[i] >= 0 {
					wantLoss[i] = float32(model.CrossEntropy(logits.Row(i), labels[i]))
				}
			}
			pg := up(d, make([]float32, rows*cols))
			pl := up(d, make([]float32, rows))
			px := up(d, logits.Data)
			py := up(d, masked)
			if d.err != nil {
				return d.err
			}
			if err := launch1D(fn, rows, pg, pl, px, py, int32(rows), int32(cols), float32(1)/rows); err != nil {
				return err
			}
			grad, err := devDownload[float32](c, pg, rows*cols)
			if err != nil {
				return err
			}
			loss, err := devDownload[float32](c, pl, rows)
			if err != nil {
				return err
			}
			return errors.Join(closeTo("softmax_xent grad", grad, wantGrad.Data, 1e-5), closeTo("softmax_xent loss", loss, wantLoss, 1e-5))
		},
		"mul_mask": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			x, mask := randNormal(r, n), make([]float32, n)
			for k := range mask {
				if r.IntN(2) == 0 {
					mask[k] = 2 // kept, scaled by 1/(1-p) for p = 0.5
				}
			}
			want := make([]float32, n)
			for k := range x {
				want[k] = x[k] * mask[k]
			}
			return checkElementwise(c, fn, "mul_mask", 0, want, x, mask)
		},
		"dropout_mask": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			// Against model.Dropout.Mask from the same key: the input
			// layer's (zeros draw nothing) and a hidden layer's, with
			// rows of a length that is not a multiple of 4, so that a
			// row ends inside a draw; rows keyed by their index (null
			// ids) and by global vertex ids.
			const rows, cols = 257, 37
			x := randNormal(r, rows*cols)
			for k := range x {
				if r.IntN(3) == 0 {
					x[k] = 0
				}
			}
			ids := make([]int64, rows)
			for k := range ids {
				ids[k] = r.Int64N(1 << 40)
			}
			d := &devBufs{c: c}
			defer d.free()
			px := up(d, x)
			pm := up(d, make([]float32, rows*cols))
			pids := up(d, ids)
			if d.err != nil {
				return d.err
			}
			var errs []error
			for _, skip := range []bool{true, false} {
				for _, keyed := range []bool{false, true} {
					drop := model.Dropout{Rate: 0.5, SkipZeros: skip}
					if !skip {
						drop.Rate = 0.6 // GAT's, not a multiple of 2⁻¹⁶
					}
					var hostIDs []int64
					var devIDs cuda.DevicePtr
					if keyed {
						hostIDs, devIDs = ids, pids
					}
					seed := r.Uint64()
					want := drop.Mask(nil, rows, cols, x, hostIDs, true, rand.New(rand.NewPCG(seed, 0)))
					key, t, keep, _ := drop.MaskKey(true, rand.New(rand.NewPCG(seed, 0)))
					var skipArg int32
					if skip {
						skipArg = 1
					}
					if err := launch1D(fn, rows, pm, px, devIDs, int64(rows), int32(cols), int64(key), int32(t), keep, skipArg); err != nil {
						return err
					}
					got, err := devDownload[float32](c, pm, rows*cols)
					if err != nil {
						return err
					}
					errs = append(errs, closeTo(fmt.Sprintf("dropout_mask (skip zeros %v, ids %v)", skip, keyed), got, want, 0))
				}
			}
			return errors.Join(errs...)
		},
		"col_sum": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			const rows, cols = 301, 23
			d := &devBufs{c: c}
			defer d.free()
			x := randNormal(r, rows*cols)
			px := up(d, x)
			py := up(d, make([]float32, cols))
			if d.err != nil {
				return d.err
			}
			if err := launch1D(fn, cols, py, px, int64(rows), int32(cols)); err != nil {
				return err
			}
			got, err := devDownload[float32](c, py, cols)
			if err != nil {
				return err
			}
			want := make([]float32, cols)
			for i := range rows { // in row order, as the kernel sums
				for j := range cols {
					want[j] += x[i*cols+j]
				}
			}
			return closeTo("col_sum", got, want, 1e-6)
		},
		"elu_forward": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			x := dense.New(1, n)
			copy(x.Data, randNormal(r, n))
			want := (&model.ELU{}).Forward(x)
			return checkElementwise(c, fn, "elu_forward", 1e-6, want.Data, x.Data) // expm1f is within an ulp or two
		},
		"elu_backward": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			x, dy := dense.New(1, n), dense.New(1, n)
			copy(x.Data, randNormal(r, n))
			copy(dy.Data, randNormal(r, n))
			var elu model.ELU
			y := elu.Forward(x)
			want := elu.Backward(dy)
			return checkElementwise(c, fn, "elu_backward", 1e-6, want.Data, dy.Data, y.Data)
		},
		"adam_step": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			d := &devBufs{c: c}
			defer d.free()
			w, g := randNormal(r, n), randNormal(r, n)
			opt := model.NewAdam(0.01, 5e-4)
			param := model.NewParam("w", 1, n)
			copy(param.W, w)
			copy(param.Grad(), g)
			pw := up(d, w)
			pg := up(d, g)
			pm := up(d, make([]float32, n))
			pv := up(d, make([]float32, n))
			if d.err != nil {
				return d.err
			}
			for step := 1; step <= 3; step++ {
				opt.Step([]*model.Param{param})
				bc1, bc2 := 1-math.Pow(float64(opt.Beta1), float64(step)), 1-math.Pow(float64(opt.Beta2), float64(step))
				if err := launch1D(fn, n, pw, pg, pm, pv, int64(n), float32(float64(opt.LR)/bc1), float32(math.Sqrt(bc2)),
					opt.Beta1, opt.Beta2, opt.Eps, opt.WeightDecay); err != nil {
					return err
				}
			}
			got, err := devDownload[float32](c, pw, n)
			if err != nil {
				return err
			}
			return closeTo("adam_step", got, param.W, 1e-5)
		},
	} {
		checks[name] = check
	}
	return checks
}
