//go:build !nompi

package mpi

import (
	"runtime"
	"time"
)

// The MPI thread: one goroutine locked to one OS thread runs every MPI call.

type pending interface {
	// test makes progress and reports whether the request is complete.
	test() bool
}

type executor struct {
	calls   chan func()
	pending []pending
}

var mpiThread *executor

// startExecutor starts the MPI thread; init runs on it first.
func startExecutor(init func()) *executor {
	e := &executor{calls: make(chan func())}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		init()
		close(ready)
		e.loop()
	}()
	<-ready
	return e
}

// do runs f on the MPI thread and waits for it.
func (e *executor) do(f func()) {
	done := make(chan struct{})
	e.calls <- func() {
		f()
		close(done)
	}
	<-done
}

// post registers a request for the MPI thread to progress; it is called on
// the MPI thread.
func (e *executor) post(p pending) { e.pending = append(e.pending, p) }

func (e *executor) loop() {
	idle := 0
	timer := time.NewTimer(time.Hour)
	for {
		if len(e.pending) == 0 {
			f, ok := <-e.calls
			if !ok {
				return
			}
			f()
			continue
		}
		select {
		case f, ok := <-e.calls:
			if !ok {
				return
			}
			f()
			idle = 0
			continue
		default:
		}
		progressed := false
		live := e.pending[:0]
		for _, p := range e.pending {
			if p.test() {
				progressed = true
			} else {
				live = append(live, p)
			}
		}
		clear(e.pending[len(live):])
		e.pending = live
		if progressed {
			idle = 0
			continue
		}
		// Back off while nothing completes, up to 200 µs, waking at once for
		// a new call.
		idle++
		if idle < 64 {
			runtime.Gosched()
			continue
		}
		timer.Reset(time.Duration(min(idle, 200)) * time.Microsecond)
		select {
		case f, ok := <-e.calls:
			if !timer.Stop() {
				<-timer.C
			}
			if !ok {
				return
			}
			f()
			idle = 0
		case <-timer.C:
		}
	}
}

// stop ends the MPI thread after running last on it.
func (e *executor) stop(last func()) {
	e.do(last)
	close(e.calls)
}
