//go:build !nompi && mpich

package mpi

// The mpich tag links MPICH (pkg-config mpich, from Debian's libmpich-dev)
// instead of Open MPI. The cgo flags of every file of the package apply to
// all of its cgo code, so this file alone selects the MPI.

/*
#cgo pkg-config: mpich
*/
import "C"

import "time"

// abortGrace is how long Abort waits before MPI_Abort, so that Hydra's
// proxy forwards what the rank just wrote (its error) before the abort
// kills it: without it, about one failing job in twenty lost that
// message.
const abortGrace = 100 * time.Millisecond

// Implementation names the MPI library this binary is built against.
const Implementation = "mpich"
