package cli

import (
	"fmt"

	"gnnmpi/metrics"
	"gnnmpi/train"
)

// runFull loads the dataset with each graph part held by the ranks of its
// pipeline and trains a deep model on the whole graph; stop is
// train.Hooks.Stop.
func runFull(env *Env, path string, lo train.LoadOptions, cfg train.FullConfig, stop func() bool) error {
	c := env.Comm
	if err := cfg.Validate(c.Size()); err != nil {
		return err
	}
	stages, _ := train.FullStages(cfg, c.Size())
	lo.Replication = stages
	d, err := loadData(env, path, lo)
	if err != nil {
		return err
	}
	normFlag := cfg.FeatureNorm
	cfg.FeatureNorm = resolveFeatureNorm(env, cfg.FeatureNorm, d)
	mc := cfg.Model
	env.Printf("training %s (%d layers, hidden %d) on the whole of %s, %s mode on %d ranks (%s, BLAS %s): %d chunks per part, %s %.3g, seed %d\n",
		mc.Kind, mc.Layers, mc.Hidden, d.Name, cfg.Mode, c.Size(), env.Backend, env.BLASName, cfg.Chunks, cfg.Optimizer, cfg.LR, cfg.Seed)
	hooks := train.Hooks{
		Log: env.Progress,
		Epoch: func(st train.EpochStats) error {
			printFullEpoch(env, st)
			return env.Record(st.Record())
		},
		Stop: stop,
	}
	res, err := train.RunFull(c, d, cfg, hooks)
	if err != nil {
		return err
	}
	printBest(env, &res.Result)
	env.Printf("bytes per epoch, measured (analytical): act %s (%s) act-grad %s (%s) halo %s (%s) grad %s (%s)\n",
		human(res.BytesPerEpoch[metrics.PhaseAct]), human(res.Analytical[metrics.PhaseAct]),
		human(res.BytesPerEpoch[metrics.PhaseActGrad]), human(res.Analytical[metrics.PhaseActGrad]),
		human(res.BytesPerEpoch[metrics.PhaseHalo]), human(res.Analytical[metrics.PhaseHalo]),
		human(res.BytesPerEpoch[metrics.PhaseGrad]), human(res.Analytical[metrics.PhaseGrad]))
	return env.Finish(res.Final(cfg, d, train.RunInfo{Path: path, Load: lo, FeatureNorm: normFlag, BLAS: env.BLASName}))
}

func printFullEpoch(env *Env, st train.EpochStats) {
	acc := ""
	if st.Evaluated {
		acc = fmt.Sprintf(" val %.4f test %.4f", st.ValAcc, st.TestAcc)
	}
	b, ps := st.Bytes, st.PhaseSeconds
	env.Printf("epoch %3d  loss %.4f  train %.4f%s  | %.3fs (comm: act %.3f act-grad %.3f halo %.3f grad %.3f), eval %.3f | bytes act %s act-grad %s halo %s grad %s eval %s\n",
		st.Epoch, st.Loss, st.TrainAcc, acc, st.Seconds, ps[metrics.PhaseAct], ps[metrics.PhaseActGrad], ps[metrics.PhaseHalo], ps[metrics.PhaseGrad], ps[metrics.PhaseEval],
		human(b[metrics.PhaseAct]), human(b[metrics.PhaseActGrad]), human(b[metrics.PhaseHalo]), human(b[metrics.PhaseGrad]), human(b[metrics.PhaseEval]))
}
