package gpucheck

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/gpu/gputest"
	"gnnmpi/gpu/kernels"
)

func TestMain(m *testing.M) {
	code := m.Run()
	gputest.Remove()
	os.Exit(code)
}

// On the fake libraries, Run on 1 and 2 in-process ranks passes every
// device case, the benchmark and a training whose curves agree, skips
// NCCL (no MPI), and counts the verdicts.
func TestRunFake(t *testing.T) {
	gputest.Use(t)
	for _, p := range []int{1, 2} {
		var log bytes.Buffer
		reports := make([]*Report, p)
		train := func(onGPU bool) (Curve, error) {
			l := []float64{1.9, 1.5, 1.2}
			if onGPU {
				l[2] += 1e-5 // within 1e-4 relative
			}
			c := Curve{Losses: l, MedianEpochS: 0.5, ValLoss: 1.3}
			if onGPU {
				c.InferDevice = "fake"
			}
			return c, nil
		}
		err := inproc.Run(p, inproc.Options{}, func(c collective.Comm) error {
			res, err := Run(c, Options{Backend: "inproc", LocalRank: -1, Rows: 100, Width: 9, Iters: 1, Seed: 1, Train: train, Log: &log})
			reports[c.Rank()] = res
			return err
		})
		require.NoError(t, err)
		require.Empty(t, log.String())
		for _, res := range reports {
			require.Equal(t, "gnnmpi fake device", res.Device)
			require.Equal(t, p, res.Ranks)
			require.Len(t, res.Checks, len(kernels.Names)+5) // + 2 libraries, nccl, bench, train
			for _, row := range res.Checks {
				want := Pass
				if row.Name == "nccl" {
					want = Skip
				}
				require.Equal(t, want, row.Result, "%+v", row)
				if strings.HasPrefix(row.Name, "kernel/") {
					require.Equal(t, "CUBIN sm_80", row.Detail, "what the kernels were loaded from")
				}
			}
			require.Equal(t, len(res.Checks)-1, res.Passed)
			require.Equal(t, 1, res.Skipped)
			require.Zero(t, res.Failed)
			last := res.Checks[len(res.Checks)-1]
			require.Equal(t, "train/gpu-vs-cpu", last.Name)
			require.Equal(t, 1.2, last.Numbers["cpu_loss_3"])
			require.Equal(t, float64(100*9*4), res.Checks[len(res.Checks)-2].Numbers["bytes"])
		}
	}
}

// A row fails if any rank failed it and is skipped only if every rank
// skipped it; RanksFailed counts the failing ranks.
func TestVerdicts(t *testing.T) {
	const p = 3
	// Rank r's results for the rows a, b, c, d.
	results := [p][]string{
		{Pass, Skip, Skip, Fail},
		{Pass, Pass, Skip, Fail},
		{Fail, Skip, Skip, Skip},
	}
	want := []Row{
		{Name: "a", Result: Fail, RanksFailed: 1},
		{Name: "b", Result: Pass},
		{Name: "c", Result: Skip},
		{Name: "d", Result: Fail, RanksFailed: 2},
	}
	got := make([][]Row, p)
	require.NoError(t, inproc.Run(p, inproc.Options{}, func(c collective.Comm) error {
		var rows []Row
		for i, r := range results[c.Rank()] {
			rows = append(rows, Row{Name: want[i].Name, Result: r})
		}
		var err error
		got[c.Rank()], err = verdicts(c, rows)
		return err
	}))
	for r := range p {
		require.Equal(t, want, got[r], "rank %d", r)
	}
}

func TestCompareTraining(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cpu, gpu Curve
		err      error // returned by the training
		wantErr  string
		wantSkip bool
	}{
		{name: "equal", cpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.1}, gpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.1, InferDevice: "gpu"}},
		{name: "within 1e-4", cpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.1}, gpu: Curve{Losses: []float64{2, 1 + 0.9e-4}, ValLoss: 1.1 + 1e-4, InferDevice: "gpu"}},
		{name: "apart", cpu: Curve{Losses: []float64{2, 1}}, gpu: Curve{Losses: []float64{2, 1.001}, InferDevice: "gpu"}, wantErr: "epoch 2 loss"},
		{name: "NaN", cpu: Curve{Losses: []float64{2}}, gpu: Curve{Losses: []float64{math.NaN()}, InferDevice: "gpu"}, wantErr: "epoch 1 loss"},
		{name: "lengths", cpu: Curve{Losses: []float64{2, 1}}, gpu: Curve{Losses: []float64{2}, InferDevice: "gpu"}, wantErr: "2 epochs on the CPU, 1 on the GPU"},
		{name: "validation apart", cpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.1}, gpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.2, InferDevice: "gpu"}, wantErr: "validation loss: GPU 1.2, CPU 1.1"},
		{name: "validation NaN", cpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.1}, gpu: Curve{Losses: []float64{2, 1}, ValLoss: math.NaN(), InferDevice: "gpu"}, wantErr: "validation loss"},
		{name: "evaluated on the CPU", cpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.1}, gpu: Curve{Losses: []float64{2, 1}, ValLoss: 1.1}, wantErr: "evaluated on the CPU"},
		{name: "none", wantErr: "0 epochs on the CPU"},
		{name: "skipped", err: Skipped("no data"), wantSkip: true},
		{name: "failed", err: errors.New("boom"), wantErr: "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nums, err := compareTraining(func(onGPU bool) (Curve, error) {
				if onGPU {
					return tc.gpu, tc.err
				}
				return tc.cpu, tc.err
			})
			var skip skipError
			switch {
			case tc.wantSkip:
				require.ErrorAs(t, err, &skip)
			case tc.wantErr != "":
				require.ErrorContains(t, err, tc.wantErr)
			default:
				require.NoError(t, err)
				require.Equal(t, float64(len(tc.cpu.Losses)), nums["epochs"])
				require.Equal(t, tc.gpu.Losses[1], nums["gpu_loss_2"])
				require.Equal(t, tc.gpu.ValLoss, nums["gpu_val_loss"])
			}
		})
	}
}

func TestSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		row  Row
		want string
	}{
		{"detail", Row{Detail: "first\nsecond", Numbers: map[string]float64{"epochs": 1}}, "first"},
		{"none", Row{}, ""},
		{"train", Row{Numbers: map[string]float64{"epochs": 2, "gpu_loss_2": 1.5, "cpu_loss_2": 1.25, "gpu_epoch_s": 0.5, "cpu_epoch_s": 2,
			"gpu_val_loss": 1.75, "cpu_val_loss": 1.5}},
			"2 epochs, last loss GPU 1.5 CPU 1.25, validation loss GPU 1.75 CPU 1.5; median epoch GPU 0.5s CPU 2s"},
		{"bench", Row{Numbers: map[string]float64{"zero_copy_gbps": 12, "cpu_gather_copy_gbps": 6, "link_gbps": 24}},
			"zero-copy 12.00 GB/s, CPU gather+copy 6.00 GB/s (50% / 25% of 24.0 GB/s)"},
		{"bench, no link", Row{Numbers: map[string]float64{"zero_copy_gbps": 1, "cpu_gather_copy_gbps": 2}},
			"zero-copy 1.00 GB/s, CPU gather+copy 2.00 GB/s (link bandwidth unknown)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.row.Summary())
		})
	}
}
