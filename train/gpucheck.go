package train

import (
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/gpu/gpucheck"
	"gnnmpi/graph"
	"gnnmpi/model"
)

// GPUCheckTrain returns the training check of gpu/gpucheck (its
// Options.Train): GraphSAGE (Defaults, epochs epochs, dense features,
// random partition, seed seed) on the dataset at data, on the CPU or with
// the minibatch step on the GPU (DeviceCUDA, opened by backends). It lives
// here because gpucheck sits below this package. A dataset that cannot be
// loaded skips the check (gpucheck.Skipped).
//
// The returned function is collective over c, as Load and Run.
func GPUCheckTrain(c collective.Comm, backends Backends, data string, epochs int, seed uint64) func(onGPU bool) (gpucheck.Curve, error) {
	return func(onGPU bool) (gpucheck.Curve, error) {
		cfg := Defaults(model.KindSAGE, ModeMinibatch).Minibatch
		cfg.Backends = backends
		cfg.Epochs, cfg.Device, cfg.Seed = epochs, DeviceCPU, seed
		if onGPU {
			cfg.Device = DeviceCUDA
		}
		cfg, err := cfg.Resolve(c.Size())
		if err != nil {
			return gpucheck.Curve{}, err
		}
		lo := LoadOptions{Format: graph.FeatureDense, Partition: PartitionRandom, Seed: seed, Replication: cfg.Replication,
			WholeTopology: cfg.Topology == TopologyReplicated}
		d, err := Load(c, data, lo) // loaded again: a run may normalise the features in place
		if err != nil {
			return gpucheck.Curve{}, gpucheck.Skipped(fmt.Sprintf("dataset %s: %v", data, err))
		}
		cfg.FeatureNorm = cfg.FeatureNorm.Resolve(d.NonNegative)
		res, err := Run(c, d, cfg, Hooks{})
		if err != nil {
			return gpucheck.Curve{}, err
		}
		curve := gpucheck.Curve{MedianEpochS: res.MedianEpochS, InferDevice: res.InferDevice}
		for _, e := range res.Epochs {
			curve.Losses = append(curve.Losses, e.Loss)
			if e.Evaluated {
				curve.ValLoss = e.ValLoss
			}
		}
		return curve, nil
	}
}
