package metrics

import (
	"encoding/json"
	"fmt"

	"gnnmpi/collective"
)

// Count is the traffic of one kind of call in one phase on one rank
// (collective.Count as the metrics write it).
type Count struct {
	Calls     int64   `json:"calls"`
	SentBytes int64   `json:"sent_bytes"`
	RecvBytes int64   `json:"recv_bytes"`
	Seconds   float64 `json:"seconds"` // wall time spent inside the calls
}

// RankComm is one rank's traffic by phase and kind of call (a
// collective.Snapshot as the metrics write it).
type RankComm map[string]map[string]Count

// RankCommOf returns s as the metrics write it.
func RankCommOf(s collective.Snapshot) RankComm {
	out := RankComm{}
	for p, ops := range s {
		out[p] = map[string]Count{}
		for k, c := range ops {
			out[p][k] = Count(c)
		}
	}
	return out
}

// Snapshot returns r as a collective.Snapshot.
func (r RankComm) Snapshot() collective.Snapshot {
	out := collective.Snapshot{}
	for p, ops := range r {
		out[p] = map[string]collective.Count{}
		for k, c := range ops {
			out[p][k] = collective.Count(c)
		}
	}
	return out
}

// CommSummary is the byte accounting of a run over all ranks: every rank's
// counts by phase and kind of call, and their maxima and sums.
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
// being rank r's.
func Summarize(perRank []collective.Snapshot) *CommSummary {
	s := &CommSummary{ByPhase: map[string]PhaseBytes{}}
	for _, sn := range perRank {
		s.PerRank = append(s.PerRank, RankCommOf(sn))
		t := sn.Total()
		s.MaxSentBytes = max(s.MaxSentBytes, t.SentBytes)
		s.MaxRecvBytes = max(s.MaxRecvBytes, t.RecvBytes)
		s.TotalBytes += t.SentBytes
		for _, p := range sn.Phases() {
			pc := sn.Phase(p)
			pb := s.ByPhase[p]
			pb.TotalSent += pc.SentBytes
			pb.MaxSent = max(pb.MaxSent, pc.SentBytes)
			pb.MaxRecv = max(pb.MaxRecv, pc.RecvBytes)
			s.ByPhase[p] = pb
		}
	}
	return s
}

// GatherComm collects every rank's byte counts, as they were when it was
// called, onto every rank and summarizes them. It is collective; its own
// traffic is counted under PhaseMetrics after the snapshot is taken.
func GatherComm(c collective.Comm) (*CommSummary, error) {
	snap := collective.SnapshotOf(c)
	defer collective.SetPhase(c, PhaseMetrics)()
	b, err := json.Marshal(RankCommOf(snap)) // encoding/json sorts the map keys
	if err != nil {
		return nil, err
	}
	all, counts, err := collective.AllgatherSlice(c, b)
	if err != nil {
		return nil, err
	}
	perRank := make([]collective.Snapshot, len(counts))
	off := 0
	for r, n := range counts {
		var rc RankComm
		if err := json.Unmarshal(all[off:off+n], &rc); err != nil {
			return nil, fmt.Errorf("metrics: decoding rank %d's byte counts: %w", r, err)
		}
		perRank[r] = rc.Snapshot()
		off += n
	}
	return Summarize(perRank), nil
}
