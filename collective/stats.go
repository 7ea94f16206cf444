package collective

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"gnnmpi/metrics"
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
const DefaultPhase = metrics.PhaseDefault

// Count is the traffic of one kind of call in one phase on one rank: the
// metrics' Count.
type Count = metrics.Count

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
	a[k].Add(Count{Calls: 1, SentBytes: sent, RecvBytes: recv, Seconds: d.Seconds()})
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

// Snapshot is a copy of Stats: phase → kind of call → Count. It is the
// metrics' RankComm, whose methods total it by phase and subtract two.
type Snapshot = metrics.RankComm

// SnapshotOf returns the byte counts of c, or an empty Snapshot when c does
// not count.
func SnapshotOf(c Comm) Snapshot {
	if s := StatsOf(c); s != nil {
		return s.Snapshot()
	}
	return Snapshot{}
}

// GatherComm collects every rank's byte counts, as they were when it was
// called, onto every rank and summarizes them (metrics.Summarize). It is
// collective; its own traffic is counted under metrics.PhaseMetrics after
// the snapshot is taken.
func GatherComm(c Comm) (*metrics.CommSummary, error) {
	snap := SnapshotOf(c)
	defer SetPhase(c, metrics.PhaseMetrics)()
	b, err := json.Marshal(snap) // encoding/json sorts the map keys
	if err != nil {
		return nil, err
	}
	all, counts, err := AllgatherSlice(c, b)
	if err != nil {
		return nil, err
	}
	perRank := make([]metrics.RankComm, len(counts))
	off := 0
	for r, n := range counts {
		if err := json.Unmarshal(all[off:off+n], &perRank[r]); err != nil {
			return nil, fmt.Errorf("collective: decoding rank %d's byte counts: %w", r, err)
		}
		off += n
	}
	return metrics.Summarize(perRank), nil
}
