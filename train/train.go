package train

import (
	"gnnmpi/collective"
	"gnnmpi/gpu/tier"
	"gnnmpi/internal/memlimit"
)

// Phases of the epoch time (EpochStats.PhaseSeconds) and of the byte
// counts (EpochStats.Bytes; collective.SetPhase).
const (
	PhaseSample  = "sample"  // neighbour sampling (replicated topology: none; 1.5D: frontier gathers and sampled rows)
	PhaseSpGEMM  = "spgemm"  // the 1.5D topology's products P = Q·A (spgemm.Phase); time counts under sample
	PhaseFetch   = "fetch"   // feature all-to-all of the minibatch inputs
	PhaseCompute = "compute" // forward, backward, optimizer step
	PhaseGrad    = "grad"    // gradient Allreduce
	PhaseWait    = "wait"    // the compute loop waiting for its next minibatch (EpochStats.WaitSeconds)
	PhaseEval    = "eval"    // layer-wise full-neighbour inference
	PhaseMetrics = "metrics" // per-epoch reductions of losses, times and bytes
	PhaseSetup   = "setup"   // loading, partitioning, resuming
)

// timePhases are the phases of EpochStats.PhaseSeconds. With Config.Overlap
// sample and fetch are the loader goroutine's times, which overlap the
// compute loop's compute, grad and wait.
var timePhases = []string{PhaseSample, PhaseFetch, PhaseCompute, PhaseGrad, PhaseEval, PhaseWait}

// bytePhases are the phases of EpochStats.Bytes. The per-epoch reductions
// themselves (phase "metrics", a few hundred bytes) and the setup appear in
// the run's final communication summary only.
var bytePhases = []string{PhaseSample, PhaseSpGEMM, PhaseFetch, PhaseGrad, PhaseEval}

// EpochStats is one epoch's summary over all ranks.
type EpochStats struct {
	Epoch        int                `json:"epoch"`
	Loss         float64            `json:"loss"`      // mean training loss per seed
	TrainAcc     float64            `json:"train_acc"` // accuracy on the epoch's minibatch seeds (training mode)
	Evaluated    bool               `json:"evaluated"`
	ValAcc       float64            `json:"val_acc"`  // exact inference; 0 unless Evaluated
	ValLoss      float64            `json:"val_loss"` // mean cross-entropy on the validation vertices; 0 unless Evaluated
	TestAcc      float64            `json:"test_acc"` // exact inference; 0 unless Evaluated
	Seconds      float64            `json:"epoch_s"`  // training time of the slowest rank, evaluation excluded
	PhaseSeconds map[string]float64 `json:"phase_s"`  // slowest rank per phase
	// CriticalPhaseSeconds is the phases of the rank with the slowest
	// epoch (Seconds): they add up to its time, where PhaseSeconds may
	// take every phase from another rank (one rank's wait in a collective
	// is another's compute). Minibatch training only.
	CriticalPhaseSeconds map[string]float64 `json:"critical_phase_s,omitempty"`
	// WaitSeconds is the time the compute loop waited for its minibatches
	// to be sampled and fetched, on the slowest rank (PhaseSeconds["wait"]):
	// all of the preparation without Config.Overlap, what the loader did
	// not hide behind the computation with it. Minibatch training only.
	WaitSeconds float64          `json:"wait_s"`
	Bytes       map[string]int64 `json:"bytes"`   // bytes sent by phase, summed over ranks
	Batches     int              `json:"batches"` // minibatches per rank
	// Feature fetches of the training minibatches, summed over ranks: rows
	// asked for, rows served by a rank's cache, and distinct rows fetched
	// from other ranks (alltoall.Counts).
	FetchRows  int64 `json:"fetch_rows"`
	CacheHits  int64 `json:"cache_hits"`
	RemoteRows int64 `json:"remote_rows"`
	// GPUReads are the rows and bytes the device gathers of the training
	// minibatches read from each feature tier (device memory, mapped host
	// memory, the mapped buffer of remote rows), summed over ranks; nil
	// unless the inputs were gathered on the device (Config.Device cuda
	// with dense float32 features).
	GPUReads *tier.Reads `json:"gpu_reads,omitempty"`
}

