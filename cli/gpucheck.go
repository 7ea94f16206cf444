package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"gnnmpi/gpu"
	"gnnmpi/gpu/gpucheck"
	"gnnmpi/metrics"
	"gnnmpi/train"
)

func gpucheckCmd() *Command {
	return &Command{
		Name:    "gpucheck",
		Summary: "check the GPU path on this machine: kernels, cuBLAS/cuSPARSE, NCCL, zero-copy gather bandwidth",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			jsonFile := fs.String("report", "", "also write every check and number to this JSON file (rank 0; the global --json prints them with the run's metrics)")
			rows := fs.Int("rows", 1<<16, "zero-copy benchmark: rows gathered per run")
			width := fs.Int("width", 256, "zero-copy benchmark: floats per row")
			iters := fs.Int("iters", 5, "zero-copy benchmark: timed runs of each method (the best counts)")
			seed := fs.Uint64("seed", 1, "seed of the random inputs")
			data := fs.String("data", "data/cora", "training check: dataset (GraphSAGE, dense features, trained on the CPU and with --device cuda)")
			epochs := fs.Int("train-epochs", 3, "training check: epochs of each run (0: skip the check)")
			return func(env *Env) error {
				if *rows < 1 || *width < 1 || *iters < 1 {
					return fmt.Errorf("gpucheck: --rows, --width and --iters must be positive")
				}
				o := gpucheck.Options{Backend: env.Backend, LocalRank: -1, Rows: *rows, Width: *width, Iters: *iters, Seed: *seed,
					TrainSkip: "--train-epochs 0", Log: env.Err}
				if local, _, ok := gpu.LocalRankFromEnv(getenv); ok && env.Backend != "inproc" {
					o.LocalRank = local
				}
				if *epochs > 0 {
					o.Train = train.GPUCheckTrain(env.Comm, env.GPU, *data, *epochs, *seed)
				}
				return gpucheckRun(env, o, *jsonFile)
			}
		},
	}
}

// gpucheckRun runs the suite and prints its report.
func gpucheckRun(env *Env, o gpucheck.Options, jsonFile string) error {
	res, err := gpucheck.Run(env.Comm, o)
	if err != nil {
		return err
	}
	env.Printf("gpucheck: %s (capability %s), %d rank(s), backend %s\n", res.Device, res.Capability, res.Ranks, res.Backend)
	for _, row := range res.Checks {
		env.Printf("  %-26s %-4s  %s\n", row.Name, row.Result, row.Summary())
	}
	env.Printf("gpucheck: %d passed, %d failed, %d skipped\n", res.Passed, res.Failed, res.Skipped)
	if env.Comm.Rank() == 0 && jsonFile != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonFile, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("gpucheck: %w", err)
		}
	}
	if err := env.Finish(&metrics.GPUCheck{GPUCheck: *res}); err != nil {
		return err
	}
	if res.Failed > 0 {
		return fmt.Errorf("gpucheck: %d check(s) failed", res.Failed)
	}
	return nil
}
