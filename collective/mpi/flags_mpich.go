//go:build !nompi && mpich

package mpi

// The mpich tag links MPICH (pkg-config mpich, from Debian's libmpich-dev)
// instead of Open MPI. The cgo flags of every file of the package apply to
// all of its cgo code, so this file alone selects the MPI.

/*
#cgo pkg-config: mpich
*/
import "C"

// Implementation names the MPI library this binary is built against.
const Implementation = "mpich"
