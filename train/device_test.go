package train

import (
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gnn"
	"gnnmpi/gpu/gputest"
	"gnnmpi/gpu/tier"
	"gnnmpi/graph"
	"gnnmpi/internal/dl"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/nccl"
	"gnnmpi/partition"
)

// gpuBackends are the real openers, which main hands down; useFakeGPU
// points them at the fake libraries.
var gpuBackends = Backends{CUDADeviceCount: cuda.DeviceCount, OpenCUDA: cuda.Open, NewNCCL: nccl.New}

func TestMain(m *testing.M) {
	code := m.Run()
	gputest.Remove()
	os.Exit(code)
}

// useFakeGPU points GNNMPI_CUDA_LIBDIR at the fake libraries, skipping t
// without gcc or OpenBLAS.
func useFakeGPU(t *testing.T) { gputest.Use(t) }

// Training on the (fake) GPU follows the CPU's loss curve to float32
// rounding, on one rank and on two sharing the device, with dropout on
// and a degree cache: the inputs gathered on the device from the tiers
// (every --gpu-frac, with and without --overlap) are the CPU's rows, with
// the same bytes by phase, and the tier reads add up to the rows fetched.
// With f16 features (--feature-dtype f16) the same holds against the CPU's
// f16 path: the tiers hold half-precision rows, whose reads count 2 bytes
// a value, and the device converts them as the CPU's Fetch does.
func TestDeviceMatchesCPU(t *testing.T) {
	useFakeGPU(t)
	for _, dt := range []alltoall.DType{alltoall.F32, alltoall.F16} {
		t.Run(string(dt), func(t *testing.T) { testDeviceMatchesCPU(t, dt) })
	}
}

// testDeviceMatchesCPU is TestDeviceMatchesCPU for features of dtype dt.
func testDeviceMatchesCPU(t *testing.T, dt alltoall.DType) {
	cfg := testConfig("sage")
	cfg.Epochs = 3
	cfg.Cache, cfg.CacheFrac = alltoall.CacheDegree, 0.2
	cfg.FeatureDType = dt
	elem := map[alltoall.DType]int64{alltoall.F32: 4, alltoall.F16: 2}[dt]
	for _, p := range []int{1, 2} {
		cpu := runP(t, p, cfg, nil)
		want := losses(cpu)
		for _, overlap := range []bool{false, true} {
			for _, frac := range []float64{0, 0.5, 1} {
				if p == 1 && overlap {
					continue
				}
				name := fmt.Sprintf("p=%d overlap=%v gpu-frac=%v", p, overlap, frac)
				gcfg := cfg
				gcfg.Device, gcfg.Overlap, gcfg.OverlapCores, gcfg.GPUFrac = DeviceCUDA, overlap, 0, frac
				gpu := runP(t, p, gcfg, nil)
				got := losses(gpu)
				t.Logf("%s: losses cpu %v gpu %v", name, want, got)
				require.Len(t, got, len(want), name)
				require.NotNil(t, gpu.GPUReads, name)
				var total tier.Reads
				for e := range want {
					require.InDelta(t, want[e], got[e], 1e-4*math.Abs(want[e]), "%s epoch %d loss: gpu %v cpu %v", name, e+1, got, want)
					ce, ge := cpu.Epochs[e], gpu.Epochs[e]
					for _, ph := range []string{metrics.PhaseSample, metrics.PhaseSpGEMM, metrics.PhaseFetch, metrics.PhaseGrad} {
						require.Equal(t, ce.Bytes[ph], ge.Bytes[ph], "%s epoch %d: bytes of %s", name, e+1, ph)
					}
					require.Equal(t, [3]int64{ce.FetchRows, ce.CacheHits, ce.RemoteRows}, [3]int64{ge.FetchRows, ge.CacheHits, ge.RemoteRows}, name)
					r := ge.GPUReads
					require.NotNil(t, r, "%s epoch %d: no gpu_reads", name, e+1)
					require.Equal(t, ge.FetchRows, r.DeviceRows+r.HostRows+r.RemoteRows, "%s epoch %d: reads %+v", name, e+1, *r)
					require.Equal(t, ge.RemoteRows, r.RemoteRows, "%s epoch %d: a minibatch's inputs are distinct", name, e+1)
					require.Equal(t, elem*int64(cfgCols(t))*r.HostRows, r.HostBytes, name)
					require.Equal(t, elem*int64(cfgCols(t))*r.DeviceRows, r.DeviceBytes, name)
					switch frac {
					case 0:
						require.Zero(t, r.DeviceRows, name)
					case 1:
						require.Zero(t, r.HostRows, name)
					default:
						require.Positive(t, r.DeviceRows, name)
						require.Positive(t, r.HostRows, name)
					}
					if p > 1 {
						require.Positive(t, r.RemoteRows, name)
					}
					total = total.Add(*r)
				}
				require.Equal(t, total, *gpu.GPUReads, name)
				require.Nil(t, cpu.GPUReads)
				requireSameEvaluation(t, name, cpu, gpu)
			}
		}
	}
}

