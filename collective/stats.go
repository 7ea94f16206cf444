package collective

import (
	"sort"
	"sync"
	"time"
)

// OpKind names a kind of communication call for accounting.
type OpKind uint8

// Kinds of calls counted by Stats.
const (
	OpBarrier OpKind = iota
	OpBcast
	OpAllreduce
	OpAllgatherv
	OpAlltoallv
	OpSend
	OpRecv
	OpSplit
	numOps
)

var opNames = [numOps]string{"barrier", "bcast", "allreduce", "allgatherv", "alltoallv", "send", "recv", "split"}

func (k OpKind) String() string {
	if k < numOps {
		return opNames[k]
	}
	return "op?"
}

// DefaultPhase is the phase of traffic counted before any SetPhase.
const DefaultPhase = "default"

// Count is the traffic of one kind of call in one phase on one rank.
type Count struct {
	Calls     int64
	SentBytes int64
	RecvBytes int64
	Seconds   float64 // wall time spent inside the calls
}

func (c *Count) add(o Count) {
	c.Calls += o.Calls
	c.SentBytes += o.SentBytes
	c.RecvBytes += o.RecvBytes
	c.Seconds += o.Seconds
}

// Stats counts one rank's traffic per phase and per kind of call. It is safe
// for concurrent use. Sub-communicators made by Split share their parent's
// Stats, so a rank has one account.
//
// The current phase lives in a lane. Stats has one lane of its own, which
// SetPhase, Phase and Add use and every communicator counted by WithStats
// shares; Dup gives a duplicate communicator (and those split from it) a lane
// of its own, so that two goroutines communicating at once on different
// communicators each count under their own phase.
type Stats struct {
	mu   sync.Mutex
	root lane
	m    map[string]*[numOps]Count
}

// lane holds a current phase; Stats.mu guards it.
type lane struct{ phase string }

// NewStats returns empty Stats whose current phase is DefaultPhase.
func NewStats() *Stats {
	return &Stats{root: lane{phase: DefaultPhase}, m: map[string]*[numOps]Count{}}
}

// SetPhase makes p the phase that later traffic is counted under and returns
// the previous phase.
func (s *Stats) SetPhase(p string) (prev string) { return s.setPhase(&s.root, p) }

// Phase returns the current phase.
func (s *Stats) Phase() string { return s.phaseOf(&s.root) }

// Add counts one call of kind k under the current phase.
func (s *Stats) Add(k OpKind, sent, recv int64, d time.Duration) { s.add(&s.root, k, sent, recv, d) }

func (s *Stats) setPhase(l *lane, p string) (prev string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, l.phase = l.phase, p
	return prev
}

func (s *Stats) phaseOf(l *lane) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.phase
}

// add counts one call of kind k under l's current phase.
func (s *Stats) add(l *lane, k OpKind, sent, recv int64, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.m[l.phase]
	if a == nil {
		a = new([numOps]Count)
		s.m[l.phase] = a
	}
	a[k].add(Count{Calls: 1, SentBytes: sent, RecvBytes: recv, Seconds: d.Seconds()})
}

// Reset forgets all counts; the current phase is kept.
func (s *Stats) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m = map[string]*[numOps]Count{}
}

// Snapshot returns a copy of the counts: phase → kind of call → Count.
// Kinds never called in a phase are absent.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Snapshot{}
	for p, a := range s.m {
		ops := map[string]Count{}
		for k, c := range a {
			if c.Calls > 0 {
				ops[OpKind(k).String()] = c
			}
		}
		out[p] = ops
	}
	return out
}

// Snapshot is a copy of Stats: phase → kind of call → Count.
type Snapshot map[string]map[string]Count

// Phase returns the total over all kinds of call in phase p.
func (s Snapshot) Phase(p string) Count {
	var t Count
	for _, c := range s[p] {
		t.add(c)
	}
	return t
}

// Total returns the total over all phases and kinds of call.
func (s Snapshot) Total() Count {
	var t Count
	for p := range s {
		t.add(s.Phase(p))
	}
	return t
}

// Phases returns the phase names in sorted order.
func (s Snapshot) Phases() []string {
	out := make([]string, 0, len(s))
	for p := range s {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Sub returns s − o, the traffic counted between two snapshots. Entries that
// become all zero are dropped.
func (s Snapshot) Sub(o Snapshot) Snapshot {
	out := Snapshot{}
	for p, ops := range s {
		for k, c := range ops {
			d := o[p][k]
			r := Count{Calls: c.Calls - d.Calls, SentBytes: c.SentBytes - d.SentBytes,
				RecvBytes: c.RecvBytes - d.RecvBytes, Seconds: c.Seconds - d.Seconds}
			if r.Calls == 0 && r.SentBytes == 0 && r.RecvBytes == 0 {
				continue
			}
			if out[p] == nil {
				out[p] = map[string]Count{}
			}
			out[p][k] = r
		}
	}
	return out
}

// WithoutTime returns a copy with the Seconds fields zeroed: the part of a
// snapshot that is deterministic and identical across backends.
func (s Snapshot) WithoutTime() Snapshot {
	out := Snapshot{}
	for p, ops := range s {
		out[p] = map[string]Count{}
		for k, c := range ops {
			c.Seconds = 0
			out[p][k] = c
		}
	}
	return out
}

// SnapshotOf returns the byte counts of c, or an empty Snapshot when c does
// not count.
func SnapshotOf(c Comm) Snapshot {
	if s := StatsOf(c); s != nil {
		return s.Snapshot()
	}
	return Snapshot{}
}
