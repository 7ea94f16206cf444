package train

import (
	"cmp"
	"slices"
	"sort"

	"gnnmpi/gpu/tier"
	"gnnmpi/metrics"
)

// timePhases are the phases of EpochStats.PhaseSeconds. With Config.Overlap
// sample and fetch are the loader goroutine's times, which overlap the
// compute loop's compute, grad and wait.
var timePhases = []string{metrics.PhaseSample, metrics.PhaseFetch, metrics.PhaseCompute, metrics.PhaseGrad, metrics.PhaseEval, metrics.PhaseWait}

// bytePhases are the phases of EpochStats.Bytes. The per-epoch reductions
// themselves (phase "metrics", a few hundred bytes) and the setup appear in
// the run's final communication summary only.
var bytePhases = []string{metrics.PhaseSample, metrics.PhaseSpGEMM, metrics.PhaseFetch, metrics.PhaseGrad, metrics.PhaseEval}

// EpochStats is one epoch's summary over all ranks. Its JSON form is the
// checkpoints' history; the metrics file has Record's.
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

// Record returns the metrics record of the epoch: the accuracies and the
// validation loss only when it was evaluated.
func (st *EpochStats) Record() metrics.Epoch {
	rec := metrics.Epoch{
		Epoch: st.Epoch, Loss: st.Loss, TrainAcc: st.TrainAcc,
		EpochS: st.Seconds, PhaseS: st.PhaseSeconds, CriticalPhaseS: st.CriticalPhaseSeconds, WaitS: st.WaitSeconds,
		Bytes: st.Bytes, Batches: st.Batches, FetchRows: st.FetchRows, CacheHits: st.CacheHits, RemoteRows: st.RemoteRows,
	}
	if st.Evaluated {
		rec.ValAcc, rec.TestAcc, rec.ValLoss = &st.ValAcc, &st.TestAcc, &st.ValLoss
	}
	if st.GPUReads != nil {
		g := metrics.GPUReads(*st.GPUReads)
		rec.GPUReads = &g
	}
	return rec
}

// medianPhaseSeconds returns the median over the epochs of each phase's
// seconds (EpochStats.PhaseSeconds; a phase missing from an epoch counts
// as 0), the mean of the two middle epochs for an even count.
func medianPhaseSeconds(epochs []EpochStats) map[string]float64 {
	out := map[string]float64{}
	if len(epochs) == 0 {
		return out
	}
	for _, e := range epochs {
		for ph := range e.PhaseSeconds {
			out[ph] = 0
		}
	}
	s := make([]float64, len(epochs))
	for ph := range out {
		for i, e := range epochs {
			s[i] = e.PhaseSeconds[ph]
		}
		sort.Float64s(s)
		out[ph] = (s[(len(s)-1)/2] + s[len(s)/2]) / 2
	}
	return out
}

// medianCriticalPhaseSeconds returns the critical rank's phases
// (EpochStats.CriticalPhaseSeconds) of the median epoch by time (the lower
// median), which add up to about its Seconds; nil without epochs.
func medianCriticalPhaseSeconds(epochs []EpochStats) map[string]float64 {
	if len(epochs) == 0 {
		return nil
	}
	e := slices.Clone(epochs)
	slices.SortStableFunc(e, func(a, b EpochStats) int { return cmp.Compare(a.Seconds, b.Seconds) })
	return e[(len(e)-1)/2].CriticalPhaseSeconds
}