// GCN and GAT, and sparse (CSR) input rows for GraphSAGE, GCN and GAT,
// train and evaluate on the (fake) GPU along the CPU's loss curve to float32 rounding,
// on one rank and on two sharing the device, with dropout on (GAT's
// attention dropout too): Cora's bag-of-words rows, dense or fetched as
// CSR rows and uploaded for the input layer's sparse products (GCN's
// degrees fetched from their owners).
func TestDeviceModelsMatchCPU(t *testing.T) {
	useFakeGPU(t)
	for _, tc := range []struct {
		kind   model.Kind
		format graph.FeatureFormat
	}{
		{model.KindGCN, graph.FeatureDense},
		{model.KindSAGE, graph.FeatureCSR},
		{model.KindGCN, graph.FeatureCSR},
		{model.KindGAT, graph.FeatureDense},
		{model.KindGAT, graph.FeatureCSR},
	} {
		for _, p := range []int{1, 2} {
			name := fmt.Sprintf("%s/%s/p=%d", tc.kind, tc.format, p)
			t.Run(name, func(t *testing.T) {
				cfg := testConfig(tc.kind)
				cfg.Epochs = 2
				cfg.FeatureNorm = FeatureNormRow
				require.Positive(t, cfg.Model.Dropout, "dropout on")
				if tc.kind == model.KindGAT {
					require.Positive(t, cfg.Model.AttnDropout, "attention dropout on")
				}
				cpu := runCora(t, p, cfg, tc.format)
				want := losses(cpu)
				cfg.Device = DeviceCUDA
				gpu := runCora(t, p, cfg, tc.format)
				got := losses(gpu)
				t.Logf("losses cpu %v gpu %v", want, got)
				require.Len(t, got, len(want))
				for e := range want {
					require.InDelta(t, want[e], got[e], 1e-4*math.Abs(want[e]), "epoch %d loss: gpu %v cpu %v", e+1, got, want)
				}
				requireSameEvaluation(t, name, cpu, gpu)
				if tc.format == graph.FeatureDense {
					// The same in the host's chunks (the input layer
					// gathered on the device chunk by chunk; at p = 2 GCN's
					// halo in pieces, the layer from the sums), not one
					// chunk per layer.
					chunkedOnDevice = true
					chunked := runCora(t, p, cfg, tc.format)
					chunkedOnDevice = false
					require.Equal(t, got, losses(chunked))
					requireSameEvaluation(t, name+" (chunked)", cpu, chunked)
				}
				if tc.format == graph.FeatureCSR {
					require.Nil(t, gpu.GPUReads, "sparse rows are fetched on the host, not gathered from the tiers")
				} else {
					require.NotNil(t, gpu.GPUReads)
				}
			})
		}
	}
}

