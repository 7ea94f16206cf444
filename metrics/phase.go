package metrics

// Phases of the byte counts (collective.SetPhase) and of the epoch time
// (Epoch.PhaseS). Each name means one job across the project: the
// minibatch trainer and the full-graph trainer count their gradient
// Allreduce, evaluation and metric reductions under the same names.
const (
	// Minibatch training.
	PhaseSample  = "sample"  // neighbour sampling (replicated topology: none; 1.5D: frontier gathers and sampled rows)
	PhaseSpGEMM  = "spgemm"  // every distributed SpGEMM product (package spgemm); in training the 1.5D topology's P = Q·A, whose time counts under sample
	PhaseFetch   = "fetch"   // feature all-to-all of the minibatch inputs
	PhaseCompute = "compute" // forward, backward, optimizer step
	PhaseWait    = "wait"    // the compute loop waiting for its next minibatch (Epoch.WaitS)

	// Full-graph training (package pipe).
	PhaseAct     = "act"      // stage-to-stage activations, forward (Send/Recv)
	PhaseActGrad = "act-grad" // stage-to-stage activation gradients, backward (Send/Recv)
	PhaseHalo    = "halo"     // rows between pipelines (graph parts), both directions

	// Both kinds of training.
	PhaseGrad       = "grad"       // weight-gradient Allreduce
	PhaseEval       = "eval"       // exact inference: layer-wise full-neighbour (minibatch), activations and halos (full-graph)
	PhaseMetrics    = "metrics"    // reductions of losses, accuracies, times and bytes, and the final byte counts
	PhaseSetup      = "setup"      // loading, partitioning, resuming
	PhaseCheckpoint = "checkpoint" // agreeing on and writing checkpoints

	// Every command.
	PhaseDefault   = "default"   // traffic outside any named phase: collective.Stats' phase before any SetPhase
	PhaseLoad      = "load"      // broadcasting a Matrix Market matrix from rank 0 (graph.BcastMatrixMarket)
	PhaseCalibrate = "calibrate" // the network microbenchmark of gnnmpi predict --calibrate

	// gnnmpi sample, info, selftest.
	PhaseReport  = "report"  // gnnmpi sample's final reductions of its counts, times and peak memory
	PhaseInfo    = "info"    // gnnmpi info's statistics of row blocks (distpart.Describe) and GPU binding
	PhaseVerdict = "verdict" // the ranks agreeing on each conformance case's verdict (collectivetest.Verdict)
	// PhaseDup is the phase under which the conformance case
	// ConcurrentComms counts the traffic of its duplicate communicator.
	PhaseDup = "concurrent-dup"

	// gnnmpi spgemm (spgemm.Bench); its grid's splits count under
	// PhaseSetup and its products under PhaseSpGEMM.
	PhaseTiming = "timing" // the barriers and time reductions around the timed products
	PhaseVerify = "verify" // checking every rank's block of C against the local product

	// PhaseGPUCheck is the prefix of the phase of each NCCL check of
	// gnnmpi gpucheck: PhaseGPUCheck + the check's name.
	PhaseGPUCheck = "gpucheck-"
)
