package train

import (
	"errors"
	"math"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/gnn"
	"gnnmpi/gpu/gputest"
)

// The fake CUDA, cuBLAS and cuSPARSE (gpu/gputest), built on first use
// into fakeDir, which TestMain removes.
var (
	fakeOnce sync.Once
	fakeDir  string
	fakeErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

// useFakeGPU points GNNMPI_CUDA_LIBDIR at the fake libraries, skipping t
// without gcc or OpenBLAS.
func useFakeGPU(t *testing.T) {
	t.Helper()
	fakeOnce.Do(func() {
		if fakeDir, fakeErr = os.MkdirTemp("", "gnnmpi-train-fakes-"); fakeErr == nil {
			fakeErr = gputest.Build(fakeDir)
		}
	})
	if errors.Is(fakeErr, gputest.ErrNoCompiler) || errors.Is(fakeErr, gputest.ErrNoOpenBLAS) {
		t.Skip(fakeErr)
	}
	require.NoError(t, fakeErr)
	t.Setenv("GNNMPI_CUDA_LIBDIR", fakeDir)
}

// Training on the (fake) GPU follows the CPU's loss curve to float32
// rounding, on one rank and on two sharing the device, with dropout on.
func TestDeviceMatchesCPU(t *testing.T) {
	useFakeGPU(t)
	cfg := testConfig("sage")
	cfg.Epochs = 3
	for _, p := range []int{1, 2} {
		cpu := runP(t, p, cfg, nil)
		gcfg := cfg
		gcfg.Device = DeviceCUDA
		gpu := runP(t, p, gcfg, nil)
		want, got := losses(cpu), losses(gpu)
		t.Logf("p=%d losses cpu %v gpu %v", p, want, got)
		require.Len(t, got, len(want))
		for e := range want {
			require.InDelta(t, want[e], got[e], 1e-4*math.Abs(want[e]), "p=%d epoch %d loss: gpu %v cpu %v", p, e+1, got, want)
		}
	}
}

// What the device does not run is refused before training, naming the
// flag.
func TestDeviceConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		flag string
	}{
		{func(c *Config) { c.Model.Kind, c.Model.Heads = "gat", 1 }, "--model gat"},
		{func(c *Config) { c.Model.Normalize = true }, "--normalize"},
		{func(c *Config) { c.Optimizer = OptimizerSGD }, "--optimizer sgd"},
	} {
		cfg := testConfig("sage")
		cfg.Device = DeviceCUDA
		tc.edit(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, gnn.ErrUnsupported)
		require.ErrorContains(t, err, tc.flag)
	}
	cfg := testConfig("sage")
	cfg.Device = "tpu"
	require.ErrorContains(t, cfg.Validate(), "device")
}
