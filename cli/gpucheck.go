package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/collective"
	"gnnmpi/collective/collectivetest"
	"gnnmpi/dense"
	"gnnmpi/gpu"
	gpublas "gnnmpi/gpu/blas"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/kernels"
	"gnnmpi/graph"
	"gnnmpi/model"
	"gnnmpi/nccl"
	"gnnmpi/sparse"
	"gnnmpi/train"
)

// Verdicts of a gpucheck row.
const (
	checkPass = "PASS"
	checkFail = "FAIL"
	checkSkip = "SKIP"
)

// GPUCheck is one row of gpucheck's table: a check, its verdict over all
// ranks (FAIL if any rank failed, SKIP if every rank skipped) and rank 0's
// detail and numbers.
type GPUCheck struct {
	Name        string             `json:"name"`
	Result      string             `json:"result"`
	RanksFailed int64              `json:"ranks_failed"`
	Detail      string             `json:"detail,omitempty"`
	Numbers     map[string]float64 `json:"numbers,omitempty"`
}

// GPUCheckResult is gpucheck's report (its --report file).
type GPUCheckResult struct {
	Device     string     `json:"device"`
	Capability string     `json:"capability"`
	Ranks      int        `json:"ranks"`
	Backend    string     `json:"backend"`
	Checks     []GPUCheck `json:"checks"`
	Passed     int        `json:"passed"`
	Failed     int        `json:"failed"`
	Skipped    int        `json:"skipped"`
}

func gpucheckCmd() *Command {
	return &Command{
		Name:    "gpucheck",
		Summary: "check the GPU path on this machine: kernels, cuBLAS/cuSPARSE, NCCL, zero-copy gather bandwidth",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			jsonFile := fs.String("report", "", "also write every check and number to this JSON file (rank 0; the global --json prints them with the run's metrics)")
			rows := fs.Int("rows", 1<<16, "zero-copy benchmark: rows gathered per run")
			width := fs.Int("width", 256, "zero-copy benchmark: floats per row")
			iters := fs.Int("iters", 5, "zero-copy benchmark: timed runs of each method (the best counts)")
			seed := fs.Uint64("seed", 1, "seed of the random inputs")
			data := fs.String("data", "data/cora", "training check: dataset (GraphSAGE, dense features, trained on the CPU and with --device cuda)")
			epochs := fs.Int("train-epochs", 3, "training check: epochs of each run (0: skip the check)")
			return func(env *Env) error {
				if *rows < 1 || *width < 1 || *iters < 1 {
					return fmt.Errorf("gpucheck: --rows, --width and --iters must be positive")
				}
				return gpucheck(env, gpucheckOptions{jsonFile: *jsonFile, rows: *rows, width: *width, iters: *iters, seed: *seed,
					data: *data, trainEpochs: *epochs})
			}
		},
	}
}

type gpucheckOptions struct {
	jsonFile           string
	rows, width, iters int
	seed               uint64
	data               string // the training check's dataset
	trainEpochs        int
}

// gpuDevice returns the CUDA device ordinal of this rank: its local rank
// (from the launcher, or its rank in an in-process run) modulo the devices.
func gpuDevice(env *Env) (int, error) {
	n, err := cuda.DeviceCount()
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("gpucheck: no CUDA device")
	}
	local, _, ok := gpu.LocalRankFromEnv(getenv)
	if !ok || env.Backend == "inproc" {
		local = env.Comm.Rank()
	}
	return local % n, nil
}

