// Package train is gnnmpi's training driver: it wires data, partitioning,
// sampling, feature fetch, models and collectives into one epoch loop.
//
// # Overview
//
// One epoch loop serves every mode. In minibatch mode it drives a
// minibatch stepper (data-parallel GraphSAGE, GCN or GAT: sample, fetch,
// compute, gradient Allreduce); in the full-graph modes (graph, pipe,
// hybrid) it drives package pipe's trainer. The loop owns what the modes
// share: the NaN check, the evaluation cadence (exact distributed
// inference), best-epoch selection, checkpoints (atomic, through
// internal/atomicfile; --resume repeats an uninterrupted run's losses bit
// for bit; with a global batch size a minibatch checkpoint resumes at
// another rank count, schedule.elastic; one job per checkpoint directory, which rank 0 locks for the
// job's lifetime, refusing another run's checkpoint without Resume or
// Overwrite) and per-epoch metrics by phase. Configuration is one validated
// common config with typed values (optimiser, mode, cache policy, feature
// dtype, sampler, topology, shuffle, selection), checked on every rank
// before the first collective; a global batch size is resolved into the
// per-rank one here, so library callers get it as the CLI does.
//
// Load reads a dataset distributed over the ranks: topology, labels and
// split replicated, feature rows by the partition (METIS by default, or a
// partition.Book).
//
// Defaults(kind, mode) is the one table of every setting's default, which
// the command line's flags and help texts read. The caller hands down the
// backends: the collective.Comm, the BLAS (Common.BLAS) and the CUDA and
// NCCL openers (Config.Backends); train opens nothing itself. Errors about
// a setting are SettingErrors, which name the setting (its Go name), so a
// front end can name its own flag for it. The results fill the typed
// records of package metrics ((*Result).Final, (*FullResult).Final).
//
// Flags, metrics keys, every phase name and the checkpoint format are
// described in docs/training.md of the repository; the full-graph modes in
// docs/full-graph.md.
package train
