// Package mpi implements collective.Comm over OpenMPI: one rank per process,
// launched by mpirun or srun.
//
// # Overview
//
// Init starts MPI on a dedicated goroutine locked to one OS thread and asks
// for MPI_THREAD_FUNNELED; every MPI call of the process is funnelled to that
// thread, so goroutines may call the communicator from any thread. The
// collectives and Send and Recv are posted as nonblocking requests
// (MPI_Ibarrier, MPI_Ibcast, MPI_Iallreduce, MPI_Iallgatherv, MPI_Ialltoallv,
// MPI_Isend, MPI_Irecv) that the MPI thread progresses together, with
// MPI_Test, between other calls; the calling goroutine waits for its request
// to complete. So a goroutine blocked in Recv does not stop another from
// sending, and two goroutines may be inside collectives on two different
// communicators at once (collective.Dup): rank 0 waiting in an Alltoallv on
// one while rank 1 waits in an Allreduce on the other makes progress instead
// of deadlocking, as a funnel running one blocking call at a time would. The
// calls on one communicator must still come from one goroutine at a time, in
// the same order on every rank. Buffers and count arrays handed to a pending
// request are pinned (runtime.Pinner) until it completes. Split, SplitNode
// and Free stay blocking (MPI has no nonblocking Comm_split): they hold the
// MPI thread until every rank has called them, so they belong in setup, not
// beside communication on another communicator.
//
// MPI_THREAD_MULTIPLE is not needed, so any MPI library that grants
// MPI_THREAD_FUNNELED will do (Debian's Open MPI 4.1.4 grants MULTIPLE too).
// One thread with nonblocking requests also keeps a rank to one thread that
// polls MPI, where several threads in blocking calls would each spin.
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
