package gpucheck

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"

	"gnnmpi/collective"
	"gnnmpi/collective/collectivetest"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/kernels"
	"gnnmpi/metrics"
	"gnnmpi/nccl"
)

// Verdicts of a Row.
const (
	Pass = "PASS"
	Fail = "FAIL"
	Skip = "SKIP"
)

// Row is one row of the check table: the metrics' GPUCheckRow.
type Row = metrics.GPUCheckRow

// Report is the outcome of Run: the metrics' GPUCheckReport.
type Report = metrics.GPUCheckReport

// skipError marks a check that did not run, and why.
type skipError struct{ why string }

func (s skipError) Error() string { return s.why }

// Skipped returns an error that makes a check's row Skip with why as its
// detail, rather than Fail.
func Skipped(why string) error { return skipError{why} }

// Device is what the cases run on: an open context and the kernels of
// package kernels compiled on it.
type Device struct {
	Ctx     *cuda.Context
	Kernels *cuda.Module
}

// NewDevice compiles the kernels on ctx. The caller keeps ownership of
// ctx.
func NewDevice(ctx *cuda.Context) (*Device, error) {
	mod, err := ctx.Compile(kernels.Source(), "kernels.cu")
	if err != nil {
		return nil, fmt.Errorf("gpucheck: compiling the kernels: %w", err)
	}
	return &Device{Ctx: ctx, Kernels: mod}, nil
}

// Case is one check of a device. Fn draws its inputs from r and returns
// nil, an error naming the first difference from the CPU reference, or
// an error from Skipped.
type Case struct {
	Name string
	Fn   func(d *Device, r *rand.Rand) error
}

// Cases returns the device checks in a fixed order: kernel/<name> for
// every kernel of kernels.Names (random inputs, the kernel on the device,
// its reference on the CPU: model's loss and Adam where they exist), then
// cublas/sgemm (the four transpose cases, with alpha and beta, against
// dense.Gemm) and cusparse/spmm (op(A) = A and Aᵀ against sparse.Mul).
// A kernel without a CPU reference here gets a case that fails.
func Cases() []Case {
	refs := kernelChecks()
	var cs []Case
	for _, name := range kernels.Names {
		check, ok := refs[name]
		cs = append(cs, Case{"kernel/" + name, func(d *Device, r *rand.Rand) error {
			if !ok {
				return fmt.Errorf("no CPU reference in gpucheck")
			}
			fn, err := d.Kernels.Function(name)
			if err != nil {
				return err
			}
			return check(d.Ctx, fn, r)
		}})
	}
	return append(cs,
		Case{"cublas/sgemm", func(d *Device, r *rand.Rand) error {
			return d.Ctx.Do(func() error { return checkSgemm(d.Ctx, r) })
		}},
		Case{"cusparse/spmm", func(d *Device, r *rand.Rand) error {
			return d.Ctx.Do(func() error { return checkSpMM(d.Ctx, r) })
		}})
}

// Curve is a training's loss per epoch and its median epoch time, and its
// last evaluation: the validation loss and the device that computed it
// ("" for the CPU).
type Curve struct {
	Losses       []float64
	MedianEpochS float64
	ValLoss      float64
	InferDevice  string
}

// Options configure Run.
type Options struct {
	// Backend names the communicator's backend; NCCL is checked only on
	// "mpi" (it needs one process per rank).
	Backend string
	// LocalRank is this rank's rank on its node; the rank opens device
	// LocalRank modulo the devices. Negative: its rank in the communicator.
	LocalRank int
	// Rows, Width and Iters size the zero-copy benchmark (see ZeroCopy).
	Rows, Width, Iters int
	// Seed seeds the random inputs (with the rank as the stream).
	Seed uint64
	// Train, when not nil, trains the same model on the CPU (false) and
	// on the GPU (true); it is collective and must not change its
	// communicator's phase. Run compares the two curves: the row
	// train/gpu-vs-cpu fails if an epoch's loss or the last validation
	// loss differs by more than 1e-4 relative, or if the GPU's training
	// did not evaluate on the GPU. When Train is nil the row is skipped with TrainSkip as
	// its detail.
	Train     func(onGPU bool) (Curve, error)
	TrainSkip string
	// Log, when not nil, receives a line for each check that fails on
	// this rank.
	Log io.Writer
}

