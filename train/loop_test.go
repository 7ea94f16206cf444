package train

import (
	"errors"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/pipe"
	"gnnmpi/sampling"
)

// fakeStepper records what the epoch loop asks of it; its losses and
// evaluations come from tables, epoch by epoch.
type fakeStepper struct {
	loss      map[int]float64    // loss of an epoch (default 1)
	eval      map[int]evaluation // evaluation after an epoch
	resumeAt  *resumed
	epoch     int
	trained   []int
	evaluated []int
	saved     []int
	savedRec  []record
}

func (f *fakeStepper) train(epoch int, _ stepRun) error {
	f.epoch = epoch
	f.trained = append(f.trained, epoch)
	return nil
}

func (f *fakeStepper) evaluate() (evaluation, error) {
	f.evaluated = append(f.evaluated, f.epoch)
	return f.eval[f.epoch], nil
}

func (f *fakeStepper) summarize(epoch int, ev *evaluation, _ float64) (EpochStats, error) {
	st := EpochStats{Epoch: epoch, Loss: 1}
	if l, ok := f.loss[epoch]; ok {
		st.Loss = l
	}
	if ev != nil {
		st.Evaluated, st.ValAcc, st.ValLoss, st.TestAcc = true, ev.ValAcc, ev.ValLoss, ev.TestAcc
	}
	return st, nil
}

func (f *fakeStepper) save(epoch int, rec *record) error {
	f.saved = append(f.saved, epoch)
	r := *rec
	r.history, r.best = slices.Clone(rec.history), slices.Clone(rec.best)
	f.savedRec = append(f.savedRec, r)
	return nil
}

func (f *fakeStepper) resume() (resumed, error) {
	if f.resumeAt == nil {
		return resumed{}, errors.New("no checkpoint")
	}
	return *f.resumeAt, nil
}

func (f *fakeStepper) flatWeights(dst []float32) []float32 { return append(dst, float32(f.epoch)) }

// The loop evaluates every EvalEvery epochs and after the last, checkpoints
// every CheckpointEvery epochs and after the last, and keeps the best
// evaluated epoch (and, for a weightKeeper, its weights) by the selection
// rule; a resumed run starts after the checkpoint's epoch with its record.
func TestLoopCadence(t *testing.T) {
	evals := map[int]evaluation{
		3: {ValAcc: 0.5, ValLoss: 0.9}, 6: {ValAcc: 0.7, ValLoss: 0.8},
		7: {ValAcc: 0.7, ValLoss: 0.6}, 2: {ValAcc: 0.9, ValLoss: 1},
		4: {ValAcc: 0.6, ValLoss: 0.5},
	}
	for _, tc := range []struct {
		name                   string
		epochs, evalEv, ckptEv int
		sel                    Selection
		noDir                  bool
		wantEval, wantSave     []int
		wantBest               int
	}{
		{"every 3, 2", 7, 3, 2, SelectAcc, false, []int{3, 6, 7}, []int{2, 4, 6, 7}, 7},
		{"loss rule", 7, 3, 2, SelectLoss, false, []int{3, 6, 7}, []int{2, 4, 6, 7}, 7},
		{"every epoch", 4, 1, 10, SelectAcc, false, []int{1, 2, 3, 4}, []int{4}, 2},
		{"loss every epoch", 4, 1, 10, SelectLoss, false, []int{1, 2, 3, 4}, []int{4}, 1}, // epoch 1 has no table entry: loss 0
		{"no eval", 5, 0, 5, SelectAcc, false, nil, []int{5}, 0},
		{"no checkpoints", 3, 2, 1, SelectAcc, true, []int{2, 3}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := Common{Epochs: tc.epochs, EvalEvery: tc.evalEv, CheckpointDir: "ck", CheckpointEvery: tc.ckptEv, Select: tc.sel}
			if tc.noDir {
				cc.CheckpointDir = ""
			}
			f := &fakeStepper{eval: evals}
			var hooked []int
			rec, err := runLoop(f, nil, &cc, Hooks{Epoch: func(st EpochStats) error {
				hooked = append(hooked, st.Epoch)
				return nil
			}})
			require.NoError(t, err)
			require.Equal(t, tc.wantEval, f.evaluated)
			require.Equal(t, tc.wantSave, f.saved)
			require.Len(t, rec.history, tc.epochs)
			require.Len(t, hooked, tc.epochs)
			require.Equal(t, tc.wantBest, rec.bestEpoch)
			if tc.wantBest > 0 {
				require.Equal(t, []float32{float32(tc.wantBest)}, rec.best)
				require.Equal(t, evals[tc.wantBest].ValAcc, rec.bestVal)
			}
		})
	}

	// Resume: the loop continues after the checkpoint's epoch from its
	// record, and the best epoch may stay the one before the resume.
	cc := Common{Epochs: 4, EvalEvery: 1, Select: SelectAcc, Resume: true, CheckpointDir: "ck", CheckpointEvery: 1}
	before := record{history: []EpochStats{{Epoch: 1, Evaluated: true, ValAcc: 0.95}, {Epoch: 2, Evaluated: true, ValAcc: 0.9}},
		bestEpoch: 1, bestVal: 0.95, best: []float32{1}}
	f := &fakeStepper{eval: evals, resumeAt: &resumed{epoch: 2, rec: before, from: "ck"}}
	var logged string
	rec, err := runLoop(f, nil, &cc, Hooks{Log: func(format string, args ...any) { logged = format }})
	require.NoError(t, err)
	require.Equal(t, []int{3, 4}, f.trained)
	require.Equal(t, []int{3, 4}, f.saved)
	require.Len(t, rec.history, 4)
	require.Equal(t, 1, rec.bestEpoch)
	require.Equal(t, []float32{1}, rec.best)
	require.Equal(t, 3, len(f.savedRec[0].history), "the checkpoint after epoch 3 holds epochs 1-3")
	require.Contains(t, logged, "resumed from")
}

