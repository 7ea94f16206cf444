// Package perfmodel is an α–β–γ performance model of a training epoch:
// latency and bandwidth per kind of collective (the network), seconds per
// unit of work per phase (the compute), and the per-rank calls, bytes and
// units of an epoch at a given number of ranks p (the workload). It fits
// the network from microbenchmark samples and the compute from measured
// runs by (non-negative) least squares with gonum's mat package, and
// predicts the epoch time at any p with its breakdown per phase.
//
// # Network
//
// One call of kind k among p ranks that moves V bytes on a rank (max of
// sent and received, as collective's volume functions count them: the
// bandwidth-optimal algorithms) takes
//
//	T_k(p, V) = α_k·L_k(p) + β_k·V
//
// where L_k(p) is the number of latency-bound steps (Latency): allreduce
// 2⌈log2 p⌉, allgatherv, bcast and barrier ⌈log2 p⌉, alltoallv p−1,
// sendrecv 1, and 0 for every kind at p = 1. FitNetwork fits α_k, β_k ≥ 0
// from samples at one or several p; Preset gives nominal values for common
// networks.
//
// # Compute
//
// The compute seconds of a phase are its measured seconds on the rank
// with the slowest epoch (train's critical_phase_s) less the time the
// network model predicts for its collectives (never negative): waiting
// for the slowest rank counts as the phase's own cost. They are modelled
// as
//
//	compute_φ(p) = (c_φ + γ_φ · x_φ(p)) / share(p)^θ
//
// with x the phase's work per rank per epoch: the training seeds (sample,
// compute), the fetched rows (fetch), the collective calls (grad, none at
// p = 1). share(p) = min(1, cores per node / ranks per node) is the part
// of a core a rank gets (Node.Share), and θ ∈ [0, 1] the contention
// exponent: 1 when the ranks of a node compete for its cores all the time,
// less when some wait in collectives while others compute. FitCompute
// fits c_φ, γ_φ ≥ 0 with one row per run, and θ on a grid.
//
// Full-graph epochs (FitFull, FullWorkload) have one compute term, in
// layer·vertex products on a pipeline's critical path (FullUnits), and
// count the stage-to-stage transfers once per schedule step (FullSteps).
//
// # Epoch
//
// Each phase takes comm + compute. The loop is compute + grad, the loader
// sample + fetch. Without overlap the epoch is loop + loader; with overlap
// (the loader runs beside the loop) it is loop + max(0, loader − loop).
//
// The package is pure: no I/O and no communication.
package perfmodel
