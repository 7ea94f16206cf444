package perfmodel

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Inputs are what Tabulate fits and predicts: the networks, the measured
// runs and the rank counts.
type Inputs struct {
	// Net is the network of the predictions; FitNet the one the Fit runs
	// ran on, whose predicted collective times are taken out of their
	// phases (Net when nil).
	Net, FitNet *Network
	// Fit are the runs to fit the compute on: minibatch runs, or
	// full-graph runs of one mode, all comparable (Measured.Comparable).
	Fit []*Measured
	// Validate are runs to predict each at its own p with its own
	// counts, to compare with their measured epochs.
	Validate []*Measured
	// Workload are runs whose counts are the workload at their p, taken
	// instead of extrapolating from Fit; with those of Fit, their p need
	// no extrapolation.
	Workload []*Measured
	// NPs are the rank counts to predict.
	NPs []int
	// FitNode is the machine of the Fit runs, Target the predicted one.
	FitNode, Target Node
	// Layout returns the pipelines and stages of a full-graph run of mode
	// at p ranks with pipelines pipelines asked for (train.FullConfig's
	// Layout); only full-graph tables call it.
	Layout func(mode string, pipelines, p int) (pl, st int, err error)
}

// Table is the fitted compute and the predictions of Tabulate: the
// Validate runs first, each with its measured epoch, then one row per
// rank count of NPs. Exactly one of Compute and FullCompute is set.
type Table struct {
	Compute     *Compute     // minibatch runs
	FullCompute *FullCompute // full-graph runs
	Mode        string       // full-graph: the runs' mode
	Rows        []Row
}

// Row is one prediction of a Table, and the measured epoch of a Validate
// run (0 for a rank count of NPs).
type Row struct {
	Prediction // minibatch tables
	Full       FullPrediction
	Measured   float64
}

// Epoch returns the row's predicted epoch seconds.
func (r *Row) Epoch() float64 {
	if r.Full.Comm != nil {
		return r.Full.Epoch
	}
	return r.Prediction.Epoch
}

// Tabulate fits the compute on in.Fit (FitCompute or FitFull, as the
// runs are minibatch or full-graph), then predicts every Validate run at
// its own p with its own counts and every rank count of NPs, with the
// counts of a Workload or Fit run at that p, else extrapolated from the
// Fit runs (Extrapolate, ExtrapolateFull). Every Validate run must be
// comparable with the first Fit run.
func Tabulate(in Inputs) (*Table, error) {
	if len(in.Fit) == 0 {
		return nil, fmt.Errorf("no runs to fit")
	}
	if in.FitNet == nil {
		in.FitNet = in.Net
	}
	if in.Fit[0].Full != nil {
		return tabulateFull(in)
	}
	runs := make([]Run, len(in.Fit))
	names := make([]string, len(in.Fit))
	for i, r := range in.Fit {
		runs[i], names[i] = r.Run, r.Name
	}
	comp, err := FitCompute(runs, in.FitNode, in.FitNet)
	if err != nil {
		return nil, fmt.Errorf("--fit %s: %w", strings.Join(names, ","), err)
	}
	t := &Table{Compute: comp}
	base := in.Fit[0]
	for _, v := range in.Validate {
		if !reflect.DeepEqual(v.Comparable(), base.Comparable()) {
			return nil, fmt.Errorf("--validate %s: a different configuration from the --fit runs", v.Name)
		}
		t.Rows = append(t.Rows, Row{Prediction: comp.Predict(in.Net, &v.Workload, in.Target, v.Overlap), Measured: v.EpochSeconds})
	}
	for _, p := range in.NPs {
		if p < 1 {
			return nil, fmt.Errorf("--np %d < 1", p)
		}
		var w *Workload
		for _, r := range in.Workload {
			if r.P == p {
				w = &r.Workload
			}
		}
		for _, r := range in.Fit {
			if w == nil && r.P == p {
				w = &r.Workload
			}
		}
		if w == nil {
			if base.TrainVertices < 1 {
				return nil, fmt.Errorf("%s: no train_vertices to extrapolate the minibatches from", base.Name)
			}
			nb := Batches(p, base.TrainVertices, base.BatchSize, base.GlobalBatch)
			seeds := float64(base.TrainVertices) / float64(p)
			if w, err = Extrapolate(runs, p, nb, seeds, base.Params); err != nil {
				return nil, fmt.Errorf("extrapolating to p=%d: %w", p, err)
			}
		}
		t.Rows = append(t.Rows, Row{Prediction: comp.Predict(in.Net, w, in.Target, base.Overlap)})
	}
	return t, nil
}

