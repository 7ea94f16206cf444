// Package mpi implements collective.Comm over MPI (Open MPI, or MPICH and
// its derivatives): one rank per process, launched by mpirun, mpirun.mpich
// or srun.
//
// # Overview
//
// Init starts MPI on a dedicated goroutine locked to one OS thread. Two
// goroutines of a rank may then be inside collectives on two different
// communicators at once (collective.Dup; conformance case ConcurrentComms):
// rank 0 waiting in an Alltoallv on one while rank 1 waits in an Allreduce
// on the other makes progress, where a single thread running one blocking
// call at a time would deadlock. The calls on one communicator must still
// come from one goroutine at a time, in the same order on every rank. How
// depends on the thread level (InitThreading; gnnmpi's --mpi-thread):
//
//   - Multiple (the default; Debian's Open MPI 4.1.4 grants it): MPI is
//     initialised with MPI_THREAD_MULTIPLE and every call is made, blocking,
//     by the thread of the goroutine that makes it (a cgo call keeps its
//     thread until it returns). Calls on different communicators run at
//     once on different threads with the library's own collectives, and a
//     goroutine blocked in Recv does not stop another from sending.
//   - Funneled (asked for, or when the library grants less than
//     MPI_THREAD_MULTIPLE): MPI_THREAD_FUNNELED; every MPI call is funnelled
//     to the MPI thread. The collectives and Send and Recv are posted as
//     nonblocking requests (MPI_Ibarrier, MPI_Ibcast, MPI_Iallreduce,
//     MPI_Iallgatherv, MPI_Ialltoallv, MPI_Isend, MPI_Irecv) that the MPI
//     thread progresses together with MPI_Test between other calls, while
//     the calling goroutine waits for its request. Buffers and count arrays
//     of pending requests are pinned (runtime.Pinner) until they complete.
//     Split, SplitNode and Free stay blocking (MPI has no nonblocking
//     Comm_split): they hold the MPI thread until every rank has called
//     them, so they belong in setup, not beside communication on another
//     communicator. Open MPI's nonblocking collectives (libnbc), progressed
//     by polling, are slower than its blocking ones: on one node here a
//     4 MB Iallreduce between 2 ranks took 1.6–3.6 ms against 0.65 ms
//     blocking, which is why Multiple is the default.
//
// MPI errors are returned (MPI_ERRORS_RETURN) as Go errors carrying
// MPI_Error_string's text. Abort calls MPI_Abort on MPI_COMM_WORLD, which ends
// every rank of the job.
//
// Every MPI call goes through this package's own thin cgo layer, which uses
// only standard MPI-3 names: Byte travels as MPI_UINT8_T, not MPI_BYTE, on
// which MPI defines no reduction (MPICH refuses one).
//
// # Build
//
// By default the package links Open MPI through pkg-config (ompi-c, from
// Debian's libopenmpi-dev). With the tag mpich it links MPICH through
// pkg-config mpich (Debian's libmpich-dev); with the tags mpich and
// mpiwrapper it takes no pkg-config flags, for an MPICH-family MPI reached
// through a compiler wrapper given as CC (mpicc, or Cray's cc) or through
// CGO_CFLAGS and CGO_LDFLAGS. One file of the package holds the cgo flags,
// so a binary never mixes two MPIs. Implementation names the MPI linked.
// Building with the tag nompi replaces the package with a stub whose Init
// reports that MPI is not compiled in.
package mpi
