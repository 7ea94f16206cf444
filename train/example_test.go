package train_test

import (
	"fmt"
	"time"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/train"
)

// Example trains GraphSAGE on Cora for three epochs on two in-process
// ranks, each loading its part of a random partition, and prints what
// every run of it gives: the number of epochs and parameters, the bytes
// each rank counts for summing the gradients in an epoch (one Allreduce of
// every parameter, 4 bytes each, per minibatch: Cora's 140 training
// vertices are 70 per rank, three minibatches of at most 32), and that
// training lowered the loss. Bytes sums the ranks.
func Example() {
	cfg := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
	cfg.Epochs, cfg.EvalEvery = 3, 0
	results := make([]*train.Result, 2)
	err := inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := train.Load(c, "../data/cora", train.LoadOptions{Partition: partition.MethodRandom, Seed: 1})
		if err != nil {
			return err
		}
		res, err := train.Run(collective.WithStats(c, nil), d, cfg, train.Hooks{})
		results[c.Rank()] = res
		return err
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res := results[0]
	first, last := res.Epochs[0], res.Epochs[len(res.Epochs)-1]
	fmt.Println("epochs:", len(res.Epochs))
	fmt.Println("parameters:", res.NumParams)
	fmt.Println("gradient bytes per epoch and rank:", last.Bytes[metrics.PhaseGrad]/2, "=", 3*4*res.NumParams)
	fmt.Println("loss fell:", last.Loss < first.Loss)
	// Output:
	// epochs: 3
	// parameters: 368775
	// gradient bytes per epoch and rank: 4425300 = 4425300
	// loss fell: true
}
