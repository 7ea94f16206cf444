package cli

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gnnmpi/alltoall"
	"gnnmpi/graph"
	"gnnmpi/internal/enum"
	"gnnmpi/partition"
	"gnnmpi/sampling"
	"gnnmpi/train"
)

// sampleFlags are the flags that train and fetch share: the data, the
// minibatch schedule and sampler, and the feature store. addSampleFlags
// registers them with one default each.
type sampleFlags struct {
	data, split, partition      *string
	fanouts                     *string
	sampler                     *train.Sampler
	topology                    *sampling.Layout
	batch, globalBatch, bulk, c *int
	replication, simEpochs      *int
	dtype                       *alltoall.DType
	format                      *string
	seed                        *uint64
	symmetrize                  *bool
}

// addSampleFlags registers the shared flags on fs with the defaults of d.
func addSampleFlags(fs *flag.FlagSet, d train.Config) *sampleFlags {
	return &sampleFlags{
		data:        fs.String("data", "data/cora", "dataset: OGB raw-layout directory or .gnn binary file"),
		split:       fs.String("split", "", "split whose training vertices are the seeds (default: the dataset's first)"),
		partition:   fs.String("partition", string(train.PartitionMetis), "vertex partition over the ranks: "+methodList(train.PartitionMethods)+", or a book file from `gnnmpi partition`"),
		fanouts:     fs.String("fanouts", joinInts(d.Fanouts), "neighbours sampled per hop, from the seeds outwards (-1, and only -1: all); one per layer"),
		sampler:     enumVar(fs, "sampler", d.Sampler, train.ParseSampler, "sage (node-wise: --fanouts neighbours per vertex) or ladies (layer-wise: --fanouts vertices per minibatch and layer; --model gcn)"),
		topology:    enumVar(fs, "topology", d.Topology, sampling.ParseLayout, "where the sampler's graph lives: replicated (no communication), 1.5d (rows over p/c grid rows, c copies; P = Q·A by 1.5D SpGEMM) or 2d (√p×√p blocks, SUMMA); a partitioned dataset (a directory) needs 1.5d with --c equal to --replication, or 2d with --replication √p"),
		c:           fs.Int("c", d.C, "replication factor of --topology 1.5d (divides the number of ranks)"),
		batch:       fs.Int("batch-size", d.BatchSize, "seeds per rank per minibatch (at most)"),
		globalBatch: fs.Int("global-batch-size", 0, "seeds per step over all ranks (at most); each rank takes ⌈G/ranks⌉, so the number of optimizer steps does not depend on the rank count (replaces --batch-size)"),
		bulk:        fs.Int("bulk", d.Bulk, "minibatches sampled together (one sparse product per layer for all); the minibatches do not depend on it"),
		replication: fs.Int("replication", d.Replication, "feature replication c: features partitioned over ranks/c parts, each held by c ranks; a rank fetches only from its replica group (divides the number of ranks)"),
		simEpochs:   fs.Int("cache-sim-epochs", d.CacheSimEpochs, "simulated epochs that score --cache sim"),
		dtype:       enumVar(fs, "feature-dtype", d.FeatureDType, train.ParseFeatureDType, "feature storage and wire type: f32 or f16 (half precision: half the memory and fetch bytes; dense features only)"),
		format:      fs.String("feature-format", string(graph.FeatureAuto), featureFormatUsage+"; auto means dense with --feature-dtype f16"),
		seed:        fs.Uint64("seed", d.Seed, "random seed (weights, shuffles, sampling, dropout, METIS)"),
		symmetrize:  fs.Bool("symmetrize", false, symmetrizeUsage),
	}
}

// settingFlags names the flag that sets each setting of training that
// package train's errors name (train.ErrorSettings, SettingError): the
// commands report those errors with the flags' names (withFlagNames).
var settingFlags = map[train.Setting]string{
	train.SettingBatchSize: "batch-size", train.SettingC: "c", train.SettingCache: "cache",
	train.SettingChunks: "chunks", train.SettingDevice: "device", train.SettingEvalBatchSize: "eval-batch-size",
	train.SettingEvalFanouts: "eval-fanouts", train.SettingFanouts: "fanouts",
	train.SettingFeatureFormat: "feature-format", train.SettingGlobalBatchSize: "global-batch-size",
	train.SettingGradComm: "grad-comm", train.SettingGradDType: "grad-dtype", train.SettingLR: "lr", train.SettingMode: "mode",
	train.SettingModel: "model", train.SettingNormalize: "normalize", train.SettingOptimizer: "optimizer", train.SettingPartition: "partition",
	train.SettingSampler: "sampler", train.SettingShuffle: "shuffle", train.SettingSymmetrize: "symmetrize",
	train.SettingTopology: "topology",
}

// flagName returns the flag that sets s ("--topology"), or s's Go name
// for a setting without a flag.
func flagName(s train.Setting) string {
	if f, ok := settingFlags[s]; ok {
		return "--" + f
	}
	return string(s)
}

// flagNamed is an error whose message names flags where the error it
// wraps names settings.
type flagNamed struct {
	msg string
	err error
}

func (e *flagNamed) Error() string { return e.msg }
func (e *flagNamed) Unwrap() error { return e.err }

