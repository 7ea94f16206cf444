package perfmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"gnnmpi/metrics"
)

// modeGraph is the full-graph mode whose parts are not pipelined
// (metrics.FullConfig.Mode; train.ModeGraph).
const modeGraph = "graph"

// Measured is a train run read from its final metrics record, to fit the
// model on or to compare a prediction with.
type Measured struct {
	// Run is a minibatch run as the model sees it; for a full-graph run
	// only its Name and P are set, and Full holds the model's run.
	Run
	// Full is the run as a full-graph epoch (mode graph, pipe, hybrid);
	// nil for minibatch training.
	Full *FullRun
	// Record is the decoded final record.
	Record metrics.TrainFinal
	// Mode is the full-graph mode: graph, pipe or hybrid ("" for a
	// minibatch run).
	Mode string
	// Layers, Vertices, Chunks and Pipelines are a full-graph run's model
	// depth, graph order, chunks per part and pipelines.
	Layers    int
	Vertices  int64
	Chunks    int
	Pipelines int
	// Params is the model's parameter count; TrainVertices, BatchSize and
	// GlobalBatch are a minibatch run's training vertices and batch sizes
	// (per rank and as asked for).
	Params        int
	TrainVertices int
	BatchSize     int
	GlobalBatch   int
}

// DecodeMeasured decodes the final metrics record of a train run named
// name (a file's path, for messages): b is a JSON object (gnnmpi --json
// train) or a --metrics JSONL, whose last line is the final record.
func DecodeMeasured(name string, b []byte) (*Measured, error) {
	b = bytes.TrimSpace(b)
	at := name
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 && !json.Valid(b) {
		at = fmt.Sprintf("%s:%d", name, bytes.Count(b, []byte{'\n'})+1)
		b = b[i+1:]
	}
	rec, err := metrics.DecodeTrainFinal(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	return NewMeasured(name, rec)
}

// NewMeasured returns the run of the final record rec named name. It
// fails when rec lacks what the model needs (byte counts of every rank,
// an epoch, the median epoch and phase times of a run from before the
// model).
func NewMeasured(name string, rec metrics.TrainFinal) (*Measured, error) {
	run, tr := rec.Run(), rec.Training()
	if run.Ranks < 1 || run.Comm == nil || len(run.Comm.PerRank) != run.Ranks || tr.EpochsRun < 1 {
		var counts int
		if run.Comm != nil {
			counts = len(run.Comm.PerRank)
		}
		return nil, fmt.Errorf("%s: %d ranks, %d byte counts, %d epochs", name, run.Ranks, counts, tr.EpochsRun)
	}
	if rec.Full != nil {
		return newFullMeasured(name, rec)
	}
	m := rec.Minibatch
	if m.MedianEpochS <= 0 || m.MedianPhaseS == nil || m.BatchesPerRank == nil {
		return nil, fmt.Errorf("%s: no median_epoch_s, median_phase_s or batches_per_rank (a run from before predict)", name)
	}
	r := &Measured{Record: rec, Params: m.Params, TrainVertices: m.TrainVertices,
		BatchSize: m.Config.BatchSize, GlobalBatch: m.Config.GlobalBatchSize}
	w := Workload{P: m.Ranks, Batches: float64(*m.BatchesPerRank), Seeds: float64(m.TrainVertices) / float64(m.Ranks),
		Source: "measured " + name}
	if m.FetchRowsPerEpoch != nil {
		w.FetchRows = *m.FetchRowsPerEpoch / float64(m.Ranks)
	}
	comm, commS, err := traffic(name, m.Comm.PerRank, Phases, float64(m.EpochsRun))
	if err != nil {
		return nil, err
	}
	w.Comm = comm
	// The phases of the rank with the slowest epoch add up to the epoch;
	// the slowest rank per phase (older runs have only those) overcounts
	// when one rank's wait is another's compute.
	phases := m.MedianCriticalPhaseS
	if phases == nil {
		phases = m.MedianPhaseS
	}
	r.Run = Run{Name: name, Workload: w, Overlap: m.Config.Overlap, PhaseSeconds: phases, CommSeconds: commS, EpochSeconds: m.MedianEpochS}
	return r, nil
}

// newFullMeasured returns a full-graph run (mode graph, pipe or hybrid).
func newFullMeasured(name string, rec metrics.TrainFinal) (*Measured, error) {
	m := rec.Full
	if m.MedianEpochS <= 0 || m.Vertices < 1 {
		return nil, fmt.Errorf("%s: no median_epoch_s or vertices (a full-graph run from before predict)", name)
	}
	cfg := &m.Config
	r := &Measured{Record: rec, Mode: cfg.Mode, Params: m.Params, Layers: cfg.Model.Layers, Vertices: m.Vertices,
		Chunks: cfg.Chunks, Pipelines: cfg.Pipelines}
	if r.Layers < 1 || cfg.Stages < 1 || r.Pipelines < 1 {
		return nil, fmt.Errorf("%s: no model layers, stages or pipelines in its config", name)
	}
	comm, _, err := traffic(name, m.Comm.PerRank, FullPhases, float64(m.EpochsRun))
	if err != nil {
		return nil, err
	}
	chunks := fullChunks(r.Mode, r.Chunks)
	units := FullUnits(r.Layers, m.Vertices, r.Pipelines, cfg.Stages, chunks)
	r.Full = &FullRun{Name: name, EpochSeconds: m.MedianEpochS,
		FullWorkload: FullWorkload{P: m.Ranks, Units: units, Steps: FullSteps(cfg.Stages, chunks), Comm: comm, Source: "measured " + name}}
	r.Run.Name = name
	r.Run.P = m.Ranks
	return r, nil
}

// traffic returns, per phase and kind of call, the calls and bytes per
// epoch of the busiest rank (send and recv count one message from either
// side: their maximum), and per phase the slowest rank's seconds inside
// collectives, from every rank's counts of a run of epochs epochs.
func traffic(name string, perRank []metrics.RankComm, phases []string, epochs float64) (map[string]map[Kind]Traffic, map[string]float64, error) {
	comm := map[string]map[Kind]Traffic{}
	commS := map[string]float64{}
	for _, rank := range perRank {
		for _, ph := range phases {
			sec := 0.0
			per := map[Kind]Traffic{}
			for op, cnt := range rank[ph] {
				k, ok := KindOf(op)
				if !ok {
					return nil, nil, fmt.Errorf("%s: unknown kind of call %q", name, op)
				}
				t := per[k]
				t.Calls = math.Max(t.Calls, float64(cnt.Calls)/epochs)
				t.Bytes += float64(max(cnt.SentBytes, cnt.RecvBytes)) / epochs
				if k == Sendrecv {
					t.Bytes = math.Max(per[k].Bytes, float64(max(cnt.SentBytes, cnt.RecvBytes))/epochs)
				}
				per[k] = t
				sec += cnt.Seconds / epochs
			}
			commS[ph] = math.Max(commS[ph], sec)
			for k, t := range per {
				if comm[ph] == nil {
					comm[ph] = map[Kind]Traffic{}
				}
				old := comm[ph][k]
				comm[ph][k] = Traffic{Calls: math.Max(old.Calls, t.Calls), Bytes: math.Max(old.Bytes, t.Bytes)}
			}
		}
	}
	return comm, commS, nil
}

// fullChunks is the chunks of a pipeline's schedule: 1 in graph mode
// (each part whole; its config keeps the flag's default).
func fullChunks(mode string, chunks int) int {
	if mode == modeGraph {
		return 1
	}
	return max(chunks, 1)
}

// Comparable returns the configuration of r that must agree between runs
// fitted together: all but the settings that may differ with p or do not
// change an epoch's work, which are zeroed. Two runs may be fitted
// together when their Comparable values are reflect.DeepEqual.
func (r *Measured) Comparable() any {
	if f := r.Record.Full; f != nil {
		c := f.Config
		c.Epochs, c.EvalEvery, c.Select, c.Stages = 0, 0, "", 0
		if c.Mode == modeGraph {
			c.Pipelines = 0 // a full-graph layout: p in graph mode
		}
		return c
	}
	c := r.Record.Minibatch.Config
	c.Epochs, c.EvalEvery, c.Select = 0, 0, ""
	// Whether the loader overlapped is each run's own input of the model
	// (Run.Overlap): a run with a core per rank prepares its minibatches
	// inline (train.Config.OverlapCores) where one with more overlaps.
	c.Overlap = false
	if c.GlobalBatchSize > 0 {
		c.BatchSize = 0
	}
	return c
}

// configDiff returns the keys of two comparable configurations that
// differ, with both values, sorted.
func configDiff(a, b any) []string {
	var ma, mb map[string]any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var diff []string
	for k := range ma {
		if !reflect.DeepEqual(ma[k], mb[k]) {
			diff = append(diff, fmt.Sprintf("%s %v vs %v", k, ma[k], mb[k]))
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			diff = append(diff, k)
		}
	}
	sort.Strings(diff)
	return diff
}

// ReadMeasured reads the runs named names with read (os.ReadFile, say)
// and decodes them (DecodeMeasured), in order. Every run must be
// comparable with the first (Comparable): the error of one that is not
// names what, the run, the first run and the settings that differ.
func ReadMeasured(names []string, what string, read func(name string) ([]byte, error)) ([]*Measured, error) {
	var runs []*Measured
	for _, name := range names {
		b, err := read(name)
		if err != nil {
			return nil, err
		}
		r, err := DecodeMeasured(name, b)
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 {
			if a, b := runs[0].Comparable(), r.Comparable(); !reflect.DeepEqual(a, b) {
				return nil, fmt.Errorf("%s %s: a different configuration from %s (%s)", what, name, runs[0].Name, strings.Join(configDiff(a, b), "; "))
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}