// A loss that is not finite ends the run with an error before it is
// checkpointed or reported.
func TestLoopDiverged(t *testing.T) {
	for _, loss := range []float64{math.NaN(), math.Inf(1)} {
		f := &fakeStepper{loss: map[int]float64{2: loss}}
		cc := Common{Epochs: 3, Select: SelectAcc, CheckpointDir: "ck", CheckpointEvery: 1}
		_, err := runLoop(f, nil, &cc, Hooks{})
		require.ErrorContains(t, err, "epoch 2: loss is")
		require.Equal(t, []int{1}, f.saved)
	}
}

// asString turns a Parse function of a named string type into one
// returning the plain string, so that one table can hold them all.
func asString[T ~string](parse func(string) (T, error)) func(string) (string, error) {
	return func(s string) (string, error) {
		v, err := parse(s)
		return string(v), err
	}
}

// Every Parse function accepts exactly its constants' names and lists them
// in its error.
func TestParsers(t *testing.T) {
	check := func(t *testing.T, parse func(string) (string, error), names []string, want string) {
		for _, n := range names {
			got, err := parse(n)
			require.NoError(t, err)
			require.Equal(t, n, got)
		}
		_, err := parse("bogus")
		require.EqualError(t, err, want)
	}
	for _, tc := range []struct {
		name  string
		parse func(string) (string, error)
		names []string
		want  string
	}{
		{"optimizer", asString(model.ParseOptimizerKind), []string{"adam", "sgd"}, `model: unknown optimizer "bogus" (want adam or sgd)`},
		{"mode", asString(ParseMode), []string{"minibatch", "graph", "pipe", "hybrid"}, `train: unknown mode "bogus" (want minibatch, graph, pipe or hybrid)`},
		{"sampler", asString(ParseSampler), []string{"sage", "ladies"}, `train: unknown sampler "bogus" (want sage or ladies)`},
		{"topology", asString(sampling.ParseLayout), []string{"replicated", "1.5d"}, `sampling: unknown topology "bogus" (want replicated, 1.5d or 2d)`},
		{"shuffle", asString(ParseShuffle), []string{"local", "global"}, `train: unknown shuffle "bogus" (want local or global)`},
		{"selection", asString(ParseSelection), []string{"val-acc", "val-loss"}, `train: unknown model selection "bogus" (want val-acc or val-loss)`},
		{"feature norm", asString(ParseFeatureNorm), []string{"auto", "row", "none"}, `train: unknown feature normalisation "bogus" (want auto, row or none)`},
		{"cache", asString(ParseCache), []string{"none", "degree", "vip", "vip-recurrence", "sim"}, `train: unknown cache policy "bogus" (want none, degree, vip, vip-recurrence or sim)`},
		{"dtype", asString(ParseFeatureDType), []string{"f32", "f16"}, `train: unknown feature dtype "bogus" (want f32 or f16)`},
		{"chunks", asString(ParseChunkMethod), []string{"metis", "random"}, `train: unknown chunk partition "bogus" (want metis or random)`},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, tc.parse, tc.names, tc.want) })
	}
}

