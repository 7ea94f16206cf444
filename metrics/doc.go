// Package metrics owns gnnmpi's metrics format: the names of the phases
// under which time and bytes are counted, and the typed records of the
// JSONL metrics file (gnnmpi --metrics) and of the final JSON object
// (gnnmpi --json).
//
// # Overview
//
// A run's metrics file holds one JSON object a line. Training writes an
// Epoch record after every epoch; every command ends with a final record
// (Env.Finish in package cli): a MinibatchFinal or FullFinal for train,
// each embedding Run, which carries the command, backend, rank count, wall
// time and the CommSummary of every rank's bytes by phase and kind of call.
//
// The writers (package train builds training's records, package cli the
// rest) fill these types and the readers (gnnmpi predict) decode them, so
// a key is spelled once, in a struct tag here: a renamed field is a
// compile error on both sides rather than a silently missing value. The
// nested model configurations mirror model.Config and model.DeepConfig
// field for field, and package train copies them field by field.
//
// The phase names (PhaseSample … PhaseGPUCheck) are the values of
// collective.SetPhase across the project and the keys of the records'
// per-phase maps (phase_s, bytes, by_phase).
//
// Metrics is a leaf: it imports no gnnmpi package, so that every package
// may name a phase or fill a record. The byte counts that package
// collective keeps are its Count and RankComm (collective.Count and
// collective.Snapshot are these types), and the types of other packages
// that end up in a record (tier.Reads, train.EpochStats, the gpucheck
// report, perfmodel's links, traffic and fits) are aliases of types here.
// No other package spells a metrics key or a phase name. The project's
// other JSON formats are not metrics and keep their keys beside their
// readers: the .gnn header and the partition manifest (package graph) and
// the checkpoint headers (package train).
package metrics
