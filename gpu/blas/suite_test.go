package blas_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/gpu/cuda"
	"gnnmpi/gpu/gpucheck"
	"gnnmpi/gpu/gputest"
)

// cuBLAS's Sgemm and cuSPARSE's SpMM on device memory pass gpucheck's
// library cases (against dense.Gemm and sparse.Mul), the ones `gnnmpi
// gpucheck` runs on a real device, here on the fake libraries.
func TestSuiteLibraries(t *testing.T) {
	gputest.Use(t)
	c, err := cuda.Open(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	d, err := gpucheck.NewDevice(c)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	var ran []string
	for _, tc := range gpucheck.Cases() {
		if strings.HasPrefix(tc.Name, "kernel/") {
			continue // the kernel cases run in gpu/cuda
		}
		ran = append(ran, tc.Name)
		t.Run(tc.Name, func(t *testing.T) {
			require.NoError(t, tc.Fn(d, r))
		})
	}
	require.Equal(t, []string{"cublas/sgemm", "cusparse/spmm"}, ran)
}
