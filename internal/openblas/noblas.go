//go:build noblas

package openblas

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Available reports whether Implementation is OpenBLAS (false in this build).
const Available = false

// Implementation returns gonum's pure Go BLAS; this build has no OpenBLAS.
func Implementation() blas.Float32Level3 { return gonum.Implementation{} }

// Name returns "gonum", the name of the implementation in this build.
func Name() string { return "gonum" }

// SetThreads does nothing: this build has no OpenBLAS.
func SetThreads(int) {}

// Threads returns 1: gonum's BLAS runs on the calling goroutine.
func Threads() int { return 1 }
