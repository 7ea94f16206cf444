// Package ptscotch partitions distributed graphs with PT-Scotch, the
// parallel Scotch library (SCOTCH_dgraphPart).
//
// # Overview
//
// Part is a thin binding of SCOTCH_dgraphInit, SCOTCH_dgraphBuild,
// SCOTCH_stratDgraphMapBuild and SCOTCH_dgraphPart. Its arguments and
// results are plain Go slices: each rank passes its block of consecutive
// vertices in the CSR layout Scotch calls vertloctab/edgeloctab, with
// 64-bit entries and global vertex numbers, converted at the boundary to
// SCOTCH_Num with overflow checks (MaxNum). The communicator comes as a
// Fortran handle (MPI_Comm_c2f on the caller's side, MPI_Comm_f2c here),
// which is an integer in every MPI and so needs no MPI type in Go. Nothing
// C-typed leaves the package and ptscotch.go is its only cgo file.
//
// The graph must be undirected (j is a neighbour of i exactly when i is a
// neighbour of j, across rank boundaries too) and free of self-loops and
// duplicate edges: package partition/dist builds such a graph from row
// blocks of a directed one and calls Part through an injected engine.
//
// # Build
//
// Debian's libptscotch-dev installs no pkg-config file; ptscotch.go
// compiles against /usr/include/scotch (the default SCOTCH_Num width of
// the distribution, 32 bits on Debian 12) and links -lptscotch
// -lptscotcherr (libptscotch carries the sequential Scotch routines it
// needs; libptscotcherr prints Scotch's errors and returns, where
// libptscotcherrexit would exit) and MPI through pkg-config ompi-c, the MPI
// libptscotch itself links. Other installations set CGO_CFLAGS and
// CGO_LDFLAGS (the 64-bit variant: -I/usr/include/scotch-int64 and
// -L/usr/lib/<arch>/scotch-int64); the Go side follows SCOTCH_Num's width
// either way. Building with the tag nompi replaces the binding with a stub
// whose Part returns ErrNoMPI; building with the tag mpich (collective/mpi
// against MPICH) does the same with ErrMPICH, since Debian's libptscotch
// links Open MPI and one binary must not hold two MPIs. Unavailable is the
// stub's error (nil where PT-Scotch is linked).
//
// # Threads
//
// Part makes MPI calls (through PT-Scotch) on the calling thread: the
// caller must be allowed to, under the MPI thread level in use (see
// collective/mpi's Call). Calls are serialised: Scotch's random state is
// process-wide.
package ptscotch