// requireSameEvaluation requires that layer-wise inference ran on the
// device in gpu and on the CPU in cpu, and that every evaluation agrees:
// the validation loss to float32 rounding, the accuracies to a vertex or
// two whose top logits the rounding may swap.
func requireSameEvaluation(t *testing.T, name string, cpu, gpu *Result) {
	t.Helper()
	require.Empty(t, cpu.InferDevice, name)
	require.NotEmpty(t, gpu.InferDevice, "%s: evaluation did not run on the device", name)
	require.Len(t, gpu.Epochs, len(cpu.Epochs), name)
	evaluated := 0
	for e, ce := range cpu.Epochs {
		ge := gpu.Epochs[e]
		require.Equal(t, ce.Evaluated, ge.Evaluated, name)
		if !ce.Evaluated {
			continue
		}
		evaluated++
		require.InDelta(t, ce.ValLoss, ge.ValLoss, 1e-4*math.Abs(ce.ValLoss), "%s epoch %d: validation loss", name, e+1)
		require.InDelta(t, ce.ValAcc, ge.ValAcc, 0.01, "%s epoch %d: validation accuracy", name, e+1)
		require.InDelta(t, ce.TestAcc, ge.TestAcc, 0.01, "%s epoch %d: test accuracy", name, e+1)
	}
	require.Positive(t, evaluated, "%s: no epoch evaluated", name)
}

// cfgCols returns the number of features of the test graph.
func cfgCols(t *testing.T) int {
	t.Helper()
	return sbm().NumFeatures()
}

// What the device does not run is refused before training, naming the
// flag.
func TestDeviceConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string // the setting
	}{
		{func(c *Config) { c.Model.Normalize = true }, "Model.Normalize"},
		{func(c *Config) { c.Optimizer = OptimizerSGD }, "Optimizer sgd"},
	} {
		cfg := testConfig("sage")
		cfg.Device = DeviceCUDA
		tc.edit(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, gnn.ErrUnsupported)
		require.ErrorContains(t, err, tc.want)
	}
	cfg := testConfig("sage")
	cfg.Device = "tpu"
	require.ErrorContains(t, cfg.Validate(), "device")
}

// --grad-comm nccl needs --device cuda, and names both flags when given
// without it; an unknown transport is refused.
func TestGradCommConfig(t *testing.T) {
	cfg := testConfig("sage")
	require.NoError(t, cfg.Validate(), "the default: mpi")
	cfg.GradComm = GradCommMPI
	require.NoError(t, cfg.Validate())
	cfg.GradComm = GradCommNCCL
	requireSettings(t, cfg.Validate(), "GradComm nccl sums the gradients on the GPU and needs Device cuda (got Device cpu; use GradComm mpi)",
		SettingGradComm, SettingDevice, SettingDevice, SettingGradComm)
	cfg.Device = DeviceCUDA
	require.NoError(t, cfg.Validate())
	cfg.GradComm = "gloo"
	require.ErrorContains(t, cfg.Validate(), "gradient transport")
	g, err := ParseGradComm("nccl")
	require.NoError(t, err)
	require.Equal(t, GradCommNCCL, g)
}

// Without libnccl, --grad-comm nccl fails on every rank (in process: the
// run's error) with an error naming the library and the flag, after the
// device opened.
func TestGradCommNCCLMissing(t *testing.T) {
	useFakeGPU(t)
	if l, err := dl.Open(nccl.LibNames...); err == nil {
		_ = l.Close()
		t.Skip("a real libnccl is installed: cannot check the error without it")
	}
	t.Setenv(nccl.LibDirEnv, t.TempDir())
	cfg := testConfig("sage")
	cfg.Epochs = 1
	cfg.Device, cfg.GradComm = DeviceCUDA, GradCommNCCL
	_, err := runRanks(2, cfg, partition.Random(sbm().NumNodes, 2, 5))
	require.ErrorContains(t, err, "libnccl.so.2 not found") // the rank that reports carries rank 0's ErrNoNCCL
	requireSettings(t, err, "GradComm nccl", SettingGradComm)
}

