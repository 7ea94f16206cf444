package cli

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gnnmpi/model"
	"gnnmpi/train"
)

func trainCmd() *Command {
	return &Command{
		Name:    "train",
		Summary: "train a GNN: data-parallel minibatches (GraphSAGE, GCN, GAT), or a deep full-graph model (GCN, SAGE, ResGCN, GCNII) graph-parallel, pipelined (GNNPipe) or hybrid",
		Usage:   "--data PATH [--model sage|gcn|gat] [flags]   |   --mode graph|pipe|hybrid --data PATH [--model gcnii|resgcn|gcn|sage] [flags]",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			d := train.Defaults("sage")
			data := fs.String("data", "data/cora", "dataset: OGB raw-layout directory or .gnn binary file")
			split := fs.String("split", "", "split to train on (default: the dataset's first)")
			part := fs.String("partition", train.PartitionMetis, "vertex partition over the ranks: block, random, metis, or a book file from `gnnmpi partition`")
			kind := fs.String("model", "sage", "minibatch: sage (GraphSAGE mean), gcn or gat; full-graph modes: gcnii, resgcn, gcn or sage")
			layers := fs.Int("layers", d.Model.Layers, "GNN layers")
			var hidden, epochs optInt
			var lr, drop, attnDrop optFloat
			fs.Var(&hidden, "hidden", "hidden width (GAT: per head; default sage 128, gcn 64, gat 8)")
			heads := fs.Int("heads", 8, "GAT attention heads of the hidden layers")
			outHeads := fs.Int("out-heads", 1, "GAT attention heads of the output layer (averaged)")
			fanouts := fs.String("fanouts", "25,10", "neighbours sampled per hop, from the seeds outwards (-1: all); one per layer")
			sampler := fs.String("sampler", d.Sampler, "sage (node-wise: --fanouts neighbours per vertex) or ladies (layer-wise: --fanouts vertices per minibatch and layer; --model gcn)")
			topology := fs.String("topology", d.Topology, "where the sampler's graph lives: replicated (no communication) or 1.5d (rows over p/c grid rows, c copies; P = Q·A by 1.5D SpGEMM)")
			repl := fs.Int("c", d.C, "replication factor of --topology 1.5d (divides the number of ranks)")
			frepl := fs.Int("replication", d.Replication, "feature replication c: features partitioned over ranks/c parts, each held by c ranks; a rank fetches only from its replica group (divides the number of ranks)")
			cache := fs.String("cache", d.Cache, "static feature cache of remote rows: none, degree (in-degree), vip (inclusion probability of the node-wise sampler), vip-recurrence (SALIENT++'s recurrence as written) or sim (access counts of simulated epochs)")
			cacheFrac := fs.Float64("cache-frac", 0, "cache size α: each rank caches ⌊α·n/parts⌋ remote rows")
			simEpochs := fs.Int("cache-sim-epochs", d.CacheSimEpochs, "simulated epochs that score --cache sim")
			dtype := fs.String("feature-dtype", d.FeatureDType, "feature storage and wire type: f32 or f16 (half precision: half the memory and fetch bytes)")
			gpuFrac := fs.Float64("gpu-frac", 0, "fraction of the resident feature rows, hottest first, destined for GPU memory (the tier split is reported)")
			bulk := fs.Int("bulk", d.Bulk, "minibatches sampled together (one sparse product per layer for all); the minibatches do not depend on it")
			batch := fs.Int("batch-size", d.BatchSize, "seeds per rank per minibatch (at most)")
			globalBatch := fs.Int("global-batch-size", 0, "seeds per step over all ranks (at most); each rank takes ⌈G/ranks⌉, so the number of optimizer steps does not depend on the rank count (replaces --batch-size)")
			fs.Var(&epochs, "epochs", "epochs (default sage/gcn 100, gat 200)")
			shuffle := fs.String("shuffle", train.ShuffleLocal, "local (each rank shuffles its own training vertices) or global (one shuffle split across ranks)")
			optim := fs.String("optimizer", "adam", "adam or sgd")
			fs.Var(&lr, "lr", "learning rate (default sage/gcn 0.01, gat 0.005)")
			wd := fs.Float64("weight-decay", float64(d.WeightDecay), "L2 weight decay")
			mom := fs.Float64("momentum", 0, "SGD momentum")
			fs.Var(&drop, "dropout", "feature dropout (default sage/gcn 0.5, gat 0.6)")
			featNorm := fs.String("feature-norm", d.FeatureNorm, "input features: row (each row scaled to sum 1) or none")
			fs.Var(&attnDrop, "attn-dropout", "GAT: dropout on attention coefficients (default 0.6)")
			norm := fs.Bool("normalize", false, "GraphSAGE: L2-normalise hidden embeddings")
			seed := fs.Uint64("seed", d.Seed, "random seed (weights, shuffles, sampling, dropout, METIS)")
			evalEvery := fs.Int("eval-every", d.EvalEvery, "evaluate every K epochs and after the last (0: no evaluation)")
			sel := fs.String("select", d.Select, "model selection over evaluated epochs: val-acc (highest validation accuracy) or val-loss (lowest validation loss)")
			evalMem := fs.Int64("eval-memory", d.EvalMemory*4>>20, "MiB of gathered inputs per chunk of layer-wise inference")
			ckpt := fs.String("checkpoint", "", "checkpoint directory (written atomically; full-graph modes: one file per rank and a manifest)")
			ckptEvery := fs.Int("checkpoint-every", d.CheckpointEvery, "epochs between checkpoints (and after the last)")
			resume := fs.Bool("resume", false, "continue from the checkpoint in --checkpoint, with the losses of an uninterrupted run")
			fd := train.FullDefaults(model.ConvGCNII)
			mode := fs.String("mode", "minibatch", "minibatch (data-parallel sampled minibatches), or full-graph training of a deep model: graph (graph parallelism, halo exchange per layer), pipe (GNNPipe: layers in stages over the ranks, chunks through the pipeline) or hybrid (--pipelines pipelines over graph parts)")
			chunks := fs.Int("chunks", fd.Chunks, "pipe, hybrid: chunks each graph part is split into")
			pipelines := fs.Int("pipelines", 2, "hybrid: pipelines (graph parts); the ranks of each are its stages")
			chunkPart := fs.String("chunk-partition", fd.ChunkMethod, "pipe, hybrid: how parts are split into chunks: metis or random")
			shuffleChunks := fs.Bool("shuffle-chunks", fd.Pipe.ShuffleChunks, "pipe, hybrid: new chunk order every epoch (the same within a pipeline)")
			clearGrads := fs.Bool("clear-grads", fd.Pipe.ClearGrads, "pipe, hybrid: drop historical gradients left at the end of an epoch")
			snapEvery := fs.Int("snapshot-every", fd.Pipe.SnapshotEvery, "pipe, hybrid: snapshot the historical embeddings every R epochs and restore them from it at each epoch's start (0: off)")
			alpha := fs.Float64("alpha", fd.Pipe.Model.Alpha, "gcnii: initial-residual weight α")
			lambda := fs.Float64("lambda", fd.Pipe.Model.Lambda, "gcnii: identity-mapping strength λ (β_l = ln(λ/l + 1))")
			return func(env *Env) error {
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				if *mode != "minibatch" {
					for _, f := range []string{"fanouts", "sampler", "topology", "c", "replication", "cache", "cache-frac", "cache-sim-epochs",
						"feature-dtype", "gpu-frac", "bulk", "batch-size", "global-batch-size", "shuffle", "heads", "out-heads", "attn-dropout",
						"normalize", "eval-memory"} {
						if set[f] {
							return fmt.Errorf("train: --%s applies to minibatch training, not to --mode %s", f, *mode)
						}
					}
					fc := train.FullDefaults(*kind)
					fc.Mode, fc.Chunks, fc.ChunkMethod = *mode, *chunks, *chunkPart
					if *mode == train.ModeHybrid {
						fc.Pipelines = *pipelines
					}
					if *mode == train.ModeGraph && !set["chunks"] {
						fc.Chunks = 1
					}
					mc := &fc.Pipe.Model
					if set["layers"] {
						mc.Layers = *layers
					}
					hidden.apply(&mc.Hidden)
					drop.apply32(&mc.Dropout)
					mc.Alpha, mc.Lambda = *alpha, *lambda
					fc.Pipe.ShuffleChunks, fc.Pipe.ClearGrads, fc.Pipe.SnapshotEvery = *shuffleChunks, *clearGrads, *snapEvery
					fc.Pipe.Optimizer, fc.Pipe.WeightDecay, fc.Pipe.Momentum, fc.Pipe.Seed = *optim, float32(*wd), float32(*mom), *seed
					lr.apply32(&fc.Pipe.LR)
					fc.Pipe.BLAS = env.BLAS
					fc.FeatureNorm, fc.EvalEvery, fc.Select = *featNorm, *evalEvery, *sel
					fc.CheckpointDir, fc.CheckpointEvery, fc.Resume = *ckpt, *ckptEvery, *resume
					epochs.apply(&fc.Epochs)
					return runFull(env, *data, *split, *part, fc)
				}
				for _, f := range []string{"chunks", "pipelines", "chunk-partition", "shuffle-chunks", "clear-grads", "snapshot-every", "alpha", "lambda"} {
					if set[f] {
						return fmt.Errorf("train: --%s applies to full-graph training (--mode graph, pipe or hybrid), not to minibatch training", f)
					}
				}
				cfg := train.Defaults(*kind)
				switch *kind {
				case "sage", "gcn", "gat":
				default:
					return fmt.Errorf("train: unknown --model %q (want sage, gcn or gat)", *kind)
				}
				fo, err := parseInts(*fanouts)
				if err != nil {
					return fmt.Errorf("train: --fanouts %q: %w", *fanouts, err)
				}
				cfg.Model.Layers, cfg.Model.Heads, cfg.Model.OutHeads, cfg.Model.Normalize = *layers, *heads, *outHeads, *norm
				hidden.apply(&cfg.Model.Hidden)
				epochs.apply(&cfg.Epochs)
				lr.apply32(&cfg.LR)
				drop.apply32(&cfg.Model.Dropout)
				attnDrop.apply32(&cfg.Model.AttnDropout)
				if !set["fanouts"] && *layers != len(fo) {
					// The default fanouts follow --layers: 25,10 then 10 for further hops.
					fo = fo[:min(len(fo), *layers)]
					for len(fo) < *layers {
						fo = append(fo, 10)
					}
				}
				cfg.FeatureNorm = *featNorm
				cfg.Fanouts, cfg.BatchSize, cfg.Shuffle = fo, *batch, *shuffle
				cfg.Sampler, cfg.Bulk = *sampler, *bulk
				cfg.Topology, cfg.C = *topology, *repl
				cfg.Replication, cfg.Cache, cfg.CacheFrac, cfg.CacheSimEpochs = *frepl, *cache, *cacheFrac, *simEpochs
				cfg.FeatureDType, cfg.GPUFrac = *dtype, *gpuFrac
				if set["global-batch-size"] {
					if set["batch-size"] {
						return fmt.Errorf("train: give --batch-size (per rank) or --global-batch-size, not both")
					}
					if *globalBatch < 1 {
						return fmt.Errorf("train: --global-batch-size %d < 1", *globalBatch)
					}
					p := env.Comm.Size()
					cfg.BatchSize = (*globalBatch + p - 1) / p
				}
				cfg.Optimizer, cfg.WeightDecay, cfg.Momentum, cfg.Seed = *optim, float32(*wd), float32(*mom), *seed
				cfg.EvalEvery, cfg.EvalMemory, cfg.Select = *evalEvery, *evalMem<<20/4, *sel
				cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Resume = *ckpt, *ckptEvery, *resume
				cfg.BLAS = env.BLAS
				return runTrain(env, *data, *split, *part, cfg)
			}
		},
	}
}

