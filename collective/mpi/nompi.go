//go:build nompi

package mpi

import (
	"time"

	"gnnmpi/collective"
)

// Available reports whether this binary was built with MPI.
const Available = false

// Comm is never constructed in a nompi build.
type Comm struct{ collective.Comm }

// Init reports that MPI is not compiled in.
func Init() (*Comm, error) { return nil, ErrNoMPI }

// InitThreading reports that MPI is not compiled in.
func InitThreading(Threading) (*Comm, error) { return nil, ErrNoMPI }

// InUse returns 0: MPI never runs.
func InUse() Threading { return 0 }

// Finalize does nothing.
func Finalize() error { return nil }

// Wtime is unavailable without MPI; it returns 0.
func Wtime() float64 { return 0 }

// FortranHandle reports false: there is no MPI communicator.
func FortranHandle(collective.Comm) (int, bool) { return 0, false }

// Call will panic: MPI is not compiled in.
func Call(func()) { panic("mpi: Call in a nompi build") }

// Implementation is empty: no MPI library is linked.
const Implementation = ""

// SetCallTimeout does nothing without MPI.
func SetCallTimeout(time.Duration, func() string) {}