// An unknown optimizer is an error in both kinds of training (the
// minibatch trainer used to fall back to Adam), and so is any typed value
// set to a name outside its constants.
func TestUnknownValues(t *testing.T) {
	mb := Defaults(model.KindSAGE, ModeMinibatch).Minibatch
	mb.Optimizer = "rmsprop"
	require.ErrorContains(t, mb.Validate(), `unknown optimizer "rmsprop" (want adam or sgd)`)
	_, err := mb.Common.newOptimizer()
	require.ErrorContains(t, err, `unknown optimizer "rmsprop"`)
	err = inproc.Run(1, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Distribute(sbm(), "random", partition.Block(sbm().NumNodes, 1), 0)
		if err != nil {
			return err
		}
		_, err = Run(c, d, mb, Hooks{})
		return err
	})
	require.ErrorContains(t, err, `unknown optimizer "rmsprop"`)

	full := Defaults(model.KindGCNII, ModePipe).Full
	full.Optimizer = "rmsprop"
	require.ErrorContains(t, full.Validate(2), `unknown optimizer "rmsprop" (want adam or sgd)`)
	full.Optimizer = OptimizerSGD
	require.NoError(t, full.Validate(2))

	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Sampler = "fastgcn" }, `unknown sampler "fastgcn"`},
		{func(c *Config) { c.Topology = "3d" }, `unknown topology "3d"`},
		{func(c *Config) { c.Shuffle = "none" }, `unknown shuffle "none"`},
		{func(c *Config) { c.Select = "best" }, `unknown model selection "best"`},
		{func(c *Config) { c.FeatureNorm = "col" }, `unknown feature normalisation "col"`},
		{func(c *Config) { c.Cache = "lru" }, `unknown cache policy "lru"`},
		{func(c *Config) { c.FeatureDType = "bf16" }, `unknown feature dtype "bf16"`},
		{func(c *Config) { c.WeightDecay = -1 }, "weight decay -1 < 0"},
	} {
		cfg := Defaults(model.KindSAGE, ModeMinibatch).Minibatch
		tc.edit(&cfg)
		require.ErrorContains(t, cfg.Validate(), tc.want)
	}
	fc := Defaults(model.KindGCNII, ModePipe).Full
	fc.Mode = ModeMinibatch
	require.ErrorContains(t, fc.Validate(2), `unknown mode "minibatch" for full-graph training (want graph, pipe or hybrid)`)
}

// A global batch size G becomes ⌈G/p⌉ seeds per rank; it excludes a batch
// size per rank, and resolving twice changes nothing.
func TestGlobalBatchSize(t *testing.T) {
	cfg := testConfig("sage")
	cfg.BatchSize, cfg.GlobalBatchSize = 0, 100
	for _, tc := range []struct{ p, want int }{{1, 100}, {2, 50}, {3, 34}, {8, 13}, {200, 1}} {
		got, err := cfg.Resolve(tc.p)
		require.NoError(t, err)
		require.Equal(t, tc.want, got.BatchSize, "p=%d", tc.p)
		require.Zero(t, got.GlobalBatchSize)
		again, err := got.Resolve(tc.p)
		require.NoError(t, err)
		require.Equal(t, got.BatchSize, again.BatchSize)
	}
	both := cfg
	both.BatchSize = 8
	_, err := both.Resolve(2)
	require.ErrorContains(t, err, "not both")
	neg := cfg
	neg.GlobalBatchSize = -1
	_, err = neg.Resolve(2)
	require.ErrorContains(t, err, "global batch size -1 < 1")
	none := cfg
	none.GlobalBatchSize = 0
	_, err = none.Resolve(2)
	require.ErrorContains(t, err, "batch size 0 < 1")

	// Run resolves it: a library caller's global batch of 70 gives the
	// steps of a batch of 35 per rank on two ranks.
	cfg.Epochs, cfg.EvalEvery = 1, 0
	per := cfg
	per.BatchSize, per.GlobalBatchSize = 35, 0
	a, b := runP(t, 2, per, nil), runP(t, 2, withGlobal(cfg, 70), nil)
	require.Equal(t, losses(a), losses(b))
	require.Equal(t, a.Epochs[0].Batches, b.Epochs[0].Batches)
}