func gpucheck(env *Env, o gpucheckOptions) error {
	c := env.Comm
	// Open the device; every rank learns whether any rank failed before
	// the checks communicate.
	var ctx *cuda.Context
	dev, err := gpuDevice(env)
	if err == nil {
		ctx, err = cuda.Open(dev)
	}
	bad := []int64{0}
	if err != nil {
		bad[0] = 1
	}
	if aerr := collective.AllreduceSlice(c, bad, collective.Sum); aerr != nil {
		return aerr
	}
	if err != nil {
		return fmt.Errorf("gpucheck: %w", err)
	}
	if bad[0] > 0 {
		return fmt.Errorf("gpucheck: %d rank(s) could not open a GPU", bad[0])
	}
	defer ctx.Close()

	r := rand.New(rand.NewPCG(o.seed, uint64(c.Rank())))
	var rows []GPUCheck
	add := func(name string, numbers map[string]float64, err error) {
		row := GPUCheck{Name: name, Result: checkPass, Numbers: numbers}
		var skip skipError
		switch {
		case errors.As(err, &skip):
			row.Result, row.Detail = checkSkip, skip.why
		case err != nil:
			row.Result, row.Detail = checkFail, err.Error()
			fmt.Fprintf(env.Err, "gnnmpi: rank %d: gpucheck %s: %v\n", c.Rank(), name, err)
		}
		rows = append(rows, row)
	}

	// (a) every kernel against its CPU reference.
	mod, err := ctx.Compile(kernels.Source(), "kernels.cu")
	if err != nil {
		return fmt.Errorf("gpucheck: compiling the kernels: %w", err)
	}
	refs := kernelChecks()
	for _, name := range kernels.Names {
		check, ok := refs[name]
		if !ok {
			add("kernel/"+name, nil, fmt.Errorf("no CPU reference in gpucheck"))
			continue
		}
		fn, err := mod.Function(name)
		if err == nil {
			err = check(ctx, fn, r)
		}
		add("kernel/"+name, nil, err)
	}

	// (b) cuBLAS and cuSPARSE against dense and sparse.
	add("cublas/sgemm", nil, ctx.Do(func() error { return checkSgemm(ctx, r) }))
	add("cusparse/spmm", nil, ctx.Do(func() error { return checkSpMM(ctx, r) }))

	// (c) NCCL against the conformance suite, with ≥ 2 ranks under MPI.
	rows = append(rows, ncclChecks(env, ctx)...)

	// (d) the PyTorch-Direct microbenchmark.
	nums, err := zeroCopyBench(ctx, r, o)
	add("bench/zero-copy-gather", nums, err)

	// (e) the 3-epoch Cora training on the GPU against the CPU.
	if o.trainEpochs > 0 {
		nums, err := trainCheck(env, o)
		add("train/gpu-vs-cpu", nums, err)
	} else {
		add("train/gpu-vs-cpu", nil, skipError{"--train-epochs 0"})
	}

	// Verdicts over the ranks.
	fails, skips := make([]int64, len(rows)), make([]int64, len(rows))
	for i, row := range rows {
		switch row.Result {
		case checkFail:
			fails[i] = 1
		case checkSkip:
			skips[i] = 1
		}
	}
	if err := collective.AllreduceSlice(c, fails, collective.Sum); err != nil {
		return err
	}
	if err := collective.AllreduceSlice(c, skips, collective.Sum); err != nil {
		return err
	}
	maj, min := ctx.Capability()
	res := GPUCheckResult{Device: ctx.Name(), Capability: fmt.Sprintf("%d.%d", maj, min), Ranks: c.Size(), Backend: env.Backend}
	for i, row := range rows {
		row.RanksFailed = fails[i]
		switch {
		case fails[i] > 0:
			row.Result = checkFail
			res.Failed++
		case skips[i] == int64(c.Size()):
			row.Result = checkSkip
			res.Skipped++
		default:
			row.Result = checkPass
			res.Passed++
		}
		res.Checks = append(res.Checks, row)
	}
	env.Printf("gpucheck: %s (capability %s), %d rank(s), backend %s\n", res.Device, res.Capability, res.Ranks, res.Backend)
	for _, row := range res.Checks {
		env.Printf("  %-26s %-4s  %s\n", row.Name, row.Result, row.summary())
	}
	env.Printf("gpucheck: %d passed, %d failed, %d skipped\n", res.Passed, res.Failed, res.Skipped)
	if c.Rank() == 0 && o.jsonFile != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonFile, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("gpucheck: %w", err)
		}
	}
	if err := env.Finish(map[string]any{"gpucheck": res}); err != nil {
		return err
	}
	if res.Failed > 0 {
		return fmt.Errorf("gpucheck: %d check(s) failed", res.Failed)
	}
	return nil
}

