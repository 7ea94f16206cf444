package metrics

// SampleFinal is the final record of gnnmpi sample.
type SampleFinal struct {
	Run
	Sample Sample `json:"sample"`
}

// Sample is what gnnmpi sample measured: the sampler's settings, what it
// sampled over all ranks and epochs, and how fast.
type Sample struct {
	Sampler   string `json:"sampler"` // sampling.Kind
	Fanouts   []int  `json:"fanouts"`
	BatchSize int    `json:"batch_size"`
	Bulk      int    `json:"bulk"`
	Topology  string `json:"topology"` // sampling.Layout
	C         int    `json:"c"`        // replication factor (1.5d)
	// PeakRSS is every rank's peak resident memory (VmHWM).
	PeakRSS         []int64 `json:"peak_rss_bytes"`
	Minibatches     int64   `json:"minibatches"`
	Edges           int64   `json:"edges"`    // sampled edges, all blocks of all minibatches
	Vertices        int64   `json:"vertices"` // input vertices (features to fetch), summed over minibatches
	Seconds         float64 `json:"seconds"`  // the slowest rank's sampling time
	MinibatchesPerS float64 `json:"minibatches_per_s"`
	EdgesPerS       float64 `json:"edges_per_s"`
	// Bytes sent over all ranks by phase (sampling with the topology
	// replicated sends none).
	Bytes map[string]int64 `json:"bytes"`
}
