package cli

import (
	"fmt"

	"gnnmpi/pipe"
	"gnnmpi/train"
)

// runFull loads the dataset with each graph part held by the ranks of its
// pipeline and trains a deep model on the whole graph.
func runFull(env *Env, path string, lo train.LoadOptions, cfg train.FullConfig) error {
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
			return env.Record(epochRecord(st))
		},
	}
	res, err := train.RunFull(c, d, cfg, hooks)
	if err != nil {
		return err
	}
	printBest(env, &res.Result)
	env.Printf("bytes per epoch, measured (analytical): act %s (%s) act-grad %s (%s) halo %s (%s) grad %s (%s)\n",
		human(res.BytesPerEpoch[pipe.PhaseAct]), human(res.Analytical[pipe.PhaseAct]),
		human(res.BytesPerEpoch[pipe.PhaseActGrad]), human(res.Analytical[pipe.PhaseActGrad]),
		human(res.BytesPerEpoch[pipe.PhaseHalo]), human(res.Analytical[pipe.PhaseHalo]),
		human(res.BytesPerEpoch[pipe.PhaseGrad]), human(res.Analytical[pipe.PhaseGrad]))
	cfgOut := map[string]any{
		"data": path, "split": d.SplitName, "partition": lo.PartitionSpec(), "mode": cfg.Mode,
		"stages": res.Layout.Stages, "pipelines": res.Layout.Pipelines, "chunks": cfg.Chunks, "chunk_partition": cfg.ChunkMethod,
		"model": mc, "shuffle_chunks": cfg.ShuffleChunks, "clear_grads": cfg.ClearGrads, "snapshot_every": cfg.SnapshotEvery,
		"feature_norm": cfg.FeatureNorm, "feature_norm_flag": normFlag, "symmetrize": lo.Symmetrize, "reciprocity": d.Reciprocity, "feature_format": featureFormatOf(d), "epochs": cfg.Epochs, "optimizer": cfg.Optimizer, "lr": cfg.LR,
		"weight_decay": cfg.WeightDecay, "momentum": cfg.Momentum, "seed": cfg.Seed,
		"eval_every": cfg.EvalEvery, "select": cfg.Select, "blas": env.BLASName,
	}
	out := map[string]any{
		"final": true, "best_epoch": res.BestEpoch, "best_val_acc": res.BestValAcc, "test_acc": res.TestAcc,
		"median_epoch_s": res.MedianEpochS, "bytes_per_epoch": res.BytesPerEpoch, "config": cfgOut,
		"params": res.NumParams, "epochs_run": len(res.Epochs),
		"analytical_bytes_per_epoch": res.Analytical, "halo_rows": res.HaloRows,
		"state_bytes": res.StateBytes, "peak_rss_bytes": res.PeakRSS,
		"vertices": d.NumNodes(), "median_phase_s": medianPhases(res.Epochs),
	}
	return env.Finish(out)
}

func printFullEpoch(env *Env, st train.EpochStats) {
	acc := ""
	if st.Evaluated {
		acc = fmt.Sprintf(" val %.4f test %.4f", st.ValAcc, st.TestAcc)
	}
	b, ps := st.Bytes, st.PhaseSeconds
	env.Printf("epoch %3d  loss %.4f  train %.4f%s  | %.3fs (comm: act %.3f act-grad %.3f halo %.3f grad %.3f), eval %.3f | bytes act %s act-grad %s halo %s grad %s eval %s\n",
		st.Epoch, st.Loss, st.TrainAcc, acc, st.Seconds, ps[pipe.PhaseAct], ps[pipe.PhaseActGrad], ps[pipe.PhaseHalo], ps[pipe.PhaseGrad], ps[train.PhaseEval],
		human(b[pipe.PhaseAct]), human(b[pipe.PhaseActGrad]), human(b[pipe.PhaseHalo]), human(b[pipe.PhaseGrad]), human(b[pipe.PhaseEval]))
}
