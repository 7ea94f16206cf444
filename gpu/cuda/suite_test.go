package cuda_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gpucheck"
	"gnnmpi/gpu/kernels"
)

// Every kernel matches its CPU reference (model's loss and Adam where they
// exist): the kernel cases of gpucheck's suite, which `gnnmpi gpucheck`
// runs on a real device, run here on the fake driver (or the real one in
// TestRealCUDA's child).
func TestSuiteKernels(t *testing.T) {
	cuda.NeedFake(t)
	c, err := cuda.Open(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	d, err := gpucheck.NewDevice(c)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(2, 22))
	ran := 0
	for _, tc := range gpucheck.Cases() {
		if !strings.HasPrefix(tc.Name, "kernel/") {
			continue // the cuBLAS and cuSPARSE cases run in gpu/blas
		}
		ran++
		t.Run(tc.Name, func(t *testing.T) {
			require.NoError(t, tc.Fn(d, r))
		})
	}
	require.Equal(t, len(kernels.Names), ran)
}
