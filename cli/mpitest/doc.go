// Package mpitest holds the integration tests that launch gnnmpi under
// mpirun: the collective conformance suite at np = 1, 2, 3, 4, byte counts
// identical to the in-process backend, the abort of the whole job when one
// rank fails, distributed dataset loading, and the refusal of a nompi binary
// to run under mpirun.
//
// They run only when GNNMPI_MPI_TESTS=1 (./run.sh test sets it), so that a
// plain `go test ./...` stays single-process.
package mpitest
