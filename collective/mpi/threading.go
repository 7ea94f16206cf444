package mpi

import "fmt"

// Threading is how the goroutines of a process reach MPI.
type Threading int

// The threading modes.
const (
	// Multiple asks for MPI_THREAD_MULTIPLE: every call is made, blocking,
	// by the thread of the goroutine that makes it, so that calls on
	// different communicators run at once on different threads with the
	// library's own (blocking, tuned) collectives.
	Multiple Threading = iota + 1
	// Funneled asks for MPI_THREAD_FUNNELED: one thread makes every MPI
	// call; the collectives and Send/Recv are nonblocking requests it
	// progresses together, so that calls on different communicators
	// interleave.
	Funneled
)

func (t Threading) String() string {
	switch t {
	case Multiple:
		return "multiple"
	case Funneled:
		return "funneled"
	}
	return fmt.Sprintf("Threading(%d)", int(t))
}

// ParseThreading returns the Threading named s ("multiple" or "funneled").
func ParseThreading(s string) (Threading, error) {
	switch s {
	case "multiple":
		return Multiple, nil
	case "funneled":
		return Funneled, nil
	}
	return 0, fmt.Errorf("mpi: unknown threading %q (want multiple or funneled)", s)
}
