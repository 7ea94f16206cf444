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
// The phase names (PhaseSample … PhaseCalibrate) are the values of
// collective.SetPhase across the project and the keys of the records'
// per-phase maps (phase_s, bytes, by_phase).
package metrics
