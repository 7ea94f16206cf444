//go:build !nompi

package mpi

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// A watchdog ends the job when one of this rank's MPI calls stays blocked
// past a deadline: a peer that hangs, or a network link cut under a TCP
// transport whose own keepalive would take minutes, would otherwise leave
// the rank waiting. It reports which call, for how long and (through the
// describe hook) in which phase, then calls MPI_Abort on the world.
type watchdog struct {
	mu       sync.Mutex
	deadline time.Duration
	describe func() string
	calls    map[uint64]watched
	next     uint64
	stop     chan struct{}
}

type watched struct {
	what  string
	since time.Time
}

var dog watchdog

// SetCallTimeout makes every blocking MPI call of this process (the
// collectives and Send/Recv) abort the job when it has not returned after
// d: the rank prints "gnnmpi: rank R: MPI_X blocked for D (…): aborting"
// to standard error, adding describe()'s context (the phase, say) when
// describe is not nil, and calls MPI_Abort. d ≤ 0 turns the watchdog off.
// It checks every d/10 (at least every 10 ms, at most every second).
func SetCallTimeout(d time.Duration, describe func() string) {
	dog.mu.Lock()
	defer dog.mu.Unlock()
	if dog.stop != nil {
		close(dog.stop)
		dog.stop = nil
	}
	dog.deadline, dog.describe = d, describe
	if d <= 0 {
		return
	}
	if dog.calls == nil {
		dog.calls = map[uint64]watched{}
	}
	stop := make(chan struct{})
	dog.stop = stop
	tick := min(max(d/10, 10*time.Millisecond), time.Second)
	go dog.watch(stop, tick)
}

// begin records a blocking call; its end function unrecords it.
func (w *watchdog) begin(what string) (end func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deadline <= 0 {
		return func() {}
	}
	id := w.next
	w.next++
	w.calls[id] = watched{what: what, since: time.Now()}
	return func() {
		w.mu.Lock()
		delete(w.calls, id)
		w.mu.Unlock()
	}
}

// overdue returns the longest-blocked call past the deadline, if any.
func (w *watchdog) overdue(now time.Time) (watched, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst watched
	found := false
	for _, c := range w.calls {
		if now.Sub(c.since) > w.deadline && (!found || c.since.Before(worst.since)) {
			worst, found = c, true
		}
	}
	return worst, found
}

func (w *watchdog) watch(stop chan struct{}, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			c, ok := w.overdue(now)
			if !ok {
				continue
			}
			w.mu.Lock()
			describe := w.describe
			w.mu.Unlock()
			ctx := fmt.Sprintf("past --comm-timeout %s", w.deadline)
			if describe != nil {
				if s := describe(); s != "" {
					ctx += "; " + s
				}
			}
			rank := -1
			if world != nil {
				rank = world.rank
			}
			fmt.Fprintf(os.Stderr, "gnnmpi: rank %d: %s blocked for %s (%s): aborting the job\n",
				rank, c.what, now.Sub(c.since).Round(time.Millisecond), ctx)
			if world != nil {
				world.Abort(1)
			}
			os.Exit(1)
		}
	}
}