// Run runs the whole suite on this rank's device and returns the report,
// each row's verdict reduced over the ranks of c. It is collective over
// c: every rank must call it with the same options but LocalRank. Beside
// NCCL's cases and Train it sends two Allreduces of one int64 per row
// and one of a single int64 (whether every rank opened its device). It
// returns an error when a rank cannot open its device, the kernels do not
// compile, or a collective call fails; failed checks are rows, not errors.
//
// Run will panic if o.Rows, o.Width or o.Iters is less than 1.
func Run(c collective.Comm, o Options) (*Report, error) {
	ctx, err := open(c, o.LocalRank)
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	d, err := NewDevice(ctx)
	if err != nil {
		return nil, err
	}

	r := rand.New(rand.NewPCG(o.Seed, uint64(c.Rank())))
	var rows []Row
	add := func(name string, numbers map[string]float64, err error) {
		row := Row{Name: name, Result: Pass, Numbers: numbers}
		var skip skipError
		switch {
		case errors.As(err, &skip):
			row.Result, row.Detail = Skip, skip.why
		case err != nil:
			row.Result, row.Detail = Fail, err.Error()
			if o.Log != nil {
				fmt.Fprintf(o.Log, "gnnmpi: rank %d: gpucheck %s: %v\n", c.Rank(), name, err)
			}
		}
		rows = append(rows, row)
	}
	for _, tc := range Cases() {
		add(tc.Name, nil, tc.Fn(d, r))
		if row := &rows[len(rows)-1]; row.Result == Pass && strings.HasPrefix(tc.Name, "kernel/") {
			row.Detail = d.Kernels.Image() // CUBIN or PTX, and why
		}
	}
	rows = append(rows, ncclRows(c, o.Backend, ctx)...)
	nums, err := ZeroCopy(d, r, o.Rows, o.Width, o.Iters)
	add("bench/zero-copy-gather", nums, err)
	if o.Train != nil {
		nums, err := compareTraining(o.Train)
		add("train/gpu-vs-cpu", nums, err)
	} else {
		add("train/gpu-vs-cpu", nil, Skipped(o.TrainSkip))
	}

	maj, min := ctx.Capability()
	res := &Report{Device: ctx.Name(), Capability: fmt.Sprintf("%d.%d", maj, min), Ranks: c.Size(), Backend: o.Backend}
	if res.Checks, err = verdicts(c, rows); err != nil {
		return nil, err
	}
	for _, row := range res.Checks {
		switch row.Result {
		case Fail:
			res.Failed++
		case Skip:
			res.Skipped++
		default:
			res.Passed++
		}
	}
	return res, nil
}

// open opens this rank's device; every rank learns whether any rank
// failed before the checks communicate.
func open(c collective.Comm, local int) (*cuda.Context, error) {
	var ctx *cuda.Context
	n, err := cuda.DeviceCount()
	if err == nil && n == 0 {
		err = errors.New("no CUDA device")
	}
	if err == nil {
		if local < 0 {
			local = c.Rank()
		}
		ctx, err = cuda.Open(local % n)
	}
	bad := []int64{0}
	if err != nil {
		bad[0] = 1
	}
	if aerr := collective.AllreduceSlice(c, bad, collective.Sum); aerr != nil {
		if ctx != nil {
			ctx.Close()
		}
		return nil, aerr
	}
	if err != nil {
		return nil, fmt.Errorf("gpucheck: %w", err)
	}
	if bad[0] > 0 {
		ctx.Close()
		return nil, fmt.Errorf("gpucheck: %d rank(s) could not open a GPU", bad[0])
	}
	return ctx, nil
}

// verdicts reduces the rows' results over c: a row fails if any rank
// failed it and is skipped if every rank skipped it. It is collective
// over c (two Allreduces of len(rows) int64s).
func verdicts(c collective.Comm, rows []Row) ([]Row, error) {
	fails, skips := make([]int64, len(rows)), make([]int64, len(rows))
	for i, row := range rows {
		switch row.Result {
		case Fail:
			fails[i] = 1
		case Skip:
			skips[i] = 1
		}
	}
	if err := collective.AllreduceSlice(c, fails, collective.Sum); err != nil {
		return nil, err
	}
	if err := collective.AllreduceSlice(c, skips, collective.Sum); err != nil {
		return nil, err
	}
	out := make([]Row, len(rows))
	for i, row := range rows {
		row.RanksFailed = fails[i]
		switch {
		case fails[i] > 0:
			row.Result = Fail
		case skips[i] == int64(c.Size()):
			row.Result = Skip
		default:
			row.Result = Pass
		}
		out[i] = row
	}
	return out, nil
}

