//go:build !noblas

package openblas

// #cgo LDFLAGS: -lopenblas
// void openblas_set_num_threads(int num_threads);
// int openblas_get_num_threads(void);
import "C"

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/netlib/blas/netlib"
)

// Available reports whether Implementation is OpenBLAS (true in this build).
const Available = true

// Implementation returns OpenBLAS through gonum's netlib binding.
func Implementation() blas.Float32Level3 { return netlib.Implementation{} }

// Name returns "openblas", the name of the implementation in this build.
func Name() string { return "openblas" }

// SetThreads sets the number of threads OpenBLAS runs a product on
// (openblas_set_num_threads). Idle OpenBLAS threads spin-wait for a while
// after each product, taking cores from the caller's own parallel loops;
// with one rank per core, or Go kernels that use every core, 1 is best.
func SetThreads(n int) { C.openblas_set_num_threads(C.int(max(n, 1))) }

// Threads returns the number of threads OpenBLAS uses.
func Threads() int { return int(C.openblas_get_num_threads()) }
