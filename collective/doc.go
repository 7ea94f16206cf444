// Package collective defines the communication interface every distributed
// algorithm in gnnmpi is written against, and the byte accounting that makes
// communication volume a measured quantity.
//
// # Overview
//
// A Comm is one rank's handle on a communicator: Rank, Size, Barrier, Bcast,
// Allreduce, Allgatherv, Alltoallv, point-to-point Send/Recv, and Split into
// sub-communicators. Buffers are passed as a Buf, an untyped view of a slice
// of one of the supported element types (BufOf builds one); generic helpers
// such as AllreduceSlice and AlltoallvSlices sit on top.
//
// Backends live in sub-packages and are chosen only by package main:
// collective/inproc runs p ranks as goroutines of one process (used by
// `go test` and by `gnnmpi --ranks p`), collective/mpi runs one rank per
// process over OpenMPI. Package collectivetest is the conformance suite both
// must pass.
//
// # Collective semantics
//
// Every method except Rank and Size is collective over the communicator
// (Send and Recv are between two ranks) and returns an error for a failure of
// the environment or for inconsistent arguments across ranks. After a rank
// returns an error the communicator must be considered broken: package main
// aborts the whole job (MPI_Abort) so that no rank is left waiting.
//
// Variable-size collectives take per-rank element counts and pack the data
// of rank 0, 1, … contiguously, without gaps (displacements are the prefix
// sums of the counts).
//
// # Several goroutines
//
// The calls on one communicator come from one goroutine at a time, in the
// same order on every rank. Two goroutines of a rank may communicate at
// once on two different communicators, such as a communicator and its
// duplicate (Dup): every backend lets them be inside collectives together
// (conformance case ConcurrentComms), so that one rank waiting in a
// collective on one communicator while another waits on the other
// communicator makes progress instead of deadlocking.
//
// # Byte accounting
//
// WithStats wraps any Comm so that every call adds its logical volume to a
// Stats under the current phase (SetPhase). Sub-communicators share their
// parent's Stats and current phase; a duplicate made by Dup shares the
// Stats but has a current phase of its own, so that two goroutines
// communicating at once count under their own phases. The volume of each operation is
// defined in closed form by the functions in volume.go, from the arguments
// alone, so it is identical on every backend and can be tested against the
// analytical formulas of the algorithms built on top: bytes a rank sends to
// or receives from other ranks; copies to itself count nothing.
//
// The backends, and how to add one, are described in docs/architecture.md
// of the repository; the phase names used in gnnmpi in docs/training.md.
package collective
