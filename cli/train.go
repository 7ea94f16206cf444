package cli

import (
	"flag"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gnnmpi/alltoall"
	"gnnmpi/internal/enum"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/nccl"
	"gnnmpi/train"
)

func trainCmd() *Command {
	return &Command{
		Name:    "train",
		Summary: "train a GNN: data-parallel minibatches (GraphSAGE, GCN, GAT), or a deep full-graph model (GCN, SAGE, ResGCN, GCNII) graph-parallel, pipelined (GNNPipe) or hybrid",
		Usage:   "--data PATH [--model sage|gcn|gat] [flags]   |   --mode graph|pipe|hybrid --data PATH [--model gcnii|resgcn|gcn|sage] [flags]",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			f := addTrainFlags(fs)
			return func(env *Env) error {
				set := setFlags(fs)
				mode := *f.mode
				stop, release := watchSignals(env, f.stopSignals)
				defer release()
				lo, err := f.sample.loadOptions(env, 1)
				if err != nil {
					return err
				}
				if mode != train.ModeMinibatch {
					cfg, err := f.fullConfig(env, mode, set)
					if err != nil {
						return err
					}
					return runFull(env, *f.sample.data, lo, cfg, stop)
				}
				cfg, err := f.minibatchConfig(env, set)
				if err != nil {
					return err
				}
				return runTrain(env, *f.sample.data, lo, cfg, outputs{model: *f.saveModel, logits: *f.saveLogits, stop: stop})
			}
		},
	}
}

// trainFlags are the flags of the train command: those it shares with
// fetch (sample), those of the common settings (train.Common), and those of
// each kind of training.
type trainFlags struct {
	sample *sampleFlags

	mode                  *train.Mode
	kind                  *string
	layers                optInt
	hidden, epochs        optInt
	lr, drop, attnDrop    optFloat
	featNorm              *train.FeatureNorm
	optim                 *model.OptimizerKind
	sel                   *train.Selection
	ckpt                  *string
	wd, mom               *float64
	evalEvery             *int
	ckptEvery             checkpointEvery
	stopSignals           signalList
	resume                *bool
	overwrite             *bool
	saveModel, saveLogits *string

	// minibatch
	heads, outHeads    *int
	shuffle            *train.Shuffle
	cache              *alltoall.CachePolicy
	cacheFrac, gpuFrac *float64
	evalMem            *int64
	evalFanouts        *string
	evalBatch          *int
	norm, overlap      *bool
	device             *train.Device
	gradComm           *train.GradComm
	gradDType          *train.GradDType
	gradBucketMB       *float64
	// full-graph
	chunks                    optInt
	pipelines, snapEvery      *int
	chunkPart                 *train.ChunkMethod
	shuffleChunks, clearGrads *bool
	alpha, lambda             *float64
}

// flagModes are the flags of the train command that apply to one kind of
// training only, and which: the one declaration that onlyFor reads.
var flagModes = map[string]bool{ // true: minibatch only; false: full-graph only
	"fanouts": true, "sampler": true, "topology": true, "c": true, "replication": true, "cache": true, "cache-frac": true, "cache-sim-epochs": true,
	"feature-dtype": true, "gpu-frac": true, "bulk": true, "batch-size": true, "global-batch-size": true, "shuffle": true, "heads": true, "out-heads": true, "attn-dropout": true,
	"normalize": true, "eval-memory": true, "eval-fanouts": true, "eval-batch-size": true, "overlap": true, "save-model": true, "save-logits": true, "grad-comm": true, "grad-dtype": true, "grad-bucket-mb": true, "device": true,
	"chunks": false, "pipelines": false, "chunk-partition": false, "shuffle-chunks": false, "clear-grads": false, "snapshot-every": false, "alpha": false, "lambda": false,
}