// withFlagNames returns err with every setting that a train.SettingError
// in its tree names spelled as the flag that sets it (flagName); the
// result wraps err. It returns err itself when no SettingError is in it.
func withFlagNames(err error) error {
	var found []*train.SettingError
	var walk func(error)
	walk = func(err error) {
		if se, ok := err.(*train.SettingError); ok {
			found = append(found, se)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if e := u.Unwrap(); e != nil {
				walk(e)
			}
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	if len(found) == 0 {
		return err
	}
	// The outer errors' messages hold the inner ones': rewriting the
	// outer first leaves the inner ones' text to rewrite.
	msg := err.Error()
	for _, se := range found {
		msg = strings.ReplaceAll(msg, se.Error(), se.Message(flagName))
	}
	return &flagNamed{msg: msg, err: err}
}

// withFlagNamesRun returns the Flags function of a command that reports
// its errors with withFlagNames.
func withFlagNamesRun(flags func(*flag.FlagSet) func(*Env) error) func(*flag.FlagSet) func(*Env) error {
	return func(fs *flag.FlagSet) func(*Env) error {
		run := flags(fs)
		return func(env *Env) error { return withFlagNames(run(env)) }
	}
}

// config sets cfg's sampling and feature-store settings and seed from the
// flags; set names the flags given on the command line. The fanouts are
// set as given (cfg.Model.Layers is the caller's).
func (f *sampleFlags) config(cfg *train.Config, set map[string]bool) error {
	fo, err := parseInts(*f.fanouts)
	if err != nil {
		return fmt.Errorf("--fanouts %q: %w", *f.fanouts, err)
	}
	cfg.Sampler, cfg.Topology, cfg.FeatureDType = *f.sampler, *f.topology, *f.dtype
	cfg.Fanouts, cfg.BatchSize, cfg.Bulk, cfg.C = fo, *f.batch, *f.bulk, *f.c
	if set["global-batch-size"] {
		// Given alone, the global batch size replaces the per-rank
		// default; given with --batch-size, Validate reports both.
		cfg.GlobalBatchSize = *f.globalBatch
		if !set["batch-size"] {
			cfg.BatchSize = 0
		}
	}
	cfg.Replication, cfg.CacheSimEpochs, cfg.Seed = *f.replication, *f.simEpochs, *f.seed
	return nil
}

// featureFormatUsage describes --feature-format.
var featureFormatUsage = fmt.Sprintf("how features are held, stored and sent: auto (csr below %g%% nonzeros over the whole file), dense or csr (sparse rows: only the nonzeros in memory and on the wire)", 100*graph.SparseDensity)

// featureFormat returns the feature format of the flags: auto means
// dense with --feature-dtype f16, which only dense rows support.
func (f *sampleFlags) featureFormat() (graph.FeatureFormat, error) {
	ff, err := graph.ParseFeatureFormat(*f.format)
	if err == nil && ff == graph.FeatureAuto && *f.dtype == alltoall.F16 {
		ff = graph.FeatureDense
	}
	return ff, err
}

// loadOptions returns train.Load's settings from the flags, for a run
// with feature replication replication.
func (f *sampleFlags) loadOptions(env *Env, replication int) (train.LoadOptions, error) {
	format, err := f.featureFormat()
	if err != nil {
		return train.LoadOptions{}, err
	}
	lo := train.LoadOptions{Split: *f.split, Symmetrize: *f.symmetrize,
		Replication: replication, Format: format, Seed: *f.seed, Progress: env.Progress}
	// A value that is not a method Load runs is a book file's path.
	if m := partition.Method(*f.partition); slices.Contains(train.PartitionMethods, m) {
		lo.Partition = m
	} else {
		lo.Book = *f.partition
	}
	return lo, nil
}

// methodList spells methods as "a, b, c" (for help texts).
func methodList(methods []partition.Method) string {
	s := make([]string, len(methods))
	for i, m := range methods {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}

// joinInts spells xs as parseInts reads them: "25,10".
func joinInts(xs []int) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(x)
	}
	return s
}

// setFlags returns the names of the flags given on fs's command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// opt is a flag whose default depends on other flags (the model kind):
// unset, it leaves the default alone and prints none in -h. optInt and
// optFloat are its two kinds.
type opt[T int | float64] struct {
	v   T
	set bool
}

type (
	optInt   = opt[int]
	optFloat = opt[float64]
)

func (o *opt[T]) String() string {
	if o == nil || !o.set {
		return ""
	}
	return fmt.Sprint(o.v) // strconv's shortest form, as FormatFloat(v, 'g', -1, 64)
}

func (o *opt[T]) Set(s string) error {
	var err error
	switch p := any(&o.v).(type) {
	case *int:
		*p, err = strconv.Atoi(s)
	case *float64:
		*p, err = strconv.ParseFloat(s, 64)
	}
	o.set = err == nil
	return err
}

// apply sets *dst to the flag's value when it was given.
func (o *opt[T]) apply(dst *T) {
	if o.set {
		*dst = o.v
	}
}

// apply32 is apply to a float32 setting.
func (o *opt[T]) apply32(dst *float32) {
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

// enumValue is a flag of a named kind: Set takes the names parse (the
// kind's Parse function) accepts, so that a bad value is refused, with the
// valid names, when the flags are parsed.
type enumValue[T ~string] struct {
	p     *T
	parse func(string) (T, error)
}

func (v enumValue[T]) String() string {
	if v.p == nil {
		return ""
	}
	return string(*v.p)
}

func (v enumValue[T]) Set(s string) error { return enum.Set(v.p, v.parse, s) }

// enumVar defines a flag of a named kind with default def on fs.
func enumVar[T ~string](fs *flag.FlagSet, name string, def T, parse func(string) (T, error), usage string) *T {
	p := new(T)
	*p = def
	fs.Var(enumValue[T]{p, parse}, name, usage)
	return p
}
