package metrics

// Epoch is the JSONL record of one training epoch, minibatch or
// full-graph. ValAcc, TestAcc and ValLoss are nil (written as null) in an
// epoch without evaluation. Times are those of the slowest rank, counts
// and bytes are summed over the ranks.
type Epoch struct {
	Epoch    int      `json:"epoch"`
	Loss     float64  `json:"loss"`      // mean training loss per seed
	TrainAcc float64  `json:"train_acc"` // accuracy on the epoch's training seeds
	ValAcc   *float64 `json:"val_acc"`
	TestAcc  *float64 `json:"test_acc"`
	ValLoss  *float64 `json:"val_loss"`
	EpochS   float64  `json:"epoch_s"` // training time, evaluation excluded
	// PhaseS is the seconds by phase, the slowest rank per phase, and
	// CriticalPhaseS those of the rank with the slowest epoch (minibatch
	// training only; null otherwise).
	PhaseS         map[string]float64 `json:"phase_s"`
	CriticalPhaseS map[string]float64 `json:"critical_phase_s"`
	WaitS          float64            `json:"wait_s"` // the compute loop waiting for its minibatches
	Bytes          map[string]int64   `json:"bytes"`  // bytes sent by phase
	Batches        int                `json:"batches"`
	// FetchRows, CacheHits and RemoteRows count the training minibatches'
	// feature rows asked for, served by a rank's cache and fetched from
	// other ranks.
	FetchRows  int64 `json:"fetch_rows"`
	CacheHits  int64 `json:"cache_hits"`
	RemoteRows int64 `json:"remote_rows"`
	// FromStep is, for an epoch resumed from a checkpoint written inside
	// it, the step it resumed at: Loss and the accuracies cover the whole
	// epoch, the times, bytes and counts only steps FromStep on. Absent
	// (0) otherwise.
	FromStep int `json:"from_step,omitempty"`
	// CheckpointS is the time rank 0's step loop spent in checkpoints
	// written inside the epoch (the file is written in the background).
	// Absent when none was.
	CheckpointS float64 `json:"checkpoint_s,omitempty"`
	// GPUReads is present when the inputs were gathered on the device.
	GPUReads *GPUReads `json:"gpu_reads,omitempty"`
	// GradExposedS is the step blocked on gradient sums after backward
	// (minibatch training only).
	GradExposedS float64 `json:"grad_exposed_s,omitempty"`
	// GradWaitS is the part of GradExposedS spent waiting for the slowest
	// rank's gradients (the shared-memory sum only).
	GradWaitS float64 `json:"grad_wait_s,omitempty"`
}

// GPUReads are the rows and bytes the device gathers read from each
// feature tier (device memory, mapped host memory, the mapped buffer of
// remote rows). Package gpu/tier counts in it (tier.Reads is this type).
type GPUReads struct {
	DeviceRows  int64 `json:"device_rows"`
	HostRows    int64 `json:"host_rows"`
	RemoteRows  int64 `json:"remote_rows"`
	DeviceBytes int64 `json:"device_bytes"`
	HostBytes   int64 `json:"host_bytes"`
	RemoteBytes int64 `json:"remote_bytes"`
}

// Add returns the element-wise sum of a and b.
func (a GPUReads) Add(b GPUReads) GPUReads {
	return GPUReads{a.DeviceRows + b.DeviceRows, a.HostRows + b.HostRows, a.RemoteRows + b.RemoteRows,
		a.DeviceBytes + b.DeviceBytes, a.HostBytes + b.HostBytes, a.RemoteBytes + b.RemoteBytes}
}

// FeatureStore is one rank's feature store (train.StoreStats is this
// type).
type FeatureStore struct {
	Bytes      int64 `json:"bytes"`       // resident rows and their indexes
	OwnRows    int64 `json:"own_rows"`    // rows of the rank's part
	CachedRows int64 `json:"cached_rows"` // remote rows cached
	GPURows    int64 `json:"gpu_rows"`    // resident rows in the device tier
	GPUBytes   int64 `json:"gpu_bytes"`
}

// Final is a command's final record: a type embedding Run, whose SetRun
// Env.Finish calls to fill in what every command reports.
type Final interface {
	SetRun(Run)
}

// Run is what every command's final record carries: written by Env.Finish
// after the command's own fields. Type is "final" in the JSONL file and
// empty (omitted) in the --json object.
type Run struct {
	Command  string       `json:"command"`
	Backend  string       `json:"backend"` // "mpi" or "inproc"
	Ranks    int          `json:"ranks"`
	Seconds  float64      `json:"seconds"` // wall time of the command
	Comm     *CommSummary `json:"comm"`
	Warnings []string     `json:"warnings,omitempty"`
	Type     string       `json:"type,omitempty"`
}

// SetRun sets r to v.
func (r *Run) SetRun(v Run) { *r = v }

// TypeFinal is Run.Type of a final record in the JSONL file.
const TypeFinal = "final"

// Training is what both kinds of training report in their final record.
type Training struct {
	Final         bool             `json:"final"`        // always true
	BestEpoch     int              `json:"best_epoch"`   // 0: no epoch evaluated
	BestValAcc    float64          `json:"best_val_acc"` // at BestEpoch
	TestAcc       float64          `json:"test_acc"`     // at BestEpoch
	MedianEpochS  float64          `json:"median_epoch_s"`
	BytesPerEpoch map[string]int64 `json:"bytes_per_epoch"` // mean by phase, summed over ranks
	Params        int              `json:"params"`
	EpochsRun     int              `json:"epochs_run"`
	PeakRSSBytes  []int64          `json:"peak_rss_bytes"`  // every rank's (VmHWM: mapped files' pages too)
	PeakAnonBytes []int64          `json:"peak_anon_bytes"` // every rank's anonymous memory (heap, stacks), sampled
	// PeakLiveHeapBytes is every rank's largest heap a collection found live.
	PeakLiveHeapBytes []int64 `json:"peak_live_heap_bytes"`
	// MedianPhaseS is the median over the epochs of each phase's seconds.
	MedianPhaseS map[string]float64 `json:"median_phase_s"`
}