// ncclRows runs the collective conformance suite on NCCL over the
// device's memory, one row per case; with fewer than 2 ranks, without MPI
// or NCCL, or with ranks sharing a GPU (which NCCL refuses) one Skip row
// saying why.
func ncclRows(c collective.Comm, backend string, ctx *cuda.Context) []Row {
	skip := func(why string) []Row {
		return []Row{{Name: "nccl", Result: Skip, Detail: why}}
	}
	switch {
	case c.Size() < 2:
		return skip("needs 2 or more ranks")
	case backend != "mpi":
		return skip("needs the MPI backend (mpirun), not " + backend)
	}
	var rows []Row
	err := ctx.Do(func() error {
		nc, err := nccl.New(c, cuda.Memory{Ctx: ctx})
		if errors.Is(err, nccl.ErrNoNCCL) || errors.Is(err, nccl.ErrSharedDevice) {
			rows = skip(err.Error())
			return nil
		}
		if err != nil {
			return err
		}
		defer nc.Free()
		nccl := collective.WithStats(nc, collective.StatsOf(c))
		for _, tc := range collectivetest.Cases() {
			row := Row{Name: "nccl/" + tc.Name, Result: Pass}
			if c.Size() < tc.MinRanks {
				row.Result, row.Detail = Skip, fmt.Sprintf("needs %d ranks", tc.MinRanks)
			} else {
				restore := collective.SetPhase(nccl, metrics.PhaseGPUCheck+tc.Name)
				err := tc.Fn(nccl)
				restore()
				if err != nil {
					if collectivetest.IsCommError(err) {
						return fmt.Errorf("nccl %s: %w", tc.Name, err)
					}
					row.Result, row.Detail = Fail, err.Error()
				}
			}
			rows = append(rows, row)
		}
		return nil
	})
	if err != nil {
		return []Row{{Name: "nccl", Result: Fail, Detail: err.Error()}}
	}
	return rows
}

// compareTraining runs train on the CPU and then on the GPU and fails if
// an epoch's training loss differs by more than 1e-4 relative: the device
// step follows the CPU's loss curve to float32 rounding. Its numbers are
// epochs, cpu_epoch_s, gpu_epoch_s and cpu_loss_e, gpu_loss_e for each
// epoch e from 1.
func compareTraining(train func(onGPU bool) (Curve, error)) (map[string]float64, error) {
	cpu, err := train(false)
	if err != nil {
		return nil, err
	}
	gpu, err := train(true)
	if err != nil {
		return nil, err
	}
	nums := map[string]float64{"epochs": float64(len(cpu.Losses)), "cpu_epoch_s": cpu.MedianEpochS, "gpu_epoch_s": gpu.MedianEpochS}
	if len(cpu.Losses) != len(gpu.Losses) || len(cpu.Losses) == 0 {
		return nums, fmt.Errorf("%d epochs on the CPU, %d on the GPU", len(cpu.Losses), len(gpu.Losses))
	}
	for e, want := range cpu.Losses {
		got := gpu.Losses[e]
		nums[fmt.Sprintf("cpu_loss_%d", e+1)], nums[fmt.Sprintf("gpu_loss_%d", e+1)] = want, got
		if math.Abs(got-want) > 1e-4*math.Abs(want) || math.IsNaN(got) {
			return nums, fmt.Errorf("epoch %d loss: GPU %v, CPU %v", e+1, got, want)
		}
	}
	nums["cpu_val_loss"], nums["gpu_val_loss"] = cpu.ValLoss, gpu.ValLoss
	switch {
	case gpu.InferDevice == "":
		return nums, errors.New("the GPU's training evaluated on the CPU")
	case math.Abs(gpu.ValLoss-cpu.ValLoss) > 1e-4*math.Abs(cpu.ValLoss) || math.IsNaN(gpu.ValLoss):
		return nums, fmt.Errorf("validation loss: GPU %v, CPU %v", gpu.ValLoss, cpu.ValLoss)
	}
	return nums, nil
}