// Result is a finished run's summary.
type Result struct {
	Epochs        []EpochStats     // every epoch, including those before a resume
	BestEpoch     int              // the best evaluated epoch by Common.Select (0: none evaluated)
	BestValAcc    float64          // validation accuracy at BestEpoch
	TestAcc       float64          // test accuracy at BestEpoch
	MedianEpochS  float64          // median of Epochs[i].Seconds
	BytesPerEpoch map[string]int64 // mean bytes per epoch by phase, summed over ranks
	// RemoteRowsPerEpoch is the mean of Epochs[i].RemoteRows.
	RemoteRowsPerEpoch float64
	// GPUReads is the sum of Epochs[i].GPUReads; nil when no epoch has
	// them.
	GPUReads  *tier.Reads
	Stores    []StoreStats // every rank's feature store
	NumParams int
	Best      []float32 // parameters at BestEpoch (Run only: a full-graph rank holds one stage)
	// PeakRSS is every rank's peak resident memory at the end of the run
	// (VmHWM; 0 where unknown). In-process ranks share one process and
	// report its peak.
	PeakRSS []int64
	// Memory is every rank's state by category (Run only; see
	// MemoryCategories): Memory[category][rank] bytes.
	Memory map[string][]int64
}

// The categories of Result.Memory: the adjacency rows and the sampler's
// matrix the rank holds (shared arrays counted once), its own feature
// rows with their index, the cached remote rows with theirs, and the
// model's weights, gradients and optimizer state.
const (
	MemTopology = "topology"
	MemFeatures = "features"
	MemCache    = "cache"
	MemModel    = "model"
)

// MemoryCategories lists Result.Memory's categories in order.
func MemoryCategories() []string { return []string{MemTopology, MemFeatures, MemCache, MemModel} }

// Hooks let the caller report progress; any may be nil. They run on every
// rank; print on rank 0 only. Epoch runs after every epoch (after its
// checkpoint, if one is due), Batch before every minibatch (Run only), Log
// for messages such as a resume.
type Hooks struct {
	Epoch func(EpochStats) error
	Batch func(epoch, batch, batches int)
	Log   func(format string, args ...any)
}

// Run trains a model on d with cfg: data-parallel minibatch SGD, every rank
// sampling and fetching its own minibatches, gradients averaged with
// Allreduce, evaluation by exact layer-wise inference. The epoch loop
// (resume, evaluation and checkpoint cadence, best epoch) is the one
// RunFull shares. Run takes d's feature rows into its feature store: once
// it has started, d.Feat and d.FeatCSR are nil, so the rows are not held
// twice.
//
// Run is collective over c: every rank must call it with the same cfg and
// partition book.
func Run(c collective.Comm, d *Data, cfg Config, h Hooks) (*Result, error) {
	cfg, err := cfg.Resolve(c.Size())
	if err != nil {
		return nil, err
	}
	t, err := newTrainer(c, d, cfg)
	if err != nil {
		return nil, err
	}
	rec, err := runLoop(t, &cfg.Common, h)
	if err != nil {
		return nil, err
	}
	if err := t.free(); err != nil {
		return nil, err
	}
	res := rec.result()
	res.NumParams, res.Stores = t.m.NumParams(), t.stores
	defer collective.SetPhase(c, PhaseMetrics)()
	mine := append(t.memory(), memlimit.PeakRSS())
	all, _, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return nil, err
	}
	cats := MemoryCategories()
	res.Memory = map[string][]int64{}
	for r := range c.Size() {
		v := all[r*len(mine) : (r+1)*len(mine)]
		for k, cat := range cats {
			res.Memory[cat] = append(res.Memory[cat], v[k])
		}
		res.PeakRSS = append(res.PeakRSS, v[len(cats)])
	}
	return &res, nil
}
