package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"gnnmpi/gpu"
	"gnnmpi/gpu/gpucheck"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/model"
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
					o.Train = gpucheckTrain(env, *data, *epochs, *seed)
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

// gpucheckTrain returns the suite's training: GraphSAGE (train.Defaults,
// epochs epochs, dense features, random partition) on data, on the CPU or
// with the minibatch step on the GPU (train.DeviceCUDA). It lives here
// rather than in gpu/gpucheck because it needs package train, which sits
// above the GPU packages. A dataset that cannot be loaded skips the check.
func gpucheckTrain(env *Env, data string, epochs int, seed uint64) func(onGPU bool) (gpucheck.Curve, error) {
	return func(onGPU bool) (gpucheck.Curve, error) {
		c := env.Comm
		cfg := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
		cfg.Backends = env.GPU
		cfg.Epochs, cfg.Device, cfg.Seed = epochs, train.DeviceCPU, seed
		if onGPU {
			cfg.Device = train.DeviceCUDA
		}
		cfg, err := cfg.Resolve(c.Size())
		if err != nil {
			return gpucheck.Curve{}, err
		}
		lo := train.LoadOptions{Format: graph.FeatureDense, Partition: train.PartitionRandom, Seed: seed, Replication: cfg.Replication,
			WholeTopology: cfg.Topology == train.TopologyReplicated}
		d, err := train.Load(c, data, lo) // loaded again: a run may normalise the features in place
		if err != nil {
			return gpucheck.Curve{}, gpucheck.Skipped(fmt.Sprintf("dataset %s: %v", data, err))
		}
		cfg.FeatureNorm = cfg.FeatureNorm.Resolve(d.NonNegative)
		res, err := train.Run(c, d, cfg, train.Hooks{})
		if err != nil {
			return gpucheck.Curve{}, err
		}
		curve := gpucheck.Curve{MedianEpochS: res.MedianEpochS}
		for _, e := range res.Epochs {
			curve.Losses = append(curve.Losses, e.Loss)
		}
		return curve, nil
	}
}