func withGlobal(cfg Config, g int) Config {
	cfg.BatchSize, cfg.GlobalBatchSize = 0, g
	return cfg
}

// Fingerprints written before the common settings moved into Common (the
// JSON below is what the earlier code wrote for these settings) still
// match, so those checkpoints stay resumable; a changed setting does not.
func TestFingerprintsOfEarlierCheckpoints(t *testing.T) {
	const oldMinibatch = `{"Config":{"Model":{"Kind":"sage","In":0,"Hidden":16,"Out":0,"Layers":2,"Heads":1,"OutHeads":1,"Dropout":0.5,"Normalize":false,"AttnDropout":0},"FeatureNorm":"none","Sampler":"sage","Fanouts":[5,5],"BatchSize":40,"Bulk":1,"Topology":"replicated","C":1,"Replication":1,"Cache":"none","CacheFrac":0,"CacheSimEpochs":2,"FeatureDType":"f32","GPUFrac":0,"Epochs":0,"Shuffle":"local","Optimizer":"adam","LR":0.01,"WeightDecay":0.0005,"Momentum":0,"Seed":1,"EvalEvery":0,"Select":"val-acc","EvalMemory":0,"CheckpointDir":"","CheckpointEvery":0,"Resume":false},"Ranks":1,"Dataset":"sbm","Split":"random","Nodes":600,"Book":2383663930}`
	const oldFull = `{"Config":{"Mode":"pipe","Pipelines":1,"Chunks":2,"ChunkMethod":"metis","Pipe":{"Model":{"Kind":"gcnii","In":0,"Hidden":8,"Out":0,"Layers":4,"Dropout":0.5,"Alpha":0.1,"Lambda":0.5},"Layout":{"Stages":0,"Pipelines":0},"ShuffleChunks":true,"ClearGrads":true,"SnapshotEvery":23,"Optimizer":"adam","LR":0.01,"WeightDecay":0.0005,"Momentum":0,"Seed":1},"FeatureNorm":"none","Epochs":0,"EvalEvery":0,"Select":"val-acc","CheckpointDir":"","CheckpointEvery":0,"Resume":false},"Layout":{"Stages":1,"Pipelines":1},"Ranks":1,"Dataset":"sbm","Split":"random","Nodes":600,"Book":2383663930,"ChunksCRC":2383663930}`
	var mb, full string
	err := inproc.Run(1, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Distribute(sbm(), "random", partition.Block(sbm().NumNodes, 1), 0)
		if err != nil {
			return err
		}
		tr, err := newTrainer(c, d, testConfig("sage"))
		if err != nil {
			return err
		}
		mb = tr.fingerprint
		full = fullFingerprint(fullConfig(ModePipe), pipe.Layout{Stages: 1, Pipelines: 1}, 1, d, crc32.Checksum(int32Bytes(make([]int32, d.NumNodes())), castagnoli))
		return nil
	})
	require.NoError(t, err)
	require.True(t, sameFingerprint(oldMinibatch, mb), "%s\n%s", oldMinibatch, mb)
	require.True(t, sameFingerprint(oldFull, full), "%s\n%s", oldFull, full)
	require.Equal(t, oldFull, full, "the full-graph fingerprint keeps its layout")
	require.False(t, sameFingerprint(oldMinibatch, strings.Replace(mb, `"Seed":1`, `"Seed":2`, 1)))
	require.False(t, sameFingerprint("not json", "not json either"))
	require.True(t, sameFingerprint("same", "same"))
}
