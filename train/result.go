package train

import (
	"cmp"
	"slices"
	"sort"

	"gnnmpi/gpu/tier"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// timePhases are the phases of EpochStats.PhaseSeconds. With Config.Overlap
// sample and fetch are the loader goroutine's times, which overlap the
// compute loop's compute, grad and wait.
var timePhases = []string{metrics.PhaseSample, metrics.PhaseFetch, metrics.PhaseCompute, metrics.PhaseGrad, metrics.PhaseEval, metrics.PhaseWait}

// bytePhases are the phases of EpochStats.Bytes. The per-epoch reductions
// themselves (phase "metrics", a few hundred bytes) and the setup appear in
// the run's final communication summary only.
var bytePhases = []string{metrics.PhaseSample, metrics.PhaseSpGEMM, metrics.PhaseFetch, metrics.PhaseGrad, metrics.PhaseEval}

// EpochStats is one epoch's summary over all ranks: the metrics'
// EpochStats. Its JSON form is the checkpoints' history; the metrics file
// has its Record's.
type EpochStats = metrics.EpochStats

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
	Last      []float32 // parameters after the last epoch (Run only)
	// Overlap reports whether the loader overlapped (Run only): the
	// request of Config.Overlap, unless Config.OverlapCores turned it off.
	Overlap bool
	// Model is the model's configuration as built, its In and Out
	// from the data (Run only).
	Model model.Config
	// PeakRSS is every rank's peak resident memory at the end of the run
	// (VmHWM; 0 where unknown). In-process ranks share one process and
	// report its peak.
	PeakRSS []int64
	// PeakAnon is every rank's peak anonymous resident memory, sampled
	// (memlimit.PeakAnon: the heap and stacks without mapped files'
	// pages; the current value where main started no watch).
	PeakAnon []int64
	// PeakLiveHeap is every rank's largest live heap found by a
	// collection (memlimit.PeakLiveHeap; 0 without a watch).
	PeakLiveHeap []int64
	// Memory is every rank's state by category (Run only; see
	// MemoryCategories): Memory[category][rank] bytes.
	Memory map[string][]int64
	// DataPath is the loader's own rate (Run only; nil without epochs).
	DataPath *metrics.DataPath
	// InferDevice names the GPU that computed layer-wise inference
	// (evaluation, logits), "" where the CPU did (Run only).
	InferDevice string
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