// Training opens only the GPU backends it is handed: without them,
// --device cuda (or, with the device open, --grad-comm nccl) fails on
// every rank with an error naming the missing Config.Backends field.
func TestDeviceWithoutBackends(t *testing.T) {
	useFakeGPU(t)
	for _, tc := range []struct {
		name     string
		gradComm GradComm
		backends Backends
		want     string
		setting  Setting
		value    string
	}{
		{"no CUDA", GradCommMPI, Backends{NewNCCL: nccl.New}, "Config.Backends.CUDADeviceCount or OpenCUDA is nil", SettingDevice, "cuda"},
		{"no open", GradCommMPI, Backends{CUDADeviceCount: cuda.DeviceCount}, "Config.Backends.CUDADeviceCount or OpenCUDA is nil", SettingDevice, "cuda"},
		{"no NCCL", GradCommNCCL, Backends{CUDADeviceCount: cuda.DeviceCount, OpenCUDA: cuda.Open}, "Config.Backends.NewNCCL is nil", SettingGradComm, "nccl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig("sage")
			cfg.Epochs = 1
			cfg.Device, cfg.GradComm, cfg.Backends = DeviceCUDA, tc.gradComm, tc.backends
			const p = 2
			book := partition.Random(sbm().NumNodes, p, 5)
			errs := make([]error, p)
			_ = inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				d, err := Distribute(sbm(), "random", book, c.Rank())
				if err != nil {
					return err
				}
				_, errs[c.Rank()] = Run(collective.WithStats(c, nil), d, cfg, Hooks{})
				return errs[c.Rank()]
			})
			for r, err := range errs {
				require.ErrorContains(t, err, tc.want, "rank %d", r)
				require.ErrorContains(t, err, fmt.Sprintf("%s %s: ", tc.setting, tc.value), "rank %d", r)
			}
			// The other ranks carry rank 0's message (collective.Agree).
			requireSettings(t, errs[0], fmt.Sprintf("%s %s: ", tc.setting, tc.value), tc.setting)
		})
	}
}

// Evaluation by sampling (EvalFanouts) runs its forward passes on the
// (fake) GPU and gives the CPU's evaluation: dense rows gathered from the
// tiers, on one rank and two, and Cora's CSR rows uploaded; all
// neighbours and a sample.
func TestDeviceEvalSampled(t *testing.T) {
	useFakeGPU(t)
	for _, fo := range [][]int{{-1, -1}, {3, 2}} {
		for _, p := range []int{1, 2} {
			name := fmt.Sprintf("sbm/fanouts=%v/p=%d", fo, p)
			t.Run(name, func(t *testing.T) {
				cfg := testConfig("sage")
				cfg.Epochs, cfg.EvalEvery = 2, 1
				cfg.EvalFanouts, cfg.EvalBatchSize = fo, 40
				cpu := runP(t, p, cfg, nil)
				cfg.Device = DeviceCUDA
				requireSameEvaluation(t, name, cpu, runP(t, p, cfg, nil))
			})
		}
	}
	t.Run("cora/csr/gcn", func(t *testing.T) {
		cfg := testConfig(model.KindGCN)
		cfg.Epochs, cfg.EvalEvery, cfg.FeatureNorm = 2, 1, FeatureNormRow
		cfg.EvalFanouts, cfg.EvalBatchSize = []int{-1, -1}, 200
		cpu := runCora(t, 2, cfg, graph.FeatureCSR)
		cfg.Device = DeviceCUDA
		requireSameEvaluation(t, "cora/csr/gcn", cpu, runCora(t, 2, cfg, graph.FeatureCSR))
	})
}

// runCora trains cfg on Cora, its rows in the feature format format, on p
// in-process ranks (block partition, cfg's feature replication) and
// returns rank 0's result.
func runCora(t *testing.T, p int, cfg Config, format graph.FeatureFormat) *Result {
	t.Helper()
	results := make([]*Result, p)
	err := inproc.Run(p, inproc.Options{Timeout: 2 * time.Minute}, func(c collective.Comm) error {
		d, err := Load(c, coraPath, LoadOptions{Partition: PartitionBlock, Replication: cfg.Replication, Format: format, Seed: cfg.Seed})
		if err != nil {
			return err
		}
		res, err := Run(collective.WithStats(c, nil), d, cfg, Hooks{})
		results[c.Rank()] = res
		return err
	})
	require.NoError(t, err)
	return results[0]
}
