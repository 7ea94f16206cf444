//go:build !noblas

package openblas

// #cgo LDFLAGS: -lopenblas
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