// MinibatchFinal is the final record of minibatch training.
type MinibatchFinal struct {
	Run
	Training
	Config             MinibatchConfig    `json:"config"`
	RemoteRowsPerEpoch float64            `json:"remote_rows_per_epoch"`
	FeatureStores      []FeatureStore     `json:"feature_stores"` // every rank's
	StateBytes         map[string][]int64 `json:"state_bytes"`    // category → every rank's bytes
	TrainVertices      int                `json:"train_vertices"`
	// MedianCriticalPhaseS is the critical rank's phases of the median
	// epoch, which add up to about MedianEpochS.
	MedianCriticalPhaseS map[string]float64 `json:"median_critical_phase_s"`
	// BatchesPerRank and FetchRowsPerEpoch are absent without epochs.
	BatchesPerRank    *int      `json:"batches_per_rank,omitempty"`
	FetchRowsPerEpoch *float64  `json:"fetch_rows_per_epoch,omitempty"`
	GPUReads          *GPUReads `json:"gpu_reads,omitempty"` // summed over the epochs
	// DataPath is the loader's own rate; absent without epochs.
	DataPath *DataPath `json:"data_path,omitempty"`
	// InferDevice names the GPU that computed layer-wise inference;
	// absent where the CPU did.
	InferDevice string `json:"infer_device,omitempty"`
}

// FullFinal is the final record of full-graph training (modes graph, pipe
// and hybrid).
type FullFinal struct {
	Run
	Training
	Config FullConfig `json:"config"`
	// AnalyticalBytesPerEpoch is the analytical traffic by phase
	// (pipe.Analytical).
	AnalyticalBytesPerEpoch map[string]int64 `json:"analytical_bytes_per_epoch"`
	HaloRows                int64            `json:"halo_rows"`
	StateBytes              []int64          `json:"state_bytes"` // every rank's trainer state
	Vertices                int64            `json:"vertices"`
}

// Common is the configuration both kinds of training report.
type Common struct {
	Data            string  `json:"data"`
	Split           string  `json:"split"`
	Partition       string  `json:"partition"`
	FeatureNorm     string  `json:"feature_norm"`      // as applied
	FeatureNormFlag string  `json:"feature_norm_flag"` // as asked for (auto)
	Symmetrize      bool    `json:"symmetrize"`
	Reciprocity     float64 `json:"reciprocity"`
	FeatureFormat   string  `json:"feature_format"`
	Epochs          int     `json:"epochs"`
	Optimizer       string  `json:"optimizer"`
	LR              float32 `json:"lr"`
	WeightDecay     float32 `json:"weight_decay"`
	Momentum        float32 `json:"momentum"`
	Seed            uint64  `json:"seed"`
	EvalEvery       int     `json:"eval_every"`
	Select          string  `json:"select"`
	BLAS            string  `json:"blas"`
}

// MinibatchConfig is the configuration of minibatch training.
type MinibatchConfig struct {
	Common
	Model           MinibatchModel `json:"model"`
	Sampler         string         `json:"sampler"`
	Bulk            int            `json:"bulk"`
	Topology        string         `json:"topology"`
	C               int            `json:"c"`
	Fanouts         []int          `json:"fanouts"`
	Replication     int            `json:"replication"`
	Cache           string         `json:"cache"`
	CacheFrac       float64        `json:"cache_frac"`
	FeatureDType    string         `json:"feature_dtype"`
	GPUFrac         float64        `json:"gpu_frac"`
	BatchSize       int            `json:"batch_size"`        // per rank, resolved
	GlobalBatchSize int            `json:"global_batch_size"` // as asked for; 0: BatchSize is per rank
	Shuffle         string         `json:"shuffle"`
	Overlap         bool           `json:"overlap"`
	Device          string         `json:"device"`
	GradComm        string         `json:"grad_comm"`
	// EvalFanouts and EvalBatchSize are set when evaluation samples the
	// validation and test vertices' neighbourhoods (absent: layer-wise
	// inference over every vertex).
	EvalFanouts   []int `json:"eval_fanouts,omitempty"`
	EvalBatchSize int   `json:"eval_batch_size,omitempty"`
}

// FullConfig is the configuration of full-graph training.
type FullConfig struct {
	Common
	Model          FullModel `json:"model"`
	Mode           string    `json:"mode"` // graph, pipe or hybrid
	Stages         int       `json:"stages"`
	Pipelines      int       `json:"pipelines"`
	Chunks         int       `json:"chunks"`
	ChunkPartition string    `json:"chunk_partition"`
	ShuffleChunks  bool      `json:"shuffle_chunks"`
	ClearGrads     bool      `json:"clear_grads"`
	SnapshotEvery  int       `json:"snapshot_every"`
}

// MinibatchModel is a minibatch model's configuration. Its fields are
// those of model.Config, in order, and keep its Go names as JSON keys.
type MinibatchModel struct {
	Kind            string
	In, Hidden, Out int
	Layers          int
	Heads, OutHeads int
	Dropout         float32
	Normalize       bool
	AttnDropout     float32
}

// FullModel is a deep full-graph model's configuration. Its fields are
// those of model.DeepConfig, in order, and keep its Go names as JSON keys.
type FullModel struct {
	Kind            string
	In, Hidden, Out int
	Layers          int
	Dropout         float32
	Alpha, Lambda   float64
}