// onlyFor returns the flags that apply to minibatch training only
// (minibatch) or to full-graph training only (!minibatch), sorted.
func onlyFor(minibatch bool) []string {
	var names []string
	for name, mb := range flagModes {
		if mb == minibatch {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// fullModes are the full-graph training modes, in the order help texts
// list them.
var fullModes = []train.Mode{train.ModeGraph, train.ModePipe, train.ModeHybrid}

// defaultsHelp spells the defaults of a setting that depend on the model
// kind or the mode, as get reads them from train.Defaults: per minibatch
// kind, kinds of equal value joined ("sage/gcn 100, gat 200", or
// "minibatch 2" when all agree), then per full-graph mode ("pipe/hybrid 4,
// graph 1", or "full-graph 32" when all agree). minibatch and full say
// which kinds of training the setting applies to. It panics if a
// full-graph default depends on the model kind, which it does not spell.
func defaultsHelp(minibatch, full bool, get func(train.Settings) string) string {
	var parts []string
	if minibatch {
		parts = append(parts, groupDefaults(string(train.ModeMinibatch), model.MinibatchKinds, func(k model.Kind) string {
			return get(train.Defaults(k, train.ModeMinibatch))
		}))
	}
	if full {
		parts = append(parts, groupDefaults("full-graph", fullModes, func(m train.Mode) string {
			v := get(train.Defaults(model.DeepKinds[0], m))
			for _, k := range model.DeepKinds[1:] {
				if get(train.Defaults(k, m)) != v {
					panic("cli: a full-graph default depends on the model kind")
				}
			}
			return v
		}))
	}
	sep := "; "
	if len(parts) == 2 && !strings.Contains(parts[0], ",") {
		sep = ", "
	}
	return "default " + strings.Join(parts, sep)
}

// groupDefaults spells the value of every key, keys of equal value joined
// by "/" in the order of the first ("sage/gcn 100, gat 200"), or all as
// "all V" when they agree.
func groupDefaults[K ~string](all string, keys []K, value func(K) string) string {
	var order []string
	names := map[string][]string{}
	for _, k := range keys {
		v := value(k)
		if _, ok := names[v]; !ok {
			order = append(order, v)
		}
		names[v] = append(names[v], string(k))
	}
	if len(order) == 1 {
		return all + " " + order[0]
	}
	parts := make([]string, len(order))
	for i, v := range order {
		parts[i] = strings.Join(names[v], "/") + " " + v
	}
	return strings.Join(parts, ", ")
}

// addTrainFlags registers the train command's flags on fs. Every default
// comes from train.Defaults: a flag whose default is the same for every
// model kind and mode it applies to shows it, the others (optInt,
// optFloat) spell theirs in the help text (defaultsHelp).
func addTrainFlags(fs *flag.FlagSet) *trainFlags {
	d := train.Defaults(model.KindSAGE, train.ModeMinibatch).Minibatch
	fd := train.Defaults(model.KindGCNII, train.ModePipe).Full
	hd := train.Defaults(model.KindGCNII, train.ModeHybrid).Full
	f := &trainFlags{sample: addSampleFlags(fs, d)}
	f.kind = fs.String("model", string(d.Model.Kind), "minibatch: sage (GraphSAGE mean), gcn or gat; full-graph modes: gcnii, resgcn, gcn or sage")
	both := func(get func(*train.Common) string) func(train.Settings) string {
		return func(s train.Settings) string { return get(s.Common()) }
	}
	fs.Var(&f.layers, "layers", "GNN layers ("+defaultsHelp(true, true, func(s train.Settings) string {
		if s.Mode == train.ModeMinibatch {
			return fmt.Sprint(s.Minibatch.Model.Layers)
		}
		return fmt.Sprint(s.Full.Model.Layers)
	})+")")
	fs.Var(&f.hidden, "hidden", "hidden width (GAT: per head; "+defaultsHelp(true, true, func(s train.Settings) string {
		if s.Mode == train.ModeMinibatch {
			return fmt.Sprint(s.Minibatch.Model.Hidden)
		}
		return fmt.Sprint(s.Full.Model.Hidden)
	})+")")
	// The head counts apply to GAT only: their flags default to GAT's,
	// which the other kinds ignore.
	gat := train.Defaults(model.KindGAT, train.ModeMinibatch).Minibatch
	f.heads = fs.Int("heads", gat.Model.Heads, "GAT attention heads of the hidden layers")
	f.outHeads = fs.Int("out-heads", gat.Model.OutHeads, "GAT attention heads of the output layer (averaged)")
	f.cache = enumVar(fs, "cache", d.Cache, train.ParseCache, "static feature cache of remote rows: none, degree (in-degree), vip (inclusion probability of the node-wise sampler), vip-recurrence (SALIENT++'s recurrence as written) or sim (access counts of simulated epochs)")
	f.cacheFrac = fs.Float64("cache-frac", d.CacheFrac, "cache size α: each rank caches ⌊α·n/parts⌋ remote rows")
	f.gpuFrac = fs.Float64("gpu-frac", d.GPUFrac, "fraction of the resident feature rows, hottest first, in the GPU tier: in device memory with --device cuda (the rest in mapped host memory), else only reported")
	fs.Var(&f.epochs, "epochs", "epochs ("+defaultsHelp(true, true, both(func(c *train.Common) string { return fmt.Sprint(c.Epochs) }))+")")
	f.shuffle = enumVar(fs, "shuffle", d.Shuffle, train.ParseShuffle, "local (each rank shuffles its own training vertices) or global (one shuffle split across ranks)")
	f.optim = enumVar(fs, "optimizer", d.Optimizer, model.ParseOptimizerKind, "adam or sgd")
	fs.Var(&f.lr, "lr", "learning rate ("+defaultsHelp(true, true, both(func(c *train.Common) string { return fmt.Sprint(c.LR) }))+")")
	f.wd = fs.Float64("weight-decay", decimal(d.WeightDecay), "L2 weight decay")
	f.mom = fs.Float64("momentum", decimal(d.Momentum), "SGD momentum")
	fs.Var(&f.drop, "dropout", "feature dropout ("+defaultsHelp(true, true, func(s train.Settings) string {
		if s.Mode == train.ModeMinibatch {
			return fmt.Sprint(s.Minibatch.Model.Dropout)
		}
		return fmt.Sprint(s.Full.Model.Dropout)
	})+")")
	f.featNorm = enumVar(fs, "feature-norm", d.FeatureNorm, train.ParseFeatureNorm, "input features: row (each row scaled to sum 1), none, or auto (row when no feature is negative, none for real-valued features)")
	fs.Var(&f.attnDrop, "attn-dropout", "GAT: dropout on attention coefficients ("+defaultsHelp(true, false, func(s train.Settings) string {
		return fmt.Sprint(s.Minibatch.Model.AttnDropout)
	})+")")
	f.norm = fs.Bool("normalize", d.Model.Normalize, "GraphSAGE: L2-normalise hidden embeddings")
	f.gradComm = enumVar(fs, "grad-comm", d.GradComm, train.ParseGradComm, "how the ranks sum the gradients: mpi (the host communicator; with --device cuda the gradients are downloaded, summed and uploaded), or nccl (with --device cuda only: NCCL sums them in place on the GPUs; libnccl.so.2 from "+nccl.LibDirEnv+" or the loader's path); the bytes counted are the same")
	f.gradDType = enumVar(fs, "grad-dtype", d.GradDType, train.ParseGradDType, "the type the gradients are summed in: f32, or bf16 or f16 (half the bytes: rounded to 16 bits on every rank, summed in float32 in rank order, rounded once; the weights and the optimizer stay float32; not with --grad-comm nccl)")
	f.gradBucketMB = fs.Float64("grad-bucket-mb", d.GradBucketMB, "MiB of float32 gradients per bucket: buckets are summed, the last layer's first, while backward goes on (as PyTorch DDP's bucket_cap_mb); 0: one sum after backward. The sums are the same either way")
	f.device = enumVar(fs, "device", d.Device, train.ParseDevice, "where the minibatch step (forward, backward, Adam) and evaluation's layer-wise inference run: cpu, or cuda (the rank's NVIDIA GPU, ranks of a node dealt round-robin over its devices; GraphSAGE, GCN and GAT, on dense or CSR features, with Adam only; sampling, fetch, checkpoints and, unless --grad-comm nccl, the gradient Allreduce stay on the CPU)")
	f.overlap = fs.Bool("overlap", d.Overlap, "sample and fetch the next two minibatches on a loader goroutine while one computes (the same losses either way; false: one after another, for comparison). Unless given, it is on only where every rank has at least 2 cores of its own")
	f.evalEvery = fs.Int("eval-every", d.EvalEvery, "evaluate every K epochs and after the last (0: no evaluation)")
	f.sel = enumVar(fs, "select", d.Select, train.ParseSelection, "model selection over evaluated epochs: val-acc (highest validation accuracy) or val-loss (lowest validation loss)")
	f.evalMem = fs.Int64("eval-memory", d.EvalMemory*4>>20, "MiB of gathered inputs per chunk of layer-wise inference (a layer in several chunks also holds its halo rows, fetched once)")
	f.evalFanouts = fs.String("eval-fanouts", "", "evaluate the validation and test vertices only, by sampling their neighbourhoods with these fanouts (one per layer, from the vertices; -1: all neighbours, exact inference over their receptive fields), in minibatches of --eval-batch-size; empty: layer-wise inference over every vertex")
	f.evalBatch = fs.Int("eval-batch-size", d.EvalBatchSize, "seeds per rank per minibatch of --eval-fanouts evaluation")
	f.ckpt = fs.String("checkpoint", d.CheckpointDir, "checkpoint directory (written atomically; full-graph modes: one file per rank and a manifest)")
	f.ckptEvery = checkpointEvery{epochs: d.CheckpointEvery}
	fs.Var(&f.ckptEvery, "checkpoint-every", "checkpoint cadence: N epochs; Nsteps, every N minibatch steps inside epochs and at every epoch's end (minibatch mode; full-graph modes at epoch ends); or a duration such as 10m, at the first step boundary after it has passed (rank 0's clock); and after the last epoch")
	f.stopSignals = signalList{syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1, syscall.SIGUSR2}
	fs.Var(&f.stopSignals, "checkpoint-on-signal", "signals (comma-separated: TERM, INT, USR1, USR2; or none) on which every rank stops at the next step boundary (full-graph modes: epoch end), writes the checkpoint if --checkpoint is set and exits with status 75 (EX_TEMPFAIL)")
	f.resume = fs.Bool("resume", d.Resume, "continue from the checkpoint in --checkpoint, with the losses of an uninterrupted run")
	f.overwrite = fs.Bool("overwrite", d.Overwrite, "let this run replace the checkpoint that --checkpoint already holds (without --resume or --overwrite such a directory is refused)")
	f.saveModel = fs.String("save-model", "", "write the selected model (the best evaluated epoch's; the last epoch's when none was evaluated) to this file as safetensors with PyTorch Geometric's names (rank 0, atomically; docs/data-formats.md)")
	f.saveLogits = fs.String("save-logits", "", "write the selected model's logits of every vertex, by the evaluation's layer-wise inference after the last epoch, to this file as a float32 .npy (n×classes, global id order; rank 0, atomically; every rank receives all rows)")
	f.mode = enumVar(fs, "mode", train.ModeMinibatch, train.ParseMode, "minibatch (data-parallel sampled minibatches), or full-graph training of a deep model: graph (graph parallelism, halo exchange per layer), pipe (GNNPipe: layers in stages over the ranks, chunks through the pipeline) or hybrid (--pipelines pipelines over graph parts)")
	fs.Var(&f.chunks, "chunks", "pipe, hybrid: chunks each graph part is split into ("+defaultsHelp(false, true, func(s train.Settings) string { return fmt.Sprint(s.Full.Chunks) })+")")
	f.pipelines = fs.Int("pipelines", hd.Pipelines, "hybrid: pipelines (graph parts); the ranks of each are its stages")
	f.chunkPart = enumVar(fs, "chunk-partition", fd.ChunkMethod, train.ParseChunkMethod, "pipe, hybrid: how parts are split into chunks: metis or random")
	f.shuffleChunks = fs.Bool("shuffle-chunks", fd.ShuffleChunks, "pipe, hybrid: new chunk order every epoch (the same within a pipeline)")
	f.clearGrads = fs.Bool("clear-grads", fd.ClearGrads, "pipe, hybrid: drop historical gradients left at the end of an epoch")
	f.snapEvery = fs.Int("snapshot-every", fd.SnapshotEvery, "pipe, hybrid: snapshot the historical embeddings every R epochs and restore them from it at each epoch's start (0: off)")
	f.alpha = fs.Float64("alpha", fd.Model.Alpha, "gcnii: initial-residual weight α")
	f.lambda = fs.Float64("lambda", fd.Model.Lambda, "gcnii: identity-mapping strength λ (β_l = ln(λ/l + 1))")
	return f
}

// common sets the settings both kinds of training share from the flags.
func (f *trainFlags) common(env *Env, c *train.Common) {
	c.FeatureNorm, c.Optimizer, c.Select = *f.featNorm, *f.optim, *f.sel
	f.epochs.apply(&c.Epochs)
	f.lr.apply32(&c.LR)
	c.WeightDecay, c.Momentum, c.Seed = float32(*f.wd), float32(*f.mom), *f.sample.seed
	c.EvalEvery = *f.evalEvery
	c.CheckpointDir, c.Resume, c.Overwrite = *f.ckpt, *f.resume, *f.overwrite
	f.ckptEvery.apply(c)
	c.BLAS = env.BLAS
}

// fullConfig builds the configuration of full-graph training in mode.
func (f *trainFlags) fullConfig(env *Env, mode train.Mode, set map[string]bool) (train.FullConfig, error) {
	for _, name := range onlyFor(true) {
		if set[name] && name != "device" {
			return train.FullConfig{}, fmt.Errorf("train: --%s applies to minibatch training, not to --mode %s", name, mode)
		}
	}
	if *f.device != train.DeviceCPU {
		return train.FullConfig{}, fmt.Errorf("train: --device %s applies to minibatch training only; --mode %s runs on the CPU (use --device cpu)", *f.device, mode)
	}
	fc := train.Defaults(model.Kind(*f.kind), mode).Full
	f.chunks.apply(&fc.Chunks)
	fc.ChunkMethod = *f.chunkPart
	if mode == train.ModeHybrid {
		fc.Pipelines = *f.pipelines
	}
	mc := &fc.Model
	f.layers.apply(&mc.Layers)
	f.hidden.apply(&mc.Hidden)
	f.drop.apply32(&mc.Dropout)
	mc.Alpha, mc.Lambda = *f.alpha, *f.lambda
	fc.ShuffleChunks, fc.ClearGrads, fc.SnapshotEvery = *f.shuffleChunks, *f.clearGrads, *f.snapEvery
	f.common(env, &fc.Common)
	return fc, nil
}

// minibatchConfig builds the configuration of minibatch training.
func (f *trainFlags) minibatchConfig(env *Env, set map[string]bool) (train.Config, error) {
	for _, name := range onlyFor(false) {
		if set[name] {
			return train.Config{}, fmt.Errorf("train: --%s applies to full-graph training (--mode graph, pipe or hybrid), not to minibatch training", name)
		}
	}
	kind := model.Kind(*f.kind)
	if !slices.Contains(model.MinibatchKinds, kind) {
		return train.Config{}, fmt.Errorf("train: unknown --model %q (want %s)", *f.kind, enum.Or(model.MinibatchKinds))
	}
	cfg := train.Defaults(kind, train.ModeMinibatch).Minibatch
	if err := f.sample.config(&cfg, set); err != nil {
		return train.Config{}, fmt.Errorf("train: %w", err)
	}
	f.common(env, &cfg.Common)
	f.layers.apply(&cfg.Model.Layers)
	layers := cfg.Model.Layers
	cfg.Model.Heads, cfg.Model.OutHeads, cfg.Model.Normalize = *f.heads, *f.outHeads, *f.norm
	f.hidden.apply(&cfg.Model.Hidden)
	f.drop.apply32(&cfg.Model.Dropout)
	f.attnDrop.apply32(&cfg.Model.AttnDropout)
	if !set["fanouts"] && layers != len(cfg.Fanouts) {
		cfg.Fanouts = train.DefaultFanouts(layers)
	}
	cfg.Shuffle, cfg.Cache = *f.shuffle, *f.cache
	cfg.CacheFrac, cfg.GPUFrac = *f.cacheFrac, *f.gpuFrac
	cfg.EvalMemory = *f.evalMem << 20 / 4
	if *f.evalFanouts != "" {
		fo, err := parseInts(*f.evalFanouts)
		if err != nil {
			return train.Config{}, fmt.Errorf("train: --eval-fanouts %q: %w", *f.evalFanouts, err)
		}
		cfg.EvalFanouts = fo
	}
	cfg.EvalBatchSize = *f.evalBatch
	cfg.Overlap = *f.overlap
	if set["overlap"] {
		cfg.OverlapCores = 0 // asked for: overlap on any number of cores
	}
	cfg.GradComm, cfg.Device = *f.gradComm, *f.device
	cfg.GradDType, cfg.GradBucketMB = *f.gradDType, *f.gradBucketMB
	return cfg, nil
}

// outputs are the files minibatch training writes besides its metrics:
// the selected model (--save-model) and its logits (--save-logits); ""
// for none.
// outputs are what runTrain writes besides the metrics, and the stop
// request of --checkpoint-on-signal (nil: none).
type outputs struct {
	model, logits string
	stop          func() bool
}

func runTrain(env *Env, path string, lo train.LoadOptions, cfg train.Config, out outputs) error {
	c := env.Comm
	// Resolved here too (Run resolves it again, to the same) to check it
	// before loading and to report the batch size per rank.
	globalBatch := cfg.GlobalBatchSize
	cfg, err := cfg.Resolve(c.Size())
	if err != nil {
		return err
	}
	lo.Replication = cfg.Replication
	lo.WholeTopology = cfg.Topology == train.TopologyReplicated
	// Half features of a partitioned dataset go into the store unwidened
	// (f16) or widened row by row (f32), never copied whole to float32.
	lo.KeepHalf = true
	d, err := loadData(env, path, lo)
	if err != nil {
		return err
	}
	normFlag := cfg.FeatureNorm
	cfg.FeatureNorm = resolveFeatureNorm(env, cfg.FeatureNorm, d)
	env.Printf("training %s (%d layers, hidden %d) on %s, %d ranks (%s, BLAS %s): %s sampler, fanouts %v, batch %d/rank, bulk %d, %s %.3g, seed %d\n",
		cfg.Model.Kind, cfg.Model.Layers, cfg.Model.Hidden, d.Name, c.Size(), env.Backend, env.BLASName, cfg.Sampler, cfg.Fanouts, cfg.BatchSize, cfg.Bulk, cfg.Optimizer, cfg.LR, cfg.Seed)
	if cfg.EvalFanouts != nil && cfg.EvalEvery > 0 {
		env.Printf("evaluation: the validation and test vertices only, node-wise with fanouts %v (-1: all neighbours), %d seeds/rank a minibatch\n", cfg.EvalFanouts, cfg.EvalBatchSize)
	}
	bar := &progressBar{env: env}
	hooks := train.Hooks{
		Log:   env.Progress,
		Batch: bar.update,
		Epoch: func(st train.EpochStats) error {
			bar.clear()
			printEpoch(env, st)
			return env.Record(st.Record())
		},
	}
	if out.logits != "" {
		hooks.Logits = logitsWriter(env, out.logits, d.NumNodes())
	}
	cfg.Backends = env.GPU
	hooks.Stop = out.stop
	res, err := train.Run(c, d, cfg, hooks)
	if err != nil {
		return err
	}
	if out.model != "" {
		if err := saveModel(env, out.model, res, cfg, d); err != nil {
			return err
		}
	}
	printBest(env, res)
	if res.DataPath != nil {
		env.Printf("%s\n", res.DataPath.Summary())
	}
	return env.Finish(res.Final(cfg, d, train.RunInfo{Path: path, Load: lo, FeatureNorm: normFlag, GlobalBatchSize: globalBatch, BLAS: env.BLASName}))
}

func printEpoch(env *Env, st train.EpochStats) {
	acc := ""
	if st.Evaluated {
		acc = fmt.Sprintf(" val %.4f test %.4f", st.ValAcc, st.TestAcc)
	}
	ps := st.PhaseSeconds
	env.Printf("epoch %3d  loss %.4f  train %.4f%s  | %.3fs: sample %.3f fetch %.3f compute %.3f grad exposed %.3f wait %.3f, eval %.3f | bytes fetch %s grad %s eval %s | rows %d hits %d remote %d\n",
		st.Epoch, st.Loss, st.TrainAcc, acc, st.Seconds, ps[metrics.PhaseSample], ps[metrics.PhaseFetch], ps[metrics.PhaseCompute],
		st.GradExposedSeconds, st.WaitSeconds, ps[metrics.PhaseEval], human(st.Bytes[metrics.PhaseFetch]), human(st.Bytes[metrics.PhaseGrad]), human(st.Bytes[metrics.PhaseEval]),
		st.FetchRows, st.CacheHits, st.RemoteRows)
	if g := st.GPUReads; g != nil {
		env.Printf("          gpu reads: device %d rows %s, host %d rows %s, remote %d rows %s\n",
			g.DeviceRows, human(g.DeviceBytes), g.HostRows, human(g.HostBytes), g.RemoteRows, human(g.RemoteBytes))
	}
}

// progressBar draws a bar on rank 0's standard error inside epochs that
// take long (more than two seconds), and nothing in short ones. Its time
// left is measured from the first step it saw in the epoch, which is not
// step 0 in an epoch resumed from a checkpoint written inside it.
type progressBar struct {
	env   *Env
	now   func() time.Time // time.Now when nil (tests set a clock)
	epoch int              // the epoch of start
	first int              // the step of start
	start time.Time
	shown bool
	last  time.Time
}

func (b *progressBar) update(epoch, batch, batches int) {
	if b.env.Comm.Rank() != 0 {
		return
	}
	now := time.Now()
	if b.now != nil {
		now = b.now()
	}
	if b.start.IsZero() || epoch != b.epoch || batch <= b.first {
		b.epoch, b.first, b.start = epoch, batch, now
		return
	}
	if now.Sub(b.start) < 2*time.Second || now.Sub(b.last) < 200*time.Millisecond {
		return
	}
	b.last, b.shown = now, true
	const width = 30
	done := width * batch / batches
	eta := time.Duration(float64(now.Sub(b.start)) * float64(batches-batch) / float64(batch-b.first))
	fmt.Fprintf(b.env.Err, "\repoch %d [%s%s] %d/%d minibatches, %s left ", epoch,
		strings.Repeat("#", done), strings.Repeat(".", width-done), batch, batches, eta.Round(time.Second))
}

func (b *progressBar) clear() {
	if b.shown {
		fmt.Fprintf(b.env.Err, "\r%s\r", strings.Repeat(" ", 79))
		b.shown = false
	}
}

// printBest prints the selected epoch's accuracies and the median epoch
// time of a finished run.
func printBest(env *Env, res *train.Result) {
	if res.BestEpoch > 0 {
		env.Printf("best validation accuracy %.4f at epoch %d; test accuracy %.4f (median epoch %.3fs)\n",
			res.BestValAcc, res.BestEpoch, res.TestAcc, res.MedianEpochS)
	} else {
		env.Printf("no evaluation (--eval-every 0); median epoch %.3fs\n", res.MedianEpochS)
	}
}

// decimal returns the float64 nearest the shortest decimal of x (0.0005
// for float32(0.0005), not 0.0005000000237…), so that help texts show the
// default as written; float32(decimal(x)) == x.
func decimal(x float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return v
}
