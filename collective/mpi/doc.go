// Package mpi implements collective.Comm over OpenMPI: one rank per process,
// launched by mpirun or srun.
//
// # Overview
//
// Init starts MPI on a dedicated goroutine locked to one OS thread and asks
// for MPI_THREAD_FUNNELED; every MPI call of the process is funnelled to that
// thread, so goroutines may call the communicator from any thread. Point-to-
// point Send and Recv are posted as nonblocking requests that the MPI thread
// progresses between other calls, so a goroutine blocked in Recv does not
// stop another from sending. Buffers handed to a pending request are pinned
// (runtime.Pinner) until it completes.
//
// MPI errors are returned (MPI_ERRORS_RETURN) as Go errors carrying
// MPI_Error_string's text. Abort calls MPI_Abort on MPI_COMM_WORLD, which ends
// every rank of the job.
//
// Lifecycle and world queries go through github.com/sbromberger/gompi;
// collectives go through this package's own thin cgo layer, because gompi's
// typed collectives are bound to communicators with unexported handles (no
// Comm_split), have no Alltoallv or Allgatherv, ignore MPI return codes, and
// index &x[0] so that zero-length parts panic.
//
// # Build
//
// The package links libmpi through pkg-config (ompi-c, from Debian's
// libopenmpi-dev). Building with the tag nompi replaces it with a stub whose
// Init reports that MPI is not compiled in.
package mpi
