package metrics_test

import (
	"encoding/json"
	"fmt"

	"gnnmpi/metrics"
)

// Example summarizes the byte counts of two ranks, as every command's final
// object reports them under "comm": the maxima per rank and the total, by
// phase.
func Example() {
	perRank := []metrics.RankComm{
		{metrics.PhaseFetch: {"alltoallv": {Calls: 3, SentBytes: 1200, RecvBytes: 800}},
			metrics.PhaseGrad: {"allreduce": {Calls: 3, SentBytes: 4000, RecvBytes: 4000}}},
		{metrics.PhaseFetch: {"alltoallv": {Calls: 3, SentBytes: 800, RecvBytes: 1200}},
			metrics.PhaseGrad: {"allreduce": {Calls: 3, SentBytes: 4000, RecvBytes: 4000}}},
	}
	s := metrics.Summarize(perRank)
	fmt.Println("max sent per rank:", s.MaxSentBytes, "total sent:", s.TotalBytes)
	b, _ := json.Marshal(s.ByPhase)
	fmt.Println(string(b))
	// Output:
	// max sent per rank: 5200 total sent: 10000
	// {"fetch":{"total_sent_bytes":2000,"max_sent_bytes":1200,"max_recv_bytes":1200},"grad":{"total_sent_bytes":8000,"max_sent_bytes":4000,"max_recv_bytes":4000}}
}
