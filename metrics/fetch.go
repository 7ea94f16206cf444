package metrics

// SweepPoint is the feature traffic of the training minibatches under
// one cache policy and size, per epoch and summed over ranks unless said
// otherwise (train.FetchSweep; train.SweepPoint is this type).
type SweepPoint struct {
	Cache      string  `json:"cache"` // the cache policy (alltoall.CachePolicy)
	CacheFrac  float64 `json:"cache_frac"`
	CacheRows  int     `json:"cache_rows"` // the cache's capacity per rank, ⌊α·n/parts⌋
	FetchRows  float64 `json:"fetch_rows"`
	CacheHits  float64 `json:"cache_hits"`
	RemoteRows float64 `json:"remote_rows"`
	// FetchBytes is the bytes the fetch sends (phase fetch): request
	// counts, ids and rows.
	FetchBytes float64 `json:"fetch_bytes"`
	// FetchSeconds is the slowest rank's time in the fetches.
	FetchSeconds float64 `json:"fetch_s"`
	// ScoreSeconds is the slowest rank's time computing the policy's
	// scores (shared by the fractions of a policy); FillSeconds that of
	// building the store and filling its cache.
	ScoreSeconds float64 `json:"score_s"`
	FillSeconds  float64 `json:"fill_s"`
	// StoreBytesMax is the largest store over the ranks.
	StoreBytesMax int64 `json:"store_bytes_max"`
	CachedRowsMax int64 `json:"cached_rows_max"`
}

// FetchPoint is the JSONL record of one point of gnnmpi fetch's sweep.
type FetchPoint struct {
	Fetch SweepPoint `json:"fetch"`
}

// FetchFinal is the final record of gnnmpi fetch.
type FetchFinal struct {
	Run
	Final  bool         `json:"final"` // always true
	Points []SweepPoint `json:"points"`
	Config FetchConfig  `json:"config"`
}

// FetchConfig is the configuration of a fetch sweep.
type FetchConfig struct {
	Data          string  `json:"data"`
	Split         string  `json:"split"`
	Partition     string  `json:"partition"`
	Parts         int     `json:"parts"`
	Fanouts       []int   `json:"fanouts"`
	BatchSize     int     `json:"batch_size"`
	Replication   int     `json:"replication"`
	FeatureDType  string  `json:"feature_dtype"`
	Epochs        int     `json:"epochs"`
	Seed          uint64  `json:"seed"`
	Features      int     `json:"features"`
	Nodes         int64   `json:"nodes"`
	Symmetrize    bool    `json:"symmetrize"`
	Reciprocity   float64 `json:"reciprocity"`
	FeatureFormat string  `json:"feature_format"`
}
