//go:build !nompi

package mpi

import (
	"testing"
	"time"
)

// The watchdog finds the longest-blocked call past its deadline, and
// forgets calls that returned.
func TestWatchdogOverdue(t *testing.T) {
	w := &watchdog{deadline: time.Second, calls: map[uint64]watched{}}
	endA := w.begin("MPI_Bcast")
	endB := w.begin("MPI_Allreduce")
	now := time.Now()
	if _, ok := w.overdue(now); ok {
		t.Fatal("calls just begun are overdue")
	}
	w.calls[0] = watched{what: "MPI_Bcast", since: now.Add(-3 * time.Second)}
	w.calls[1] = watched{what: "MPI_Allreduce", since: now.Add(-2 * time.Second)}
	c, ok := w.overdue(now)
	if !ok || c.what != "MPI_Bcast" {
		t.Fatalf("overdue = %v, %v; want the longest-blocked MPI_Bcast", c, ok)
	}
	endA()
	if c, ok = w.overdue(now); !ok || c.what != "MPI_Allreduce" {
		t.Fatalf("after MPI_Bcast returned: overdue = %v, %v; want MPI_Allreduce", c, ok)
	}
	endB()
	if _, ok = w.overdue(now); ok {
		t.Fatal("no call left, yet one is overdue")
	}
	off := &watchdog{}
	off.begin("MPI_Send")()
	if len(off.calls) != 0 {
		t.Fatal("a watchdog without a deadline records calls")
	}
}
