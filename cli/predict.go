package cli

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/metrics"
	"gnnmpi/perfmodel"
	"gnnmpi/perfmodel/calibrate"
	"gnnmpi/pipe"
	"gnnmpi/train"
)

func predictCmd() *Command {
	return &Command{
		Name:    "predict",
		Summary: "α–β–γ model of a training epoch: calibrate the network, fit compute rates, predict epoch time at any p",
		Usage:   "--calibrate --out net.json | --net FILE|PRESET --fit RUN.json,... [--np 8,...,1024 | --validate RUN.json,...]",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			calib := fs.Bool("calibrate", false, "run the network microbenchmark on this communicator and fit α, β per kind of call")
			out := fs.String("out", "net.json", "--calibrate: the network model file to write (rank 0)")
			maxBytes := fs.Int64("max-bytes", 16<<20, "--calibrate: largest message (bytes; sizes are 16 B, 64 B, ... powers of 4)")
			minTime := fs.Duration("min-time", 30*time.Millisecond, "--calibrate: repeat a size until this long (at least --min-reps)")
			minReps := fs.Int("min-reps", 5, "--calibrate: repetitions per size, at least")
			net := fs.String("net", "", "network: a calibration file (--calibrate --out) or a preset ("+strings.Join(perfmodel.PresetNames(), ", ")+")")
			fitNet := fs.String("fit-net", "", "the network the --fit runs ran on, whose predicted collective times are taken out of their phases (default: --net)")
			fit := fs.String("fit", "", "comma-separated final metrics of train runs (gnnmpi --json train stdout, or a --metrics JSONL) to fit compute rates from")
			workload := fs.String("workload", "", "comma-separated metrics of runs whose counts are the workload at their p (instead of extrapolating)")
			nps := fs.String("np", "", "comma-separated rank counts to predict")
			validate := fs.String("validate", "", "comma-separated measured runs: predict each at its own p with its own counts and compare")
			fitCores := fs.Int("fit-cores-per-node", runtime.NumCPU(), "cores per node of the machine the --fit runs ran on (all their ranks on one node)")
			cores := fs.Int("cores-per-node", 0, "target: cores per node (0: as --fit-cores-per-node)")
			rpn := fs.Int("ranks-per-node", 0, "target: ranks per node (0: all ranks on one node)")
			csvPath := fs.String("csv", "", "write the table as CSV to this file")
			return func(env *Env) error {
				if *calib {
					return runCalibrate(env, *out, calibrate.Options{MaxBytes: *maxBytes, MinTime: *minTime, MinReps: *minReps})
				}
				o := predictOptions{net: *net, fitNet: *fitNet, fit: splitList(*fit), workload: splitList(*workload), validate: splitList(*validate), csv: *csvPath,
					fitNode: perfmodel.Node{CoresPerNode: *fitCores}, target: perfmodel.Node{CoresPerNode: *cores, RanksPerNode: *rpn}}
				if o.target.CoresPerNode == 0 {
					o.target.CoresPerNode = *fitCores
				}
				if *nps != "" {
					v, err := parseInts(*nps)
					if err != nil {
						return fmt.Errorf("predict: --np %q: %w", *nps, err)
					}
					o.nps = v
				}
				return collective.RankZero(env.Comm, func() error { return predict(env, o) })
			}
		},
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// runCalibrate times every kind of the network model on env's communicator
// (calibrate.Network), writes the fitted model to out on rank 0 and
// prints it.
func runCalibrate(env *Env, out string, o calibrate.Options) error {
	c := env.Comm
	o.Progress = func(k perfmodel.Kind) { env.Progress("calibrated %s", k) }
	net, err := calibrate.Network(c, fmt.Sprintf("calibrated on %d ranks (%s)", c.Size(), env.Backend), o)
	if err != nil {
		return fmt.Errorf("predict --calibrate: %w", err)
	}
	err = collective.RankZero(c, func() error {
		b, err := json.MarshalIndent(net, "", "  ")
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(out, append(b, '\n')); err != nil {
			return fmt.Errorf("predict: writing %s: %w", out, err)
		}
		env.Printf("%-11s %12s %12s %8s\n", "kind", "alpha_us", "beta_GB/s", "R2")
		for _, k := range perfmodel.Kinds {
			l := net.Links[k]
			env.Printf("%-11s %12.3f %12s %8.4f\n", k, l.Alpha*1e6, gbps(l.Beta), l.R2)
		}
		env.Printf("wrote %s\n", out)
		return nil
	})
	if err != nil {
		return err
	}
	return env.Finish(map[string]any{"network": net.Links, "out": out})
}

func gbps(beta float64) string {
	if beta == 0 {
		return "inf"
	}
	return fmt.Sprintf("%.3f", 1/beta/1e9)
}

type predictOptions struct {
	net, fitNet             string
	fit, workload, validate []string
	nps                     []int
	csv                     string
	fitNode, target         perfmodel.Node
}

// runFile is a fitting or measured run read from a metrics file.
type runFile struct {
	perfmodel.Run
	// Full is the run as a full-graph epoch (mode graph, pipe, hybrid);
	// nil for minibatch training, whose model is Run.
	Full          *perfmodel.FullRun
	rec           metrics.TrainFinal
	mode          string // full-graph: graph, pipe or hybrid
	layers        int
	vertices      int64
	chunks        int
	pipelines     int
	params        int
	trainVertices int
	batchSize     int
	globalBatch   int
}

// readRun reads the final metrics record of a train run: a JSON object
// (gnnmpi --json train) or the last line of a --metrics JSONL.
func readRun(path string) (*runFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	b = bytes.TrimSpace(b)
	at := path
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 && !json.Valid(b) {
		at = fmt.Sprintf("%s:%d", path, bytes.Count(b, []byte{'\n'})+1)
		b = b[i+1:]
	}
	rec, err := metrics.DecodeTrainFinal(b)
	if err != nil {
		return nil, fmt.Errorf("predict: %s: %w", at, err)
	}
	run, tr := rec.Run(), rec.Training()
	if run.Ranks < 1 || run.Comm == nil || len(run.Comm.PerRank) != run.Ranks || tr.EpochsRun < 1 {
		var counts int
		if run.Comm != nil {
			counts = len(run.Comm.PerRank)
		}
		return nil, fmt.Errorf("predict: %s: %d ranks, %d byte counts, %d epochs", path, run.Ranks, counts, tr.EpochsRun)
	}
	if rec.Full != nil {
		return readFullRun(path, rec)
	}
	m := rec.Minibatch
	if m.MedianEpochS <= 0 || m.MedianPhaseS == nil || m.BatchesPerRank == nil {
		return nil, fmt.Errorf("predict: %s: no median_epoch_s, median_phase_s or batches_per_rank (a run from before predict)", path)
	}
	rf := &runFile{rec: rec, params: m.Params, trainVertices: m.TrainVertices,
		batchSize: m.Config.BatchSize, globalBatch: m.Config.GlobalBatchSize}
	w := perfmodel.Workload{P: m.Ranks, Batches: float64(*m.BatchesPerRank), Seeds: float64(m.TrainVertices) / float64(m.Ranks),
		Source: "measured " + path}
	if m.FetchRowsPerEpoch != nil {
		w.FetchRows = *m.FetchRowsPerEpoch / float64(m.Ranks)
	}
	comm, commS, err := traffic(path, m.Comm.PerRank, perfmodel.Phases, float64(m.EpochsRun))
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
	rf.Run = perfmodel.Run{Name: path, Workload: w, Overlap: m.Config.Overlap, PhaseSeconds: phases, CommSeconds: commS, EpochSeconds: m.MedianEpochS}
	return rf, nil
}

// traffic returns, per phase and kind of call, the calls and bytes per
// epoch of the busiest rank (send and recv count one message from either
// side: their maximum), and per phase the slowest rank's seconds inside
// collectives.
func traffic(path string, perRank []collective.Snapshot, phases []string, epochs float64) (map[string]map[perfmodel.Kind]perfmodel.Traffic, map[string]float64, error) {
	comm := map[string]map[perfmodel.Kind]perfmodel.Traffic{}
	commS := map[string]float64{}
	for _, rank := range perRank {
		for _, ph := range phases {
			sec := 0.0
			per := map[perfmodel.Kind]perfmodel.Traffic{}
			for op, cnt := range rank[ph] {
				k, ok := perfmodel.KindOf(op)
				if !ok {
					return nil, nil, fmt.Errorf("predict: %s: unknown kind of call %q", path, op)
				}
				t := per[k]
				t.Calls = math.Max(t.Calls, float64(cnt.Calls)/epochs)
				t.Bytes += float64(max(cnt.SentBytes, cnt.RecvBytes)) / epochs
				if k == perfmodel.Sendrecv {
					t.Bytes = math.Max(per[k].Bytes, float64(max(cnt.SentBytes, cnt.RecvBytes))/epochs)
				}
				per[k] = t
				sec += cnt.Seconds / epochs
			}
			commS[ph] = math.Max(commS[ph], sec)
			for k, t := range per {
				if comm[ph] == nil {
					comm[ph] = map[perfmodel.Kind]perfmodel.Traffic{}
				}
				old := comm[ph][k]
				comm[ph][k] = perfmodel.Traffic{Calls: math.Max(old.Calls, t.Calls), Bytes: math.Max(old.Bytes, t.Bytes)}
			}
		}
	}
	return comm, commS, nil
}

// readFullRun reads the final metrics of a full-graph run (mode graph,
// pipe or hybrid) as a perfmodel.FullRun.
func readFullRun(path string, rec metrics.TrainFinal) (*runFile, error) {
	m := rec.Full
	if m.MedianEpochS <= 0 || m.Vertices < 1 {
		return nil, fmt.Errorf("predict: %s: no median_epoch_s or vertices (a full-graph run from before predict)", path)
	}
	cfg := &m.Config
	rf := &runFile{rec: rec, mode: cfg.Mode, params: m.Params, layers: cfg.Model.Layers, vertices: m.Vertices,
		chunks: cfg.Chunks, pipelines: cfg.Pipelines}
	if rf.layers < 1 || cfg.Stages < 1 || rf.pipelines < 1 {
		return nil, fmt.Errorf("predict: %s: no model layers, stages or pipelines in its config", path)
	}
	comm, _, err := traffic(path, m.Comm.PerRank, perfmodel.FullPhases, float64(m.EpochsRun))
	if err != nil {
		return nil, err
	}
	chunks := fullChunks(rf.mode, rf.chunks)
	units := perfmodel.FullUnits(rf.layers, m.Vertices, rf.pipelines, cfg.Stages, chunks)
	rf.Full = &perfmodel.FullRun{Name: path, EpochSeconds: m.MedianEpochS,
		FullWorkload: perfmodel.FullWorkload{P: m.Ranks, Units: units, Steps: perfmodel.FullSteps(cfg.Stages, chunks), Comm: comm, Source: "measured " + path}}
	rf.Run.Name = path
	rf.Run.P = m.Ranks
	return rf, nil
}

// fullChunks is the chunks of a pipeline's schedule: 1 in graph mode
// (each part whole; its config keeps the flag's default).
func fullChunks(mode string, chunks int) int {
	if mode == string(train.ModeGraph) {
		return 1
	}
	return max(chunks, 1)
}

// comparable returns the configuration of r that must agree between runs
// fitted together: all but the settings that may differ with p or do not
// change an epoch's work, which are zeroed.
func comparable(r *runFile) any {
	if f := r.rec.Full; f != nil {
		c := f.Config
		c.Epochs, c.EvalEvery, c.Select, c.Stages = 0, 0, "", 0
		if c.Mode == string(train.ModeGraph) {
			c.Pipelines = 0 // a full-graph layout: p in graph mode
		}
		return c
	}
	c := r.rec.Minibatch.Config
	c.Epochs, c.EvalEvery, c.Select = 0, 0, ""
	if c.GlobalBatchSize > 0 {
		c.BatchSize = 0
	}
	return c
}

// configDiff returns the keys of two comparable configurations that
// differ, with both values.
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

func readRuns(paths []string, what string) ([]*runFile, error) {
	var runs []*runFile
	for _, p := range paths {
		r, err := readRun(p)
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 {
			if a, b := comparable(runs[0]), comparable(r); !reflect.DeepEqual(a, b) {
				diff := configDiff(a, b)
				return nil, fmt.Errorf("predict: %s %s: a different configuration from %s (%s)", what, p, runs[0].Name, strings.Join(diff, "; "))
			}
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// loadNetwork reads a calibration file or names a preset.
func loadNetwork(s string) (*perfmodel.Network, error) {
	if s == "" {
		return nil, fmt.Errorf("predict: give --net (a calibration file or a preset: %s)", strings.Join(perfmodel.PresetNames(), ", "))
	}
	if slices.Contains(perfmodel.PresetNames(), s) {
		return perfmodel.Preset(s)
	}
	b, err := os.ReadFile(s)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("predict: --net %s: neither a file nor a preset (%s)", s, strings.Join(perfmodel.PresetNames(), ", "))
		}
		return nil, fmt.Errorf("predict: %w", err)
	}
	var n perfmodel.Network
	if err := json.Unmarshal(b, &n); err != nil {
		return nil, fmt.Errorf("predict: %s: %w", s, err)
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("predict: %s: %w", s, err)
	}
	return &n, nil
}

// predictRow is one line of the table.
type predictRow struct {
	pr       perfmodel.Prediction
	measured float64 // 0: none
	name     string
}

func predict(env *Env, o predictOptions) error {
	net, err := loadNetwork(o.net)
	if err != nil {
		return err
	}
	fitNet := net
	if o.fitNet != "" {
		if fitNet, err = loadNetwork(o.fitNet); err != nil {
			return err
		}
	}
	if len(o.fit) == 0 {
		return fmt.Errorf("predict: give --fit with the metrics of the runs to fit compute rates from (or --calibrate)")
	}
	if len(o.nps) == 0 && len(o.validate) == 0 {
		return fmt.Errorf("predict: give --np or --validate")
	}
	fit, err := readRuns(o.fit, "--fit")
	if err != nil {
		return err
	}
	if fit[0].Full != nil {
		return predictFull(env, o, net, fitNet, fit)
	}
	runs := make([]perfmodel.Run, len(fit))
	for i, r := range fit {
		runs[i] = r.Run
	}
	comp, err := perfmodel.FitCompute(runs, o.fitNode, fitNet)
	if err != nil {
		return fmt.Errorf("predict: --fit %s: %w", strings.Join(o.fit, ","), err)
	}
	if fitNet != net {
		env.Printf("fitting runs' network %s (%s)\n", fitNet.Name, fitNet.Source)
	}
	env.Printf("network %s (%s); compute fitted on %d runs (%d cores per node, contention exponent θ %.2f):\n", net.Name, net.Source, len(fit), o.fitNode.CoresPerNode, comp.Theta)
	for _, ph := range perfmodel.Phases {
		f := comp.Phases[ph]
		var parts []string
		for j, n := range perfmodel.UnitNames(ph) {
			parts = append(parts, fmt.Sprintf("%s %.4g s", n, f.Gamma[j]))
		}
		env.Printf("  %-8s %s (R² %.3f)\n", ph, strings.Join(parts, ", "), f.R2)
	}
	base := fit[0]
	var rows []predictRow
	overlap := base.Overlap
	if len(o.validate) > 0 {
		val, err := readRuns(o.validate, "--validate")
		if err != nil {
			return err
		}
		for _, v := range val {
			if !reflect.DeepEqual(comparable(v), comparable(base)) {
				return fmt.Errorf("predict: --validate %s: a different configuration from the --fit runs", v.Name)
			}
			pr := comp.Predict(net, &v.Workload, o.target, v.Overlap)
			rows = append(rows, predictRow{pr: pr, measured: v.EpochSeconds, name: v.Name})
		}
	}
	if len(o.nps) > 0 {
		wl, err := readRuns(o.workload, "--workload")
		if err != nil {
			return err
		}
		for _, p := range o.nps {
			if p < 1 {
				return fmt.Errorf("predict: --np %d < 1", p)
			}
			var w *perfmodel.Workload
			for _, r := range wl {
				if r.P == p {
					w = &r.Workload
				}
			}
			for _, r := range fit {
				if w == nil && r.P == p {
					w = &r.Workload
				}
			}
			if w == nil {
				if base.trainVertices < 1 {
					return fmt.Errorf("predict: %s: no train_vertices to extrapolate the minibatches from", base.Name)
				}
				nb := perfmodel.Batches(p, base.trainVertices, base.batchSize, base.globalBatch)
				seeds := float64(base.trainVertices) / float64(p)
				if w, err = perfmodel.Extrapolate(runs, p, nb, seeds, base.params); err != nil {
					return fmt.Errorf("predict: extrapolating to p=%d: %w", p, err)
				}
			}
			rows = append(rows, predictRow{pr: comp.Predict(net, w, o.target, overlap)})
		}
	}
	printPredictions(env, rows)
	if o.csv != "" {
		if err := writePredictCSV(o.csv, rows); err != nil {
			return err
		}
		env.Printf("wrote %s\n", o.csv)
	}
	return nil
}

// predictFull is predict for full-graph runs (graph, pipe, hybrid):
// perfmodel.FitFull on the --fit runs, then the --validate runs and the
// --np rank counts.
func predictFull(env *Env, o predictOptions, net, fitNet *perfmodel.Network, fit []*runFile) error {
	runs := make([]perfmodel.FullRun, len(fit))
	for i, r := range fit {
		runs[i] = *r.Full
	}
	comp, err := perfmodel.FitFull(runs, o.fitNode, fitNet)
	if err != nil {
		return fmt.Errorf("predict: --fit %s: %w", strings.Join(o.fit, ","), err)
	}
	base := fit[0]
	mode := base.mode
	env.Printf("network %s (%s); %v-mode compute fitted on %d runs (%d cores per node): %.4g s + %.4g s per layer·vertex, contention exponent θ %.2f (R² %.3f)\n",
		net.Name, net.Source, mode, len(fit), o.fitNode.CoresPerNode, comp.Gamma[0], comp.Gamma[1], comp.Theta, comp.R2)
	var rows []fullRow
	if len(o.validate) > 0 {
		val, err := readRuns(append([]string{base.Name}, o.validate...), "--validate")
		if err != nil {
			return err
		}
		for _, v := range val[1:] {
			rows = append(rows, fullRow{pr: comp.Predict(net, &v.Full.FullWorkload, o.target), measured: v.Full.EpochSeconds})
		}
	}
	if len(o.nps) > 0 {
		wl, err := readRuns(o.workload, "--workload")
		if err != nil {
			return err
		}
		for _, p := range o.nps {
			var w *perfmodel.FullWorkload
			for _, r := range append(wl, fit...) {
				if w == nil && r.Full != nil && r.Full.P == p {
					w = &r.Full.FullWorkload
				}
			}
			if w == nil {
				var lay pipe.Layout
				m, err := train.ParseMode(mode)
				if err == nil {
					fc := train.FullConfig{Mode: m, Pipelines: base.pipelines}
					lay, err = fc.Layout(p)
				}
				pl, st := lay.Pipelines, lay.Stages
				if err == nil && st > base.layers {
					err = fmt.Errorf("%d stages for %d layers: a stage needs a layer", st, base.layers)
				}
				if err != nil {
					return fmt.Errorf("predict: --np %d: %w", p, err)
				}
				ch := fullChunks(mode, base.chunks)
				units := perfmodel.FullUnits(base.layers, base.vertices, pl, st, ch)
				if w, err = perfmodel.ExtrapolateFull(runs, p, units, perfmodel.FullSteps(st, ch)); err != nil {
					return fmt.Errorf("predict: extrapolating to p=%d: %w", p, err)
				}
			}
			rows = append(rows, fullRow{pr: comp.Predict(net, w, o.target)})
		}
	}
	env.Printf("%6s %10s %10s %10s | %9s %9s", "p", "epoch_s", "measured", "error", "compute", "comm")
	for _, ph := range perfmodel.FullPhases {
		env.Printf(" %9s", ph)
	}
	env.Printf(" | source\n")
	for _, r := range rows {
		meas, rel := measuredText(r.pr.Epoch, r.measured)
		env.Printf("%6d %10.4f %10s %10s | %9.4f %9.4f", r.pr.P, r.pr.Epoch, meas, rel, r.pr.Compute, r.pr.Epoch-r.pr.Compute)
		for _, ph := range perfmodel.FullPhases {
			env.Printf(" %9.4f", r.pr.Comm[ph])
		}
		env.Printf(" | %s\n", r.pr.Source)
	}
	env.Printf("(seconds per epoch: compute on the critical path, and the collectives by phase on the busiest rank)\n")
	if o.csv == "" {
		return nil
	}
	header := []string{"p", "predicted_epoch_s", "measured_epoch_s", "rel_error", "compute_s", "comm_s"}
	for _, ph := range perfmodel.FullPhases {
		header = append(header, ph+"_comm_s")
	}
	recs := [][]string{append(header, "source")}
	for _, r := range rows {
		rec := append([]string{strconv.Itoa(r.pr.P)}, epochCells(r.pr.Epoch, r.measured)...)
		rec = append(rec, csvNum(r.pr.Compute), csvNum(r.pr.Epoch-r.pr.Compute))
		for _, ph := range perfmodel.FullPhases {
			rec = append(rec, csvNum(r.pr.Comm[ph]))
		}
		recs = append(recs, append(rec, r.pr.Source))
	}
	if err := writeCSV(o.csv, recs); err != nil {
		return err
	}
	env.Printf("wrote %s\n", o.csv)
	return nil
}

// fullRow is one line of predictFull's table.
type fullRow struct {
	pr       perfmodel.FullPrediction
	measured float64 // 0: none
}

func printPredictions(env *Env, rows []predictRow) {
	env.Printf("%6s %10s %10s %10s |", "p", "epoch_s", "measured", "error")
	for _, ph := range perfmodel.Phases {
		env.Printf(" %9s %9s", ph+"_co", ph+"_cp")
	}
	env.Printf(" | source\n")
	for _, r := range rows {
		meas, rel := measuredText(r.pr.Epoch, r.measured)
		env.Printf("%6d %10.4f %10s %10s |", r.pr.P, r.pr.Epoch, meas, rel)
		for _, ph := range perfmodel.Phases {
			t := r.pr.Phases[ph]
			env.Printf(" %9.4f %9.4f", t.Comm, t.Compute)
		}
		env.Printf(" | %s\n", r.pr.Source)
	}
	env.Printf("(phase_co: communication, phase_cp: compute, seconds per epoch on the slowest rank)\n")
}

// predictCSVHeader is the CSV's columns (docs/training.md).
var predictCSVHeader = func() []string {
	h := []string{"p", "predicted_epoch_s", "measured_epoch_s", "rel_error", "loop_s", "loader_s"}
	for _, ph := range perfmodel.Phases {
		h = append(h, ph+"_comm_s", ph+"_compute_s")
	}
	return append(h, "source")
}()

func writePredictCSV(path string, rows []predictRow) error {
	recs := [][]string{predictCSVHeader}
	for _, r := range rows {
		rec := append([]string{strconv.Itoa(r.pr.P)}, epochCells(r.pr.Epoch, r.measured)...)
		rec = append(rec, csvNum(r.pr.Loop), csvNum(r.pr.Loader))
		for _, ph := range perfmodel.Phases {
			rec = append(rec, csvNum(r.pr.Phases[ph].Comm), csvNum(r.pr.Phases[ph].Compute))
		}
		recs = append(recs, append(rec, r.pr.Source))
	}
	return writeCSV(path, recs)
}

// measuredText returns the table's measured epoch and relative error, "-"
// without a measurement.
func measuredText(predicted, measured float64) (string, string) {
	if measured <= 0 {
		return "-", "-"
	}
	return fmt.Sprintf("%.4f", measured), fmt.Sprintf("%+.1f%%", 100*(predicted-measured)/measured)
}

// csvNum formats a number of the CSVs.
func csvNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// epochCells returns the predicted epoch, the measured one and the relative
// error (both empty without a measurement).
func epochCells(predicted, measured float64) []string {
	if measured <= 0 {
		return []string{csvNum(predicted), "", ""}
	}
	return []string{csvNum(predicted), csvNum(measured), csvNum((predicted - measured) / measured)}
}

// writeCSV writes recs to path atomically.
func writeCSV(path string, recs [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.WriteAll(recs); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, buf.Bytes()); err != nil {
		return fmt.Errorf("predict: writing %s: %w", path, err)
	}
	return nil
}
