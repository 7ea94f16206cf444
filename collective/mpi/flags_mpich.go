//go:build !nompi && mpich

package mpi

// The mpich tag builds against MPICH or an MPI of its family (Cray MPICH,
// Intel MPI, MVAPICH) instead of Open MPI: the flags come from pkg-config
// mpich (pkgconfig_mpich.go), or, with the tag mpiwrapper too, from the C
// compiler wrapper given as CC (mpicc, or Cray's cc).

import "time"

// abortGrace is how long Abort waits before MPI_Abort, so that Hydra's
// proxy forwards what the rank just wrote (its error) before the abort
// kills it: without it, about one failing job in twenty lost that
// message.
const abortGrace = 100 * time.Millisecond

// Implementation names the MPI library this binary is built against.
const Implementation = "mpich"

// lifecycle uses the package's own C calls: gompi hard-codes Open MPI's
// headers and library, so an MPICH build cannot link it.
var lifecycle = cLifecycle
