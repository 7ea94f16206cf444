//go:build !nompi && mpich && !mpiwrapper

package mpi

// pkg-config mpich (Debian's libmpich-dev). The cgo flags of every file of
// the package apply to all of its cgo code, so this file alone selects the
// MPI's headers and library.

/*
#cgo pkg-config: mpich
*/
import "C"
