package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"gnnmpi/collective"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/metrics"
	"gnnmpi/perfmodel"
	"gnnmpi/perfmodel/calibrate"
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
	rec := &metrics.Calibration{Network: map[string]metrics.Link{}, Out: out}
	for k, l := range net.Links {
		rec.Network[string(k)] = l
	}
	return env.Finish(rec)
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

// readRuns reads the final metrics of train runs (perfmodel.ReadMeasured).
func readRuns(paths []string, what string) ([]*perfmodel.Measured, error) {
	// A run given twice (the same file, or a copy of it) would count as
	// two observations and make a fit look exact.
	seen := map[[sha256.Size]byte]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // ReadMeasured reports it
		}
		sum := sha256.Sum256(b)
		if q, ok := seen[sum]; ok {
			return nil, fmt.Errorf("predict: %s: %s and %s hold the same run: give each run once", what, q, p)
		}
		seen[sum] = p
	}
	runs, err := perfmodel.ReadMeasured(paths, what, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	return runs, nil
}

// loadNetwork reads the calibration file or preset named by the flag
// --flag (perfmodel.LoadNetwork).
func loadNetwork(flag, s string) (*perfmodel.Network, error) {
	n, err := perfmodel.LoadNetwork(s, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("predict: --%s: %w", flag, err)
	}
	return n, nil
}

// fullLayout is perfmodel.Inputs.Layout: train's layout of a full-graph
// mode.
func fullLayout(mode string, pipelines, p int) (int, int, error) {
	m, err := train.ParseMode(mode)
	if err != nil {
		return 0, 0, err
	}
	fc := train.FullConfig{Mode: m, Pipelines: pipelines}
	lay, err := fc.Layout(p)
	return lay.Pipelines, lay.Stages, err
}

func predict(env *Env, o predictOptions) error {
	in := perfmodel.Inputs{NPs: o.nps, FitNode: o.fitNode, Target: o.target, Layout: fullLayout}
	var err error
	if in.Net, err = loadNetwork("net", o.net); err != nil {
		return err
	}
	if o.fitNet != "" {
		if in.FitNet, err = loadNetwork("fit-net", o.fitNet); err != nil {
			return err
		}
	}
	if len(o.fit) == 0 {
		return fmt.Errorf("predict: give --fit with the metrics of the runs to fit compute rates from (or --calibrate)")
	}
	if len(o.nps) == 0 && len(o.validate) == 0 {
		return fmt.Errorf("predict: give --np or --validate")
	}
	if in.Fit, err = readRuns(o.fit, "--fit"); err != nil {
		return err
	}
	if in.Validate, err = readRuns(o.validate, "--validate"); err != nil {
		return err
	}
	if len(o.nps) > 0 {
		if in.Workload, err = readRuns(o.workload, "--workload"); err != nil {
			return err
		}
	}
	t, err := perfmodel.Tabulate(in)
	if err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	if t.FullCompute != nil {
		printFull(env, o, in.Net, t)
	} else {
		printPredictions(env, o, in, t)
	}
	if o.csv == "" {
		return nil
	}
	var buf bytes.Buffer
	if err := csv.NewWriter(&buf).WriteAll(t.Records()); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(o.csv, buf.Bytes()); err != nil {
		return fmt.Errorf("predict: writing %s: %w", o.csv, err)
	}
	env.Printf("wrote %s\n", o.csv)
	return nil
}

// printFull prints the fit and the table of full-graph runs.
func printFull(env *Env, o predictOptions, net *perfmodel.Network, t *perfmodel.Table) {
	comp := t.FullCompute
	env.Printf("network %s (%s); %v-mode compute fitted on %d runs (%d cores per node): %.4g s + %.4g s per layer·vertex, contention exponent θ %.2f (R² %.3f)\n",
		net.Name, net.Source, t.Mode, len(o.fit), o.fitNode.CoresPerNode, comp.Gamma[0], comp.Gamma[1], comp.Theta, comp.R2)
	env.Printf("%6s %10s %10s %10s | %9s %9s", "p", "epoch_s", "measured", "error", "compute", "comm")
	for _, ph := range perfmodel.FullPhases {
		env.Printf(" %9s", ph)
	}
	env.Printf(" | source\n")
	for _, r := range t.Rows {
		pr := r.Full
		meas, rel := measuredText(pr.Epoch, r.Measured)
		env.Printf("%6d %10.4f %10s %10s | %9.4f %9.4f", pr.P, pr.Epoch, meas, rel, pr.Compute, pr.Epoch-pr.Compute)
		for _, ph := range perfmodel.FullPhases {
			env.Printf(" %9.4f", pr.Comm[ph])
		}
		env.Printf(" | %s\n", pr.Source)
	}
	env.Printf("(seconds per epoch: compute on the critical path, and the collectives by phase on the busiest rank)\n")
}

// printPredictions prints the fit and the table of minibatch runs.
func printPredictions(env *Env, o predictOptions, in perfmodel.Inputs, t *perfmodel.Table) {
	comp := t.Compute
	if in.FitNet != nil && in.FitNet != in.Net {
		env.Printf("fitting runs' network %s (%s)\n", in.FitNet.Name, in.FitNet.Source)
	}
	env.Printf("network %s (%s); compute fitted on %d runs (%d cores per node, contention exponent θ %.2f):\n", in.Net.Name, in.Net.Source, len(o.fit), o.fitNode.CoresPerNode, comp.Theta)
	for _, ph := range perfmodel.Phases {
		f := comp.Phases[ph]
		var parts []string
		for j, n := range perfmodel.UnitNames(ph) {
			parts = append(parts, fmt.Sprintf("%s %.4g s", n, f.Gamma[j]))
		}
		env.Printf("  %-8s %s (R² %.3f)\n", ph, strings.Join(parts, ", "), f.R2)
	}
	env.Printf("%6s %10s %10s %10s |", "p", "epoch_s", "measured", "error")
	for _, ph := range perfmodel.Phases {
		env.Printf(" %9s %9s", ph+"_co", ph+"_cp")
	}
	env.Printf(" | source\n")
	for _, r := range t.Rows {
		meas, rel := measuredText(r.Epoch(), r.Measured)
		env.Printf("%6d %10.4f %10s %10s |", r.P, r.Epoch(), meas, rel)
		for _, ph := range perfmodel.Phases {
			t := r.Phases[ph]
			env.Printf(" %9.4f %9.4f", t.Comm, t.Compute)
		}
		env.Printf(" | %s\n", r.Source)
	}
	env.Printf("(phase_co: communication, phase_cp: compute, seconds per epoch on the slowest rank)\n")
}

// measuredText returns the table's measured epoch and relative error, "-"
// without a measurement.
func measuredText(predicted, measured float64) (string, string) {
	if measured <= 0 {
		return "-", "-"
	}
	return fmt.Sprintf("%.4f", measured), fmt.Sprintf("%+.1f%%", 100*(predicted-measured)/measured)
}