// optInt and optFloat are flags whose default depends on other flags (the
// model kind): unset, they leave the default alone and print none in -h.
type optInt struct {
	v   int
	set bool
}

func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

func (o *optInt) Set(s string) (err error) {
	o.v, err = strconv.Atoi(s)
	o.set = err == nil
	return err
}

func (o *optInt) apply(dst *int) {
	if o.set {
		*dst = o.v
	}
}

type optFloat struct {
	v   float64
	set bool
}

func (o *optFloat) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatFloat(o.v, 'g', -1, 64)
}

func (o *optFloat) Set(s string) (err error) {
	o.v, err = strconv.ParseFloat(s, 64)
	o.set = err == nil
	return err
}

func (o *optFloat) apply32(dst *float32) {
	if o.set {
		*dst = float32(o.v)
	}
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func runTrain(env *Env, path, split, partition string, cfg train.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	c := env.Comm
	t0 := time.Now()
	d, err := train.Load(c, path, split, partition, cfg.Replication, cfg.Seed, env.Progress)
	if err != nil {
		return err
	}
	env.Progress("loaded %s in %.2fs: %d vertices, %d features, %d classes; split %s with %d training vertices",
		d.Name, time.Since(t0).Seconds(), d.NumNodes(), d.Feat.Cols, d.NumClasses, d.SplitName, len(d.Split.Train))
	env.Printf("training %s (%d layers, hidden %d) on %s, %d ranks (%s, BLAS %s): %s sampler, fanouts %v, batch %d/rank, bulk %d, %s %.3g, seed %d\n",
		cfg.Model.Kind, cfg.Model.Layers, cfg.Model.Hidden, d.Name, c.Size(), env.Backend, env.BLASName, cfg.Sampler, cfg.Fanouts, cfg.BatchSize, cfg.Bulk, cfg.Optimizer, cfg.LR, cfg.Seed)
	bar := &progressBar{env: env}
	hooks := train.Hooks{
		Log:   env.Progress,
		Batch: bar.update,
		Epoch: func(st train.EpochStats) error {
			bar.clear()
			printEpoch(env, st)
			return env.Record(epochRecord(st))
		},
	}
	res, err := train.Run(c, d, cfg, hooks)
	if err != nil {
		return err
	}
	if res.BestEpoch > 0 {
		env.Printf("best validation accuracy %.4f at epoch %d; test accuracy %.4f (median epoch %.3fs)\n",
			res.BestValAcc, res.BestEpoch, res.TestAcc, res.MedianEpochS)
	} else {
		env.Printf("no evaluation (--eval-every 0); median epoch %.3fs\n", res.MedianEpochS)
	}
	cfgOut := map[string]any{
		"data": path, "split": d.SplitName, "partition": partition, "model": cfg.Model, "sampler": cfg.Sampler, "bulk": cfg.Bulk, "topology": cfg.Topology, "c": cfg.C, "fanouts": cfg.Fanouts,
		"replication": cfg.Replication, "cache": cfg.Cache, "cache_frac": cfg.CacheFrac, "feature_dtype": cfg.FeatureDType, "gpu_frac": cfg.GPUFrac,
		"batch_size": cfg.BatchSize, "feature_norm": cfg.FeatureNorm, "epochs": cfg.Epochs, "shuffle": cfg.Shuffle, "optimizer": cfg.Optimizer,
		"lr": cfg.LR, "weight_decay": cfg.WeightDecay, "momentum": cfg.Momentum, "seed": cfg.Seed,
		"eval_every": cfg.EvalEvery, "select": cfg.Select, "blas": env.BLASName,
	}
	out := map[string]any{
		"final": true, "best_epoch": res.BestEpoch, "best_val_acc": res.BestValAcc, "test_acc": res.TestAcc,
		"median_epoch_s": res.MedianEpochS, "bytes_per_epoch": res.BytesPerEpoch, "config": cfgOut,
		"params": res.NumParams, "epochs_run": len(res.Epochs),
		"remote_rows_per_epoch": res.RemoteRowsPerEpoch, "feature_stores": res.Stores,
	}
	return env.Finish(out)
}

// epochRecord is the JSONL object of one epoch; its keys are documented in
// the README and stay stable.
func epochRecord(st train.EpochStats) map[string]any {
	rec := map[string]any{
		"epoch": st.Epoch, "loss": st.Loss, "train_acc": st.TrainAcc, "val_acc": nil, "test_acc": nil, "val_loss": nil,
		"epoch_s": st.Seconds, "phase_s": st.PhaseSeconds, "bytes": st.Bytes, "batches": st.Batches,
		"fetch_rows": st.FetchRows, "cache_hits": st.CacheHits, "remote_rows": st.RemoteRows,
	}
	if st.Evaluated {
		rec["val_acc"], rec["test_acc"], rec["val_loss"] = st.ValAcc, st.TestAcc, st.ValLoss
	}
	return rec
}

func printEpoch(env *Env, st train.EpochStats) {
	acc := ""
	if st.Evaluated {
		acc = fmt.Sprintf(" val %.4f test %.4f", st.ValAcc, st.TestAcc)
	}
	ps := st.PhaseSeconds
	env.Printf("epoch %3d  loss %.4f  train %.4f%s  | %.3fs: sample %.3f fetch %.3f compute %.3f comm %.3f, eval %.3f | bytes fetch %s grad %s eval %s | rows %d hits %d remote %d\n",
		st.Epoch, st.Loss, st.TrainAcc, acc, st.Seconds, ps[train.PhaseSample], ps[train.PhaseFetch], ps[train.PhaseCompute],
		ps[train.PhaseGrad], ps[train.PhaseEval], human(st.Bytes[train.PhaseFetch]), human(st.Bytes[train.PhaseGrad]), human(st.Bytes[train.PhaseEval]),
		st.FetchRows, st.CacheHits, st.RemoteRows)
}

// progressBar draws a bar on rank 0's standard error inside epochs that
// take long (more than two seconds), and nothing in short ones.
type progressBar struct {
	env   *Env
	start time.Time
	shown bool
	last  time.Time
}

func (b *progressBar) update(epoch, batch, batches int) {
	if b.env.Comm.Rank() != 0 {
		return
	}
	now := time.Now()
	if batch == 0 {
		b.start = now
		return
	}
	if now.Sub(b.start) < 2*time.Second || now.Sub(b.last) < 200*time.Millisecond {
		return
	}
	b.last, b.shown = now, true
	const width = 30
	done := width * batch / batches
	eta := time.Duration(float64(now.Sub(b.start)) * float64(batches-batch) / float64(batch))
	fmt.Fprintf(b.env.Err, "\repoch %d [%s%s] %d/%d minibatches, %s left ", epoch,
		strings.Repeat("#", done), strings.Repeat(".", width-done), batch, batches, eta.Round(time.Second))
}

func (b *progressBar) clear() {
	if b.shown {
		fmt.Fprintf(b.env.Err, "\r%s\r", strings.Repeat(" ", 79))
		b.shown = false
	}
}
