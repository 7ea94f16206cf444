//go:build nompi

package mpi

import "gnnmpi/collective"

// Available reports whether this binary was built with MPI.
const Available = false

// Comm is never constructed in a nompi build.
type Comm struct{ collective.Comm }

// Init reports that MPI is not compiled in.
func Init() (*Comm, error) { return nil, ErrNoMPI }

// Finalize does nothing.
func Finalize() error { return nil }

// Wtime is unavailable without MPI; it returns 0.
func Wtime() float64 { return 0 }
