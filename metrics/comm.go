package metrics

import "sort"

// Count is the traffic of one kind of call in one phase on one rank.
// Package collective counts in it (collective.Count is this type).
type Count struct {
	Calls     int64   `json:"calls"`
	SentBytes int64   `json:"sent_bytes"`
	RecvBytes int64   `json:"recv_bytes"`
	Seconds   float64 `json:"seconds"` // wall time spent inside the calls
}

// Add adds o to c, field by field.
func (c *Count) Add(o Count) {
	c.Calls += o.Calls
	c.SentBytes += o.SentBytes
	c.RecvBytes += o.RecvBytes
	c.Seconds += o.Seconds
}

// RankComm is one rank's traffic by phase and kind of call: phase → kind
// of call → Count. It is the copy that collective.Stats.Snapshot returns
// (collective.Snapshot is this type); kinds never called in a phase are
// absent.
type RankComm map[string]map[string]Count

// Phase returns the total over all kinds of call in phase p.
func (r RankComm) Phase(p string) Count {
	var t Count
	for _, c := range r[p] {
		t.Add(c)
	}
	return t
}

// Total returns the total over all phases and kinds of call.
func (r RankComm) Total() Count {
	var t Count
	for p := range r {
		t.Add(r.Phase(p))
	}
	return t
}

// Phases returns the phase names in sorted order.
func (r RankComm) Phases() []string {
	out := make([]string, 0, len(r))
	for p := range r {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Sub returns r − o, the traffic counted between two snapshots. Entries
// that become all zero are dropped.
func (r RankComm) Sub(o RankComm) RankComm {
	out := RankComm{}
	for p, ops := range r {
		for k, c := range ops {
			d := o[p][k]
			s := Count{Calls: c.Calls - d.Calls, SentBytes: c.SentBytes - d.SentBytes,
				RecvBytes: c.RecvBytes - d.RecvBytes, Seconds: c.Seconds - d.Seconds}
			if s.Calls == 0 && s.SentBytes == 0 && s.RecvBytes == 0 {
				continue
			}
			if out[p] == nil {
				out[p] = map[string]Count{}
			}
			out[p][k] = s
		}
	}
	return out
}

// WithoutTime returns a copy with the Seconds fields zeroed: the part of a
// snapshot that is deterministic and identical across backends.
func (r RankComm) WithoutTime() RankComm {
	out := RankComm{}
	for p, ops := range r {
		out[p] = map[string]Count{}
		for k, c := range ops {
			c.Seconds = 0
			out[p][k] = c
		}
	}
	return out
}

// CommSummary is the byte accounting of a run over all ranks: every rank's
// counts by phase and kind of call, and their maxima and sums.
// collective.GatherComm gathers it.
type CommSummary struct {
	PerRank      []RankComm            `json:"per_rank"`
	MaxSentBytes int64                 `json:"max_sent_bytes"`
	MaxRecvBytes int64                 `json:"max_recv_bytes"`
	TotalBytes   int64                 `json:"total_sent_bytes"`
	ByPhase      map[string]PhaseBytes `json:"by_phase"`
}

// PhaseBytes is one phase's traffic over all ranks.
type PhaseBytes struct {
	TotalSent int64 `json:"total_sent_bytes"`
	MaxSent   int64 `json:"max_sent_bytes"`
	MaxRecv   int64 `json:"max_recv_bytes"`
}

// Summarize returns the summary of every rank's byte counts, perRank[r]
// being rank r's. The summary holds perRank's maps themselves, not copies.
func Summarize(perRank []RankComm) *CommSummary {
	s := &CommSummary{ByPhase: map[string]PhaseBytes{}}
	for _, rc := range perRank {
		s.PerRank = append(s.PerRank, rc)
		t := rc.Total()
		s.MaxSentBytes = max(s.MaxSentBytes, t.SentBytes)
		s.MaxRecvBytes = max(s.MaxRecvBytes, t.RecvBytes)
		s.TotalBytes += t.SentBytes
		for _, p := range rc.Phases() {
			pc := rc.Phase(p)
			pb := s.ByPhase[p]
			pb.TotalSent += pc.SentBytes
			pb.MaxSent = max(pb.MaxSent, pc.SentBytes)
			pb.MaxRecv = max(pb.MaxRecv, pc.RecvBytes)
			s.ByPhase[p] = pb
		}
	}
	return s
}
