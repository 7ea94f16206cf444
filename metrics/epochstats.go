package metrics

// EpochStats is one epoch's summary over all ranks (train.EpochStats is
// this type). Its JSON form is the history of package train's checkpoints;
// the metrics file has its Record, an Epoch.
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
	// to be sampled and fetched, on the slowest rank
	// (PhaseSeconds[PhaseWait]): all of the preparation without
	// train.Config.Overlap, what the loader did not hide behind the
	// computation with it. Minibatch training only.
	WaitSeconds float64          `json:"wait_s"`
	Bytes       map[string]int64 `json:"bytes"`   // bytes sent by phase, summed over ranks
	Batches     int              `json:"batches"` // minibatches per rank
	// FromStep is, for an epoch resumed from a checkpoint written inside
	// it (train.Common.CheckpointSteps, a stop on a signal), the steps
	// of it done before: its loss and accuracies cover the whole epoch,
	// exactly as an uninterrupted run's, but its times, bytes and fetch
	// counts only steps FromStep … Batches−1. 0 otherwise.
	FromStep int `json:"from_step,omitempty"`
	// CheckpointSeconds is the time rank 0's step loop spent in the
	// checkpoints written inside the epoch (train.Common.CheckpointSteps,
	// CheckpointInterval, a stop): gathering the epoch's sums, copying
	// the state, waiting for the write before it and for the ranks'
	// agreement. The file is written in the background meanwhile. 0
	// when none was written.
	CheckpointSeconds float64 `json:"checkpoint_s,omitempty"`
	// Feature fetches of the training minibatches, summed over ranks: rows
	// asked for, rows served by a rank's cache, and distinct rows fetched
	// from other ranks (alltoall.Counts).
	FetchRows  int64 `json:"fetch_rows"`
	CacheHits  int64 `json:"cache_hits"`
	RemoteRows int64 `json:"remote_rows"`
	// GPUReads are the rows and bytes the device gathers of the training
	// minibatches read from each feature tier (device memory, mapped host
	// memory, the mapped buffer of remote rows), summed over ranks; nil
	// unless the inputs were gathered on the device (train.Config.Device cuda
	// with dense float32 features).
	GPUReads *GPUReads `json:"gpu_reads,omitempty"`
	// GradExposedSeconds is the time the step was blocked on gradient
	// sums after its backward pass, on the slowest rank: the part of the
	// gradient exchange (train.Config.GradBucketMB, GradDType) that
	// neither backward nor the optimizer hid, which is the grad phase's
	// time (PhaseSeconds[PhaseGrad]). Minibatch training only.
	GradExposedSeconds float64 `json:"grad_exposed_s"`
	// GradWaitSeconds is the part of GradExposedSeconds that the gradient
	// sum through shared memory (collective.SharedSum) waited in its first
	// Sync for the other ranks' gradients, on the rank that waited
	// longest: the ranks' skew at the end of backward, plus a barrier's
	// latency per step. It is 0 when the sums go through MPI's Allreduce.
	GradWaitSeconds float64 `json:"grad_wait_s"`
}

// Record returns the metrics record of the epoch: the accuracies and the
// validation loss only when it was evaluated.
func (st *EpochStats) Record() Epoch {
	rec := Epoch{
		Epoch: st.Epoch, Loss: st.Loss, TrainAcc: st.TrainAcc,
		EpochS: st.Seconds, PhaseS: st.PhaseSeconds, CriticalPhaseS: st.CriticalPhaseSeconds, WaitS: st.WaitSeconds,
		Bytes: st.Bytes, Batches: st.Batches, FetchRows: st.FetchRows, CacheHits: st.CacheHits, RemoteRows: st.RemoteRows,
		FromStep: st.FromStep, CheckpointS: st.CheckpointSeconds,
	}
	if st.Evaluated {
		rec.ValAcc, rec.TestAcc, rec.ValLoss = &st.ValAcc, &st.TestAcc, &st.ValLoss
	}
	rec.GradExposedS = st.GradExposedSeconds
	rec.GradWaitS = st.GradWaitSeconds
	if st.GPUReads != nil {
		g := *st.GPUReads
		rec.GPUReads = &g
	}
	return rec
}