// tabulateFull is Tabulate for full-graph runs.
func tabulateFull(in Inputs) (*Table, error) {
	runs := make([]FullRun, len(in.Fit))
	names := make([]string, len(in.Fit))
	for i, r := range in.Fit {
		runs[i], names[i] = *r.Full, r.Name
	}
	comp, err := FitFull(runs, in.FitNode, in.FitNet)
	if err != nil {
		return nil, fmt.Errorf("--fit %s: %w", strings.Join(names, ","), err)
	}
	base := in.Fit[0]
	t := &Table{FullCompute: comp, Mode: base.Mode}
	for _, v := range in.Validate {
		if a, b := base.Comparable(), v.Comparable(); !reflect.DeepEqual(a, b) {
			return nil, fmt.Errorf("--validate %s: a different configuration from %s (%s)", v.Name, base.Name, strings.Join(configDiff(a, b), "; "))
		}
		t.Rows = append(t.Rows, Row{Full: comp.Predict(in.Net, &v.Full.FullWorkload, in.Target), Measured: v.Full.EpochSeconds})
	}
	for _, p := range in.NPs {
		var w *FullWorkload
		for _, r := range append(in.Workload, in.Fit...) {
			if w == nil && r.Full != nil && r.Full.P == p {
				w = &r.Full.FullWorkload
			}
		}
		if w == nil {
			pl, st, err := in.Layout(base.Mode, base.Pipelines, p)
			if err == nil && st > base.Layers {
				err = fmt.Errorf("%d stages for %d layers: a stage needs a layer", st, base.Layers)
			}
			if err != nil {
				return nil, fmt.Errorf("--np %d: %w", p, err)
			}
			ch := fullChunks(base.Mode, base.Chunks)
			units := FullUnits(base.Layers, base.Vertices, pl, st, ch)
			if w, err = ExtrapolateFull(runs, p, units, FullSteps(st, ch)); err != nil {
				return nil, fmt.Errorf("extrapolating to p=%d: %w", p, err)
			}
		}
		t.Rows = append(t.Rows, Row{Full: comp.Predict(in.Net, w, in.Target)})
	}
	return t, nil
}

// Records returns the table as CSV records, a header first
// (docs/training.md): p, the predicted and measured epoch and the
// relative error (both empty without a measurement), then for minibatch
// runs the loop and loader seconds and each phase's communication and
// compute seconds, for full-graph runs the compute, the communication and
// each phase's communication seconds; the workload's source last.
func (t *Table) Records() [][]string {
	h := []string{"p", "predicted_epoch_s", "measured_epoch_s", "rel_error"}
	if t.FullCompute != nil {
		h = append(h, "compute_s", "comm_s")
		for _, ph := range FullPhases {
			h = append(h, ph+"_comm_s")
		}
	} else {
		h = append(h, "loop_s", "loader_s")
		for _, ph := range Phases {
			h = append(h, ph+"_comm_s", ph+"_compute_s")
		}
	}
	recs := [][]string{append(h, "source")}
	for _, r := range t.Rows {
		var rec []string
		if t.FullCompute != nil {
			pr := r.Full
			rec = append([]string{strconv.Itoa(pr.P)}, epochCells(pr.Epoch, r.Measured)...)
			rec = append(rec, csvNum(pr.Compute), csvNum(pr.Epoch-pr.Compute))
			for _, ph := range FullPhases {
				rec = append(rec, csvNum(pr.Comm[ph]))
			}
			rec = append(rec, pr.Source)
		} else {
			pr := r.Prediction
			rec = append([]string{strconv.Itoa(pr.P)}, epochCells(pr.Epoch, r.Measured)...)
			rec = append(rec, csvNum(pr.Loop), csvNum(pr.Loader))
			for _, ph := range Phases {
				rec = append(rec, csvNum(pr.Phases[ph].Comm), csvNum(pr.Phases[ph].Compute))
			}
			rec = append(rec, pr.Source)
		}
		recs = append(recs, rec)
	}
	return recs
}

// csvNum formats a number of the CSV.
func csvNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// epochCells returns the predicted epoch, the measured one and the relative
// error (both empty without a measurement).
func epochCells(predicted, measured float64) []string {
	if measured <= 0 {
		return []string{csvNum(predicted), "", ""}
	}
	return []string{csvNum(predicted), csvNum(measured), csvNum((predicted - measured) / measured)}
}
