package metrics

// SpGEMMFinal is the final record of gnnmpi spgemm.
type SpGEMMFinal struct {
	Run
	SpGEMM SpGEMM `json:"spgemm"`
}

// SpGEMM is what gnnmpi spgemm measured. Its fields are those of
// spgemm.BenchResult, in order, so that the writer converts one to the
// other with a Go conversion.
type SpGEMM struct {
	Algo       string    `json:"algo"`
	Semiring   string    `json:"semiring"`
	Threads    int       `json:"threads"`
	Grid       []int     `json:"grid,omitempty"` // 1.5d: (p/c, c); 2d: (pr, pc)
	Staged     bool      `json:"staged"`
	A          string    `json:"a"`
	B          string    `json:"b"`
	Rows       int       `json:"rows,omitempty"`
	M          int64     `json:"m"`
	K          int64     `json:"k"`
	N          int64     `json:"n"`
	NNZA       int64     `json:"nnz_a"`
	NNZARows   int64     `json:"-"` // the entries of the rows of A multiplied
	NNZB       int64     `json:"nnz_b"`
	NNZC       int64     `json:"nnz_c"`
	Flops      int64     `json:"flops"`
	Seconds    float64   `json:"seconds"` // median over reps of the slowest rank's time
	SecondsMin float64   `json:"min_seconds"`
	Times      []float64 `json:"times"` // every rep's slowest-rank time
	MFLOPS     float64   `json:"mflops"`
	SumC       float64   `json:"sum_c"`    // sum of the values of C (true entries for or-and)
	Checksum   string    `json:"checksum"` // spgemm.Checksum of C, hex
	Verified   *bool     `json:"verified,omitempty"`
	Load       float64   `json:"load_seconds"`
	C          int       `json:"c,omitempty"` // 1.5d: the replication factor used
	// 1.5d with --c 0: the predicted bytes sent per rank for every c
	// (spgemm.Predict15D), of which the least chose C.
	Predicted []PredictedVolume `json:"predicted,omitempty"`
	// Bytes of one product (phase spgemm), per rank and over ranks.
	SentPerRank []int64 `json:"sent_bytes_per_rank"`
	RecvPerRank []int64 `json:"recv_bytes_per_rank"`
	MaxSent     int64   `json:"max_sent_bytes"`
	MaxRecv     int64   `json:"max_recv_bytes"`
	TotalSent   int64   `json:"total_sent_bytes"`
}

// PredictedVolume is one c of spgemm.Predict15D, the predicted bytes
// sent per rank (an alias of an unnamed struct, as is
// spgemm.PredictedVolume, so that SpGEMM converts).
type PredictedVolume = struct {
	C           int     `json:"c"`
	BcastBytes  float64 `json:"bcast_bytes"`
	ReduceBytes float64 `json:"reduce_bytes"`
}