// summary is the row's detail, or its numbers.
func (g GPUCheck) summary() string {
	if g.Detail != "" {
		s, _, _ := strings.Cut(g.Detail, "\n")
		return s
	}
	n := g.Numbers
	if n == nil {
		return ""
	}
	if _, ok := n["epochs"]; ok {
		return fmt.Sprintf("%.0f epochs, last loss GPU %.6g CPU %.6g; median epoch GPU %.3gs CPU %.3gs", n["epochs"],
			n[fmt.Sprintf("gpu_loss_%.0f", n["epochs"])], n[fmt.Sprintf("cpu_loss_%.0f", n["epochs"])], n["gpu_epoch_s"], n["cpu_epoch_s"])
	}
	link := "link bandwidth unknown"
	if n["link_gbps"] > 0 {
		link = fmt.Sprintf("%.0f%% / %.0f%% of %.1f GB/s", 100*n["zero_copy_gbps"]/n["link_gbps"],
			100*n["cpu_gather_copy_gbps"]/n["link_gbps"], n["link_gbps"])
	}
	return fmt.Sprintf("zero-copy %.2f GB/s, CPU gather+copy %.2f GB/s (%s)", n["zero_copy_gbps"], n["cpu_gather_copy_gbps"], link)
}

// skipError marks a check that did not run, and why.
type skipError struct{ why string }

func (s skipError) Error() string { return s.why }

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

func randNormal(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for k := range s {
		s[k] = float32(r.NormFloat64())
	}
	return s
}

// near returns an error naming the first element of got farther than tol
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

type kernelCheck func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error

