// Package metis partitions graphs with the METIS library.
//
// # Overview
//
// PartGraph is a thin binding of METIS_PartGraphKway and
// METIS_PartGraphRecursive from METIS 5.1 (libmetis, linked with -lmetis).
// Its arguments and results are plain Go slices: the graph is given in the
// CSR layout METIS calls xadj/adjncy with 64-bit entries, converted at the
// boundary to METIS's idx_t (32 bits in the Debian/Ubuntu build, checked at
// compile time) with overflow checks, and METIS's return codes become the
// errors ErrInput, ErrMemory and ErrMETIS. Nothing C-typed leaves the
// package, and metis.go is its only cgo file.
//
// Package graph builds vertex weights from a Dataset (vertex count and
// train/valid/test membership, as SALIENT++ does) and turns the result into
// a partition.Book; see graph.MetisPartition. Only package graph imports
// this package, and only train and cli reach it through graph.
//
// # Threads and signals
//
// METIS is not known to be reentrant, and while it runs it temporarily
// replaces the SIGABRT and SIGTERM handlers of the whole process to turn its
// internal fatal errors into return codes. PartGraph therefore serialises all
// calls and restores the previous handlers exactly (with sigaction) after each
// call, so that the Go runtime's signal handling is intact afterwards. On
// failure METIS also prints a message to standard output or error.
package metis
