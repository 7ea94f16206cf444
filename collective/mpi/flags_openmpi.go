//go:build !nompi && !mpich

package mpi

// The default build links Open MPI (pkg-config ompi-c, from Debian's
// libopenmpi-dev). The cgo flags of every file of the package apply to all
// of its cgo code, so this file alone selects the MPI.

/*
#cgo pkg-config: ompi-c
*/
import "C"

import (
	"time"

	gompi "github.com/sbromberger/gompi"
)

// abortGrace is how long Abort waits before MPI_Abort: Open MPI forwards
// what a rank wrote before it aborts.
const abortGrace time.Duration = 0

// Implementation names the MPI library this binary is built against.
const Implementation = "openmpi"

// lifecycle goes through gompi (github.com/sbromberger/gompi), built for
// the same Open MPI.
var lifecycle = mpiLifecycle{
	initialized:   gompi.IsOn,
	worldRankSize: func() (int, int, bool) { return gompi.WorldRank(), gompi.WorldSize(), true },
	finalize:      gompi.Stop,
	wtime:         gompi.WorldTime,
}