// kernelChecks returns the check of each kernel: random inputs, the kernel
// on the device, its reference on the CPU (model's loss and Adam where
// they exist).
func kernelChecks() map[string]kernelCheck {
	const n = 4099
	return map[string]kernelCheck{
		"gather_rows": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			// Three tiers of rows of a ragged width, at unaligned bases.
			const width, nDev, nHost, nRemote, rows = 37, 50, 70, 20, 500
			d := &devBufs{c: c}
			defer d.free()
			devRows := randNormal(r, 1+nDev*width)
			host, err := cuda.HostMapped[float32](c, 1+nHost*width)
			if err != nil {
				return err
			}
			defer host.Free()
			remote, err := cuda.HostMapped[float32](c, nRemote*width)
			if err != nil {
				return err
			}
			defer remote.Free()
			copy(host.Host, randNormal(r, len(host.Host)))
			copy(remote.Host, randNormal(r, len(remote.Host)))
			tier, slot := make([]int32, rows), make([]int32, rows)
			want := make([]float32, 0, rows*width)
			for i := range tier {
				tier[i] = int32(r.IntN(3))
				slot[i] = int32(r.IntN([]int{nDev, nHost, nRemote}[tier[i]]))
				src := [][]float32{devRows[1:], host.Host[1:], remote.Host}[tier[i]]
				want = append(want, src[int(slot[i])*width:][:width]...)
			}
			pd := up(d, devRows)
			pt := up(d, tier)
			ps := up(d, slot)
			out := up(d, make([]float32, rows*width))
			if d.err != nil {
				return d.err
			}
			w := int64(width)
			if err := fn.Launch([3]uint32{uint32(rows/4 + 1), 1, 1}, [3]uint32{128, 1, 1}, 0, nil,
				out, pd+4, w, host.Dev+4, w, remote.Dev, w, pt, ps, int32(rows), int32(width)); err != nil {
				return err
			}
			got, err := devDownload[float32](c, out, rows*width)
			if err != nil {
				return err
			}
			return closeTo("gather_rows", got, want, 0)
		},
		"relu_forward": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			d := &devBufs{c: c}
			defer d.free()
			x := randNormal(r, n)
			px := up(d, x)
			py := up(d, make([]float32, n))
			if d.err != nil {
				return d.err
			}
			if err := launch1D(fn, n, py, px, int64(n)); err != nil {
				return err
			}
			got, err := devDownload[float32](c, py, n)
			if err != nil {
				return err
			}
			want := make([]float32, n)
			for k, v := range x {
				want[k] = max(v, 0)
			}
			return closeTo("relu_forward", got, want, 0)
		},
		"relu_backward": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			d := &devBufs{c: c}
			defer d.free()
			x, dy := randNormal(r, n), randNormal(r, n)
			px := up(d, x)
			pdy := up(d, dy)
			pdx := up(d, make([]float32, n))
			if d.err != nil {
				return d.err
			}
			if err := launch1D(fn, n, pdx, pdy, px, int64(n)); err != nil {
				return err
			}
			got, err := devDownload[float32](c, pdx, n)
			if err != nil {
				return err
			}
			want := make([]float32, n)
			for k := range x {
				if x[k] > 0 {
					want[k] = dy[k]
				}
			}
			return closeTo("relu_backward", got, want, 0)
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
			d := &devBufs{c: c}
			defer d.free()
			x, mask := randNormal(r, n), make([]float32, n)
			for k := range mask {
				if r.IntN(2) == 0 {
					mask[k] = 2 // kept, scaled by 1/(1-p) for p = 0.5
				}
			}
			px := up(d, x)
			pm := up(d, mask)
			py := up(d, make([]float32, n))
			if d.err != nil {
				return d.err
			}
			if err := launch1D(fn, n, py, px, pm, int64(n)); err != nil {
				return err
			}
			got, err := devDownload[float32](c, py, n)
			if err != nil {
				return err
			}
			for k := range x {
				x[k] *= mask[k]
			}
			return closeTo("mul_mask", got, x, 0)
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
		"adam_step": func(c *cuda.Context, fn *cuda.Function, r *rand.Rand) error {
			d := &devBufs{c: c}
			defer d.free()
			w, g := randNormal(r, n), randNormal(r, n)
			opt := model.NewAdam(0.01, 5e-4)
			param := &model.Param{Rows: 1, Cols: n, W: append([]float32(nil), w...), G: g}
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
	}
}

