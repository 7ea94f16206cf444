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
	"gnnmpi/perfmodel"
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
					return calibrate(env, *out, *maxBytes, *minTime, *minReps)
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
				return RankZero(env.Comm, func() error { return predict(env, o) })
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

// calibrate times every kind of the network model at message sizes 16 B
// … maxBytes (powers of 4) on env's communicator, fits the model and writes
// it to out on rank 0.
func calibrate(env *Env, out string, maxBytes int64, minTime time.Duration, minReps int) error {
	c := env.Comm
	p := c.Size()
	if p == 1 {
		// A single rank moves nothing: the fit would have nothing to go on.
		return fmt.Errorf("predict --calibrate: needs at least 2 ranks (mpirun -np P, or --ranks P)")
	}
	defer collective.SetPhase(c, "calibrate")()
	var samples []perfmodel.Sample
	for _, k := range perfmodel.Kinds {
		if k == perfmodel.Sendrecv && p < 2 {
			continue
		}
		for size := int64(16); size <= maxBytes; size *= 4 {
			call, moved := calibCall(c, k, int(size/4))
			if err := call(); err != nil { // warm-up
				return err
			}
			// Agree on the repetitions from the slowest warm-up.
			t0 := time.Now()
			if err := call(); err != nil {
				return err
			}
			one, err := collective.AllreduceScalar(c, time.Since(t0).Seconds(), collective.Max)
			if err != nil {
				return err
			}
			reps := max(minReps, min(1000, int(math.Ceil(minTime.Seconds()/math.Max(one, 1e-7)))))
			times := make([]float64, reps)
			for i := range times {
				t := time.Now()
				if err := call(); err != nil {
					return err
				}
				times[i] = time.Since(t).Seconds()
			}
			if err := collective.AllreduceSlice(c, times, collective.Max); err != nil {
				return err
			}
			sort.Float64s(times)
			samples = append(samples, perfmodel.Sample{Kind: k, P: p, Bytes: float64(moved), Seconds: times[len(times)/2]})
			if k == perfmodel.Barrier {
				break
			}
		}
		env.Progress("calibrated %s", k)
	}
	// Every rank holds the same samples (the times are maxima over ranks).
	net, err := perfmodel.FitNetwork(fmt.Sprintf("calibrated on %d ranks (%s)", p, env.Backend), samples)
	if err != nil {
		return err
	}
	err = RankZero(c, func() error {
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

// calibCall returns one call of kind k with n float32 per rank, and the
// bytes it moves on the busiest rank (collective's volume functions).
func calibCall(c collective.Comm, k perfmodel.Kind, n int) (func() error, int64) {
	p, r := c.Size(), c.Rank()
	n = max(n, p)
	switch k {
	case perfmodel.Allreduce:
		x := make([]float32, n)
		s, rv := collective.AllreduceVolume(0, p, n, 4)
		return func() error { return collective.AllreduceSlice(c, x, collective.Sum) }, max(s, rv)
	case perfmodel.Alltoallv:
		per := n / p
		counts := make([]int, p)
		for i := range counts {
			counts[i] = per
		}
		send := make([]float32, per*p)
		s, rv := collective.AlltoallvVolume(0, counts, counts, 4)
		return func() error { _, err := collective.AlltoallvFlat(c, send, counts, counts); return err }, max(s, rv)
	case perfmodel.Allgatherv:
		per := n / p
		counts := make([]int, p)
		for i := range counts {
			counts[i] = per
		}
		x := make([]float32, per)
		s, rv := collective.AllgathervVolume(0, counts, 4)
		return func() error { _, _, err := collective.AllgatherSlice(c, x); return err }, max(s, rv)
	case perfmodel.Bcast:
		x := make([]float32, n)
		s, rv := collective.BcastVolume(0, 0, p, int64(n)*4)
		return func() error { return collective.BcastSlice(c, x, 0) }, max(s, rv)
	case perfmodel.Sendrecv:
		// Pairs (0,1), (2,3), ...: each sends n floats to its partner and
		// receives as many; an odd last rank idles.
		x := make([]float32, n)
		y := make([]float32, n)
		peer := r ^ 1
		return func() error {
			if peer >= p {
				return nil
			}
			if r%2 == 0 {
				if err := c.Send(collective.BufOf(x), peer, 7); err != nil {
					return err
				}
				_, err := c.Recv(collective.BufOf(y), peer, 7)
				return err
			}
			if _, err := c.Recv(collective.BufOf(y), peer, 7); err != nil {
				return err
			}
			return c.Send(collective.BufOf(x), peer, 7)
		}, 2 * int64(n) * 4
	case perfmodel.Barrier:
		return c.Barrier, 0
	}
	panic("predict: unknown kind " + string(k))
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
	layers        int
	vertices      int64
	chunks        int
	pipelines     int
	config        map[string]any
	params        int
	trainVertices int
	batchSize     int
	globalBatch   int
}

// metricsFinal is what predict reads of a final train metrics object.
type metricsFinal struct {
	Command       string             `json:"command"`
	Ranks         int                `json:"ranks"`
	Config        map[string]any     `json:"config"`
	Params        int                `json:"params"`
	EpochsRun     int                `json:"epochs_run"`
	MedianEpochS  *float64           `json:"median_epoch_s"`
	MedianPhaseS  map[string]float64 `json:"median_phase_s"`
	CriticalS     map[string]float64 `json:"median_critical_phase_s"`
	Vertices      int64              `json:"vertices"`
	Batches       *float64           `json:"batches_per_rank"`
	FetchRows     float64            `json:"fetch_rows_per_epoch"`
	TrainVertices int                `json:"train_vertices"`
	Comm          struct {
		PerRank []map[string]map[string]collective.Count `json:"per_rank"`
	} `json:"comm"`
}

// readRun reads the final metrics object of a minibatch train run: a JSON
// object (gnnmpi --json train) or the last line of a --metrics JSONL.
func readRun(path string) (*runFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	b = bytes.TrimSpace(b)
	line := 0
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 && !json.Valid(b) {
		line = bytes.Count(b, []byte{'\n'}) + 1
		b = b[i+1:]
	}
	var m metricsFinal
	if err := json.Unmarshal(b, &m); err != nil {
		if line > 0 {
			return nil, fmt.Errorf("predict: %s:%d: %w", path, line, err)
		}
		return nil, fmt.Errorf("predict: %s: %w", path, err)
	}
	switch {
	case m.Command != "train":
		return nil, fmt.Errorf("predict: %s: not the final metrics of gnnmpi train (command %q)", path, m.Command)
	case m.Ranks < 1 || len(m.Comm.PerRank) != m.Ranks || m.EpochsRun < 1:
		return nil, fmt.Errorf("predict: %s: %d ranks, %d byte counts, %d epochs", path, m.Ranks, len(m.Comm.PerRank), m.EpochsRun)
	case m.Config["mode"] != nil && m.Config["mode"] != "minibatch":
		return readFullRun(path, &m)
	case m.MedianEpochS == nil || m.MedianPhaseS == nil || m.Batches == nil:
		return nil, fmt.Errorf("predict: %s: no median_epoch_s, median_phase_s or batches_per_rank (a run from before predict)", path)
	}
	rf := &runFile{config: m.Config, params: m.Params, trainVertices: m.TrainVertices}
	rf.batchSize = intOf(m.Config["batch_size"])
	rf.globalBatch = intOf(m.Config["global_batch_size"])
	overlap, _ := m.Config["overlap"].(bool)
	w := perfmodel.Workload{P: m.Ranks, Batches: *m.Batches, Seeds: float64(m.TrainVertices) / float64(m.Ranks),
		FetchRows: m.FetchRows / float64(m.Ranks), Source: "measured " + path}
	comm, commS, err := traffic(path, m.Comm.PerRank, perfmodel.Phases, float64(m.EpochsRun))
	if err != nil {
		return nil, err
	}
	w.Comm = comm
	// The phases of the rank with the slowest epoch add up to the epoch;
	// the slowest rank per phase (older runs have only those) overcounts
	// when one rank's wait is another's compute.
	phases := m.CriticalS
	if phases == nil {
		phases = m.MedianPhaseS
	}
	rf.Run = perfmodel.Run{Name: path, Workload: w, Overlap: overlap, PhaseSeconds: phases, CommSeconds: commS, EpochSeconds: *m.MedianEpochS}
	return rf, nil
}

// traffic returns, per phase and kind of call, the calls and bytes per
// epoch of the busiest rank (send and recv count one message from either
// side: their maximum), and per phase the slowest rank's seconds inside
// collectives.
func traffic(path string, perRank []map[string]map[string]collective.Count, phases []string, epochs float64) (map[string]map[perfmodel.Kind]perfmodel.Traffic, map[string]float64, error) {
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
func readFullRun(path string, m *metricsFinal) (*runFile, error) {
	if m.MedianEpochS == nil || m.Vertices < 1 {
		return nil, fmt.Errorf("predict: %s: no median_epoch_s or vertices (a full-graph run from before predict)", path)
	}
	mc, _ := m.Config["model"].(map[string]any)
	rf := &runFile{config: m.Config, params: m.Params, layers: intOf(mc["Layers"]), vertices: m.Vertices,
		chunks: intOf(m.Config["chunks"]), pipelines: intOf(m.Config["pipelines"])}
	stages := intOf(m.Config["stages"])
	if rf.layers < 1 || stages < 1 || rf.pipelines < 1 {
		return nil, fmt.Errorf("predict: %s: no model layers, stages or pipelines in its config", path)
	}
	comm, _, err := traffic(path, m.Comm.PerRank, perfmodel.FullPhases, float64(m.EpochsRun))
	if err != nil {
		return nil, err
	}
	chunks := fullChunks(m.Config["mode"], rf.chunks)
	units := perfmodel.FullUnits(rf.layers, m.Vertices, rf.pipelines, stages, chunks)
	rf.Full = &perfmodel.FullRun{Name: path, EpochSeconds: *m.MedianEpochS,
		FullWorkload: perfmodel.FullWorkload{P: m.Ranks, Units: units, Steps: perfmodel.FullSteps(stages, chunks), Comm: comm, Source: "measured " + path}}
	rf.Run.Name = path
	rf.Run.P = m.Ranks
	return rf, nil
}

// fullChunks is the chunks of a pipeline's schedule: 1 in graph mode
// (each part whole; its config keeps the flag's default).
func fullChunks(mode any, chunks int) int {
	if mode == "graph" {
		return 1
	}
	return max(chunks, 1)
}

// fullLayout returns the pipelines and stages a full-graph run of mode at p
// ranks has, given the fitted runs' pipelines (hybrid keeps them).
func fullLayout(mode any, p, pipelines int) (int, int, error) {
	switch mode {
	case "graph":
		return p, 1, nil
	case "pipe":
		return 1, p, nil
	case "hybrid":
		if p%pipelines != 0 {
			return 0, 0, fmt.Errorf("%d ranks are not a multiple of the %d pipelines", p, pipelines)
		}
		return pipelines, p / pipelines, nil
	}
	return 0, 0, fmt.Errorf("unknown mode %v", mode)
}

func intOf(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// comparable returns the configuration keys that must agree between runs
// fitted together: all but those that may differ with p or do not change
// an epoch's work.
func comparable(cfg map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range cfg {
		switch k {
		case "epochs", "eval_every", "select", "checkpoint", "checkpoint_every", "stages":
			continue
		case "pipelines": // a full-graph layout: p in graph mode
			if cfg["mode"] == "graph" {
				continue
			}
		case "batch_size":
			if intOf(cfg["global_batch_size"]) > 0 {
				continue
			}
		}
		out[k] = v
	}
	return out
}

func readRuns(paths []string, what string) ([]*runFile, error) {
	var runs []*runFile
	for _, p := range paths {
		r, err := readRun(p)
		if err != nil {
			return nil, err
		}
		if len(runs) > 0 {
			a, b := comparable(runs[0].config), comparable(r.config)
			if !reflect.DeepEqual(a, b) {
				var diff []string
				for k := range a {
					if !reflect.DeepEqual(a[k], b[k]) {
						diff = append(diff, fmt.Sprintf("%s %v vs %v", k, a[k], b[k]))
					}
				}
				for k := range b {
					if _, ok := a[k]; !ok {
						diff = append(diff, k)
					}
				}
				sort.Strings(diff)
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
			if !reflect.DeepEqual(comparable(v.config), comparable(base.config)) {
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
	mode := base.config["mode"]
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
				pl, st, err := fullLayout(mode, p, base.pipelines)
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