// checkSgemm compares cuBLAS's Sgemm with dense.Gemm for the four
// transpose cases, with alpha and beta. The context must be current.
func checkSgemm(c *cuda.Context, r *rand.Rand) error {
	b, err := gpublas.NewBLAS(0)
	if err != nil {
		return err
	}
	defer b.Close()
	const m, n, k = 67, 45, 33
	for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
		for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			d := &devBufs{c: c}
			a, bm, cm := randNormal(r, m*k), randNormal(r, k*n), randNormal(r, m*n)
			pa, err := devUpload(d, a)
			if err == nil {
				var pb, pc cuda.DevicePtr
				if pb, err = devUpload(d, bm); err == nil {
					if pc, err = devUpload(d, cm); err == nil {
						err = b.Sgemm(tA, tB, m, n, k, 1.5, uintptr(pa), uintptr(pb), -0.5, uintptr(pc))
						var got []float32
						if err == nil {
							got, err = devDownload[float32](c, pc, m*n)
						}
						if err == nil {
							dense.Gemm(dense.BLASOrDefault(nil), tA, tB, m, n, k, 1.5, a, bm, -0.5, cm)
							err = closeTo(fmt.Sprintf("sgemm %c%c", tA, tB), got, cm, 1e-4)
						}
					}
				}
			}
			d.free()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// cuda.Memory is the device memory that gpucheck hands to NCCL and to
// cuSPARSE's workspace.
var (
	_ nccl.DeviceMemory = cuda.Memory{}
	_ gpublas.Allocator = cuda.Memory{}
)

// checkSpMM compares cuSPARSE's SpMM with sparse.Mul for op(A) = A and
// Aᵀ. The context must be current.
func checkSpMM(c *cuda.Context, r *rand.Rand) error {
	s, err := gpublas.NewSparse(cuda.Memory{Ctx: c}, 0)
	if err != nil {
		return err
	}
	defer s.Close()
	const rows, cols, n = 83, 57, 19
	dd := make([]float64, rows*cols)
	for i := range dd {
		if r.IntN(4) == 0 {
			dd[i] = float64(float32(r.NormFloat64()))
		}
	}
	a := sparse.FromDense(rows, cols, dd)
	at := make([]float64, len(dd))
	for i := range rows {
		for j := range cols {
			at[j*rows+i] = dd[i*cols+j]
		}
	}
	aT := sparse.FromDense(cols, rows, at)
	off, ind, val := make([]int32, len(a.Indptr)), make([]int32, len(a.Indices)), make([]float32, len(a.Values))
	for i, p := range a.Indptr {
		off[i] = int32(p)
	}
	for i := range ind {
		ind[i], val[i] = int32(a.Indices[i]), float32(a.Values[i])
	}
	d := &devBufs{c: c}
	defer d.free()
	po := up(d, off)
	pi := up(d, ind)
	pv := up(d, val)
	if d.err != nil {
		return d.err
	}
	csr := gpublas.CSR{Rows: rows, Cols: cols, NNZ: len(ind), RowOffsets: uintptr(po), ColIndices: uintptr(pi), Values: uintptr(pv)}
	for _, tc := range []struct {
		t   blas.Transpose
		opA *sparse.CSR
	}{{blas.NoTrans, a}, {blas.Trans, aT}} {
		in, out := int(tc.opA.NCols), int(tc.opA.NRows)
		x, y := randNormal(r, in*n), randNormal(r, out*n)
		px := up(d, x)
		py := up(d, y)
		if d.err != nil {
			return d.err
		}
		if err := s.SpMM(tc.t, 2, csr, uintptr(px), n, 0.5, uintptr(py)); err != nil {
			return err
		}
		got, err := devDownload[float32](c, py, out*n)
		if err != nil {
			return err
		}
		xd := make([]float64, len(x))
		for i, v := range x {
			xd[i] = float64(v)
		}
		p, err := sparse.Mul(tc.opA, sparse.FromDense(in, n, xd))
		if err != nil {
			return err
		}
		want := make([]float32, len(y))
		for i := range want {
			want[i] = 0.5 * y[i]
		}
		for i := range p.NRows {
			for q := p.Indptr[i]; q < p.Indptr[i+1]; q++ {
				want[i*int64(n)+p.Indices[q]] += 2 * float32(p.Values[q])
			}
		}
		if err := closeTo(fmt.Sprintf("spmm %c", tc.t), got, want, 1e-4); err != nil {
			return err
		}
	}
	return nil
}

// ncclChecks runs the collective conformance suite on NCCL over the
// device's memory, one row per case; with fewer than 2 ranks or without
// MPI one SKIP row.
func ncclChecks(env *Env, ctx *cuda.Context) []GPUCheck {
	c := env.Comm
	skip := func(why string) []GPUCheck {
		return []GPUCheck{{Name: "nccl", Result: checkSkip, Detail: why}}
	}
	switch {
	case c.Size() < 2:
		return skip("needs 2 or more ranks")
	case env.Backend != "mpi":
		return skip("needs the MPI backend (mpirun), not " + env.Backend)
	}
	var rows []GPUCheck
	err := ctx.Do(func() error {
		nc, err := nccl.New(c, cuda.Memory{Ctx: ctx})
		if errors.Is(err, nccl.ErrNoNCCL) {
			rows = skip(err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		defer nc.Free()
		nccl := collective.WithStats(nc, collective.StatsOf(c))
		for _, tc := range collectivetest.Cases() {
			row := GPUCheck{Name: "nccl/" + tc.Name, Result: checkPass}
			if c.Size() < tc.MinRanks {
				row.Result, row.Detail = checkSkip, fmt.Sprintf("needs %d ranks", tc.MinRanks)
			} else {
				restore := collective.SetPhase(nccl, "gpucheck-"+tc.Name)
				err := tc.Fn(nccl)
				restore()
				if err != nil {
					if collectivetest.IsCommError(err) {
						return fmt.Errorf("nccl %s: %w", tc.Name, err)
					}
					row.Result, row.Detail = checkFail, err.Error()
				}
			}
			rows = append(rows, row)
		}
		return nil
	})
	if err != nil {
		return []GPUCheck{{Name: "nccl", Result: checkFail, Detail: err.Error()}}
	}
	return rows
}

// zeroCopyBench gathers o.rows random rows of o.width floats from a table
// of 4·o.rows rows in mapped host memory two ways: gather_rows reading the
// table zero-copy into device memory, and a CPU gather into a host buffer
// followed by one cuMemcpyHtoD of the block. Each is timed with CUDA
// events (best of o.iters). The check fails only if the two results
// differ.
func zeroCopyBench(c *cuda.Context, r *rand.Rand, o gpucheckOptions) (map[string]float64, error) {
	rows, width := o.rows, o.width
	table, err := cuda.HostMapped[float32](c, 4*rows*width)
	if err != nil {
		return nil, err
	}
	defer table.Free()
	for k := range table.Host {
		table.Host[k] = float32(k % 1021)
	}
	tier, slot := make([]int32, rows), make([]int32, rows)
	for i := range slot {
		tier[i], slot[i] = 1, int32(r.IntN(4*rows))
	}
	mod, err := c.Compile(kernels.Source(), "kernels.cu")
	if err != nil {
		return nil, err
	}
	fn, err := mod.Function("gather_rows")
	if err != nil {
		return nil, err
	}
	d := &devBufs{c: c}
	defer d.free()
	pt, err := devUpload(d, tier)
	if err != nil {
		return nil, err
	}
	ps, err := devUpload(d, slot)
	if err != nil {
		return nil, err
	}
	zc, err := c.Alloc(int64(4 * rows * width))
	if err != nil {
		return nil, err
	}
	d.ptrs = append(d.ptrs, zc)
	cp, err := c.Alloc(int64(4 * rows * width))
	if err != nil {
		return nil, err
	}
	d.ptrs = append(d.ptrs, cp)
	start, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	defer start.Destroy()
	end, err := c.NewEvent()
	if err != nil {
		return nil, err
	}
	defer end.Destroy()
	timed := func(f func() error) (float64, error) {
		best := math.Inf(1)
		for range o.iters + 1 { // the first run warms up
			if err := start.Record(nil); err != nil {
				return 0, err
			}
			if err := f(); err != nil {
				return 0, err
			}
			if err := end.Record(nil); err != nil {
				return 0, err
			}
			if err := end.Synchronize(); err != nil {
				return 0, err
			}
			ms, err := cuda.Elapsed(start, end)
			if err != nil {
				return 0, err
			}
			best = min(best, float64(ms))
		}
		return best, nil
	}
	w := int64(width)
	grid := uint32(min((rows+3)/4, 1<<16))
	zcMS, err := timed(func() error {
		return fn.Launch([3]uint32{grid, 1, 1}, [3]uint32{128, 1, 1}, 0, nil, zc, cuda.DevicePtr(0), w, table.Dev, w,
			cuda.DevicePtr(0), w, pt, ps, int32(rows), int32(width))
	})
	if err != nil {
		return nil, err
	}
	block := make([]float32, rows*width)

	cpMS, err := timed(func() error {
		for i, s := range slot {
			copy(block[i*width:(i+1)*width], table.Host[int(s)*width:][:width])
		}
		return cuda.CopyHtoD(c, cp, block)
	})
	if err != nil {
		return nil, err
	}

	gotZC, err := devDownload[float32](c, zc, rows*width)
	if err != nil {
		return nil, err
	}
	gotCP, err := devDownload[float32](c, cp, rows*width)
	if err != nil {
		return nil, err
	}
	bytes := float64(4 * rows * width)
	nums := map[string]float64{
		"rows": float64(rows), "width": float64(width), "bytes": bytes,
		"zero_copy_ms": zcMS, "cpu_gather_copy_ms": cpMS,
		"zero_copy_gbps": rateGBps(bytes, zcMS), "cpu_gather_copy_gbps": rateGBps(bytes, cpMS),
		"link_gbps": linkGBps(c.Device()),
	}
	if err := closeTo("zero-copy gather vs CPU gather", gotZC, gotCP, 0); err != nil {
		return nums, err
	}
	return nums, nil
}

func rateGBps(bytes, ms float64) float64 {
	if ms <= 0 {
		return 0
	}
	return bytes / (ms * 1e-3) / 1e9
}

// linkGBps returns the theoretical PCIe bandwidth of CUDA device ordinal
// from NVML, or 0 when NVML does not tell.
func linkGBps(ordinal int) float64 {
	devs, err := gpu.DiscoverSystem()
	if err != nil || ordinal >= len(devs) {
		return 0
	}
	l, err := gpu.LinkSystem(devs[ordinal].Index)
	if err != nil {
		return 0
	}
	return l.GBps()
}

// trainCheck trains GraphSAGE (train.Defaults, o.trainEpochs epochs, dense
// features) on o.data on the CPU and then with the minibatch step on the
// GPU (train.DeviceCUDA), and fails if an epoch's training loss differs by
// more than 1e-4 relative: the device step follows the CPU's loss curve to
// float32 rounding. It is collective over env.Comm. A dataset that cannot
// be loaded skips the check.
func trainCheck(env *Env, o gpucheckOptions) (map[string]float64, error) {
	c := env.Comm
	run := func(dev train.Device) (*train.Result, error) {
		cfg := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
		cfg.Epochs, cfg.Device, cfg.Seed = o.trainEpochs, dev, o.seed
		cfg.Backends = env.GPU
		cfg, err := cfg.Resolve(c.Size())
		if err != nil {
			return nil, err
		}
		lo := train.LoadOptions{Format: graph.FeatureDense, Partition: train.PartitionRandom, Seed: o.seed, Replication: cfg.Replication,
			WholeTopology: cfg.Topology == train.TopologyReplicated}
		d, err := train.Load(c, o.data, lo) // loaded again: a run may normalise the features in place
		if err != nil {
			return nil, skipError{fmt.Sprintf("dataset %s: %v", o.data, err)}
		}
		cfg.FeatureNorm = cfg.FeatureNorm.Resolve(d.NonNegative)
		return train.Run(c, d, cfg, train.Hooks{})
	}
	cpu, err := run(train.DeviceCPU)
	if err != nil {
		return nil, err
	}
	gpuRes, err := run(train.DeviceCUDA)
	if err != nil {
		return nil, err
	}
	nums := map[string]float64{"epochs": float64(len(cpu.Epochs)), "cpu_epoch_s": cpu.MedianEpochS, "gpu_epoch_s": gpuRes.MedianEpochS}
	if len(cpu.Epochs) != len(gpuRes.Epochs) || len(cpu.Epochs) == 0 {
		return nums, fmt.Errorf("%d epochs on the CPU, %d on the GPU", len(cpu.Epochs), len(gpuRes.Epochs))
	}
	for e := range cpu.Epochs {
		want, got := cpu.Epochs[e].Loss, gpuRes.Epochs[e].Loss
		nums[fmt.Sprintf("cpu_loss_%d", e+1)], nums[fmt.Sprintf("gpu_loss_%d", e+1)] = want, got
		if math.Abs(got-want) > 1e-4*math.Abs(want) || math.IsNaN(got) {
			return nums, fmt.Errorf("epoch %d loss: GPU %v, CPU %v", e+1, got, want)
		}
	}
	return nums, nil
}
