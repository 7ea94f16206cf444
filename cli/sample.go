package cli

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// Stream ids of the sample command's randomness (internal/rng paths).
const (
	streamSampleOrder = 0x6f72646572 // "order": the epoch's shuffle of the training vertices
	streamSampleKeys  = 0x6b657973   // "keys": the minibatches' sampling keys
)

func sampleCmd() *Command {
	return &Command{
		Name:    "sample",
		Summary: "sample minibatches (GraphSAGE node-wise or LADIES layer-wise, in bulk) and report their rate",
		Usage:   "--data DIR --sampler sage|ladies --fanouts F1,F2 --batch-size B --bulk K",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			cfg := &sampleConfig{}
			fs.StringVar(&cfg.data, "data", "data/cora", "dataset: OGB raw-layout directory or .gnn binary file")
			fs.StringVar(&cfg.split, "split", "", "split whose training vertices are the seeds (default: the dataset's first; all: every vertex)")
			cfg.sampler, cfg.topology = sampling.KindSAGE, sampling.LayoutReplicated
			fs.Var(&cfg.sampler, "sampler", "sage (node-wise: --fanouts neighbours per vertex), ladies (layer-wise: --fanouts vertices per minibatch and layer) or plain (node-wise, per batch without matrices: the baseline)")
			fs.StringVar(&cfg.fanouts, "fanouts", "25,10", "per hop from the seeds outwards; sage: -1 takes all neighbours")
			fs.IntVar(&cfg.batch, "batch-size", 1024, "seeds per minibatch (at most)")
			fs.IntVar(&cfg.bulk, "bulk", 1, "minibatches sampled together (one sparse product per layer for all)")
			fs.IntVar(&cfg.epochs, "epochs", 1, "passes over the training vertices")
			fs.IntVar(&cfg.maxBatches, "max-batches", 0, "stop each epoch after this many minibatches over all ranks (0: all)")
			fs.Uint64Var(&cfg.seed, "seed", 1, "random seed (shuffle and sampling)")
			fs.Var(&cfg.topology, "topology", "replicated (every rank holds the graph; no communication), 1.5d (rows over p/c grid rows, c copies; P = Q·A by 1.5D SpGEMM) or 2d (√p×√p blocks); with a partitioned dataset (a directory from partition --out) a rank of 1.5d or 2d reads only its grid row's parts")
			fs.IntVar(&cfg.c, "c", 1, "replication factor of the 1.5d topology (divides the number of ranks)")
			fs.BoolVar(&cfg.symmetrize, "symmetrize", false, symmetrizeUsage)
			fs.StringVar(&cfg.dump, "dump", "", "write every minibatch to DIR/e<epoch>-b<batch>.txt (format: README, Data formats)")
			return func(env *Env) error { return runSample(env, cfg) }
		},
	}
}

type sampleConfig struct {
	data, split, fanouts, dump         string
	sampler                            sampling.Kind
	topology                           sampling.Layout
	batch, bulk, epochs, maxBatches, c int
	seed                               uint64
	symmetrize                         bool
}

// SampleResult is the sample command's final metrics object (key "sample").
type SampleResult struct {
	Sampler   sampling.Kind   `json:"sampler"`
	Fanouts   []int           `json:"fanouts"`
	BatchSize int             `json:"batch_size"`
	Bulk      int             `json:"bulk"`
	Topology  sampling.Layout `json:"topology"`
	C         int             `json:"c"` // replication factor (1.5d)
	// PeakRSS is every rank's peak resident memory (VmHWM).
	PeakRSS         []int64 `json:"peak_rss_bytes"`
	Minibatches     int64   `json:"minibatches"`
	Edges           int64   `json:"edges"`    // sampled edges, all blocks of all minibatches
	Vertices        int64   `json:"vertices"` // input vertices (features to fetch), summed over minibatches
	Seconds         float64 `json:"seconds"`  // the slowest rank's sampling time
	MinibatchesPerS float64 `json:"minibatches_per_s"`
	EdgesPerS       float64 `json:"edges_per_s"`
	// Bytes sent over all ranks by phase (sampling with the topology
	// replicated sends none).
	Bytes map[string]int64 `json:"bytes"`
}

// check reports the first invalid setting for p ranks.
func (cfg *sampleConfig) check(p int) error {
	switch {
	case cfg.batch < 1:
		return fmt.Errorf("sample: --batch-size %d < 1", cfg.batch)
	case cfg.bulk < 1:
		return fmt.Errorf("sample: --bulk %d < 1", cfg.bulk)
	case cfg.epochs < 1:
		return fmt.Errorf("sample: --epochs %d < 1", cfg.epochs)
	case cfg.maxBatches < 0:
		return fmt.Errorf("sample: --max-batches %d < 0", cfg.maxBatches)
	case cfg.c < 1 || p%cfg.c != 0:
		return fmt.Errorf("sample: --c %d does not divide the %d ranks", cfg.c, p)
	}
	return nil
}

// sampleItem is minibatch b of an epoch.
type sampleItem struct{ epoch, b int }

// sampleTotals are what a rank sampled: minibatches, edges of all their
// blocks, input vertices, and the time spent in Sample.
type sampleTotals struct {
	minibatches, edges, vertices int64
	seconds                      float64
}

func runSample(env *Env, cfg *sampleConfig) error {
	c := env.Comm
	p := c.Size()
	fo, err := parseInts(cfg.fanouts)
	if err != nil {
		return fmt.Errorf("sample: --fanouts %q: %w", cfg.fanouts, err)
	}
	if err := cfg.check(p); err != nil {
		return err
	}
	restore := collective.SetPhase(c, metrics.PhaseSetup)
	var src *sampleSource
	if graph.IsPartDir(cfg.data) && cfg.topology != sampling.LayoutReplicated {
		src, err = samplePartsSource(env, cfg, fo)
	} else {
		src, err = sampleWholeSource(env, cfg, fo)
	}
	if err != nil {
		return err
	}
	if src.grid != nil {
		defer src.grid.Free()
	}
	if cfg.dump != "" {
		if err := os.MkdirAll(cfg.dump, 0o755); err != nil {
			return fmt.Errorf("sample: %w", err)
		}
	}
	restore()
	env.Printf("sampling %s %v on %s (%d vertices, %d training), batch %d, bulk %d, %d ranks, topology %s (c = %d)\n",
		cfg.sampler, fo, src.name, src.n, len(src.train), cfg.batch, cfg.bulk, p, cfg.topology, cfg.c)

	tot, err := sampleAll(env, cfg, src)
	if err != nil {
		return err
	}
	restore = collective.SetPhase(c, "report")
	err = collective.AllreduceVars(c, collective.Sum, &tot.minibatches, &tot.edges, &tot.vertices)
	if err == nil {
		err = collective.AllreduceVars(c, collective.Max, &tot.seconds)
	}
	if err != nil {
		return err
	}
	cs, err := metrics.GatherComm(c)
	if err != nil {
		return err
	}
	rss, _, err := collective.AllgatherSlice(c, []int64{memlimit.PeakRSS()})
	if err != nil {
		return err
	}
	restore()
	res := SampleResult{Sampler: cfg.sampler, Fanouts: fo, BatchSize: cfg.batch, Bulk: cfg.bulk, Topology: cfg.topology, C: cfg.c, PeakRSS: rss,
		Minibatches: tot.minibatches, Edges: tot.edges, Vertices: tot.vertices, Seconds: tot.seconds, Bytes: map[string]int64{}}
	for ph, x := range cs.ByPhase {
		res.Bytes[ph] = x.TotalSent
	}
	if tot.seconds > 0 {
		res.MinibatchesPerS, res.EdgesPerS = float64(tot.minibatches)/tot.seconds, float64(tot.edges)/tot.seconds
	}
	env.Printf("sampled   %d minibatches, %d edges, %d input vertices in %.3fs (slowest rank)\n", tot.minibatches, tot.edges, tot.vertices, tot.seconds)
	env.Printf("rate      %.1f minibatches/s, %.4g edges/s\n", res.MinibatchesPerS, res.EdgesPerS)
	return env.Finish(map[string]any{"sample": res})
}

// sampleSource is what the sample command samples: the sampler, the
// seeds (ascending), the graph's name and order, and, for a partitioned
// dataset, the mapping of vertex ids back to the original ids (collective;
// nil when the ids are the original ones).
type sampleSource struct {
	smp   sampling.Sampler
	train []int64
	name  string
	n     int64
	orig  func(ids []int64) ([]int64, error)
	grid  *collective.Grid // the distributed topology's, nil when replicated
}

// sampleWholeSource loads the whole topology on every rank (a partitioned
// dataset whole, in its new ids) and builds the sampler, replicated or
// distributed in the 1.5D layout, or 2D, from it.
func sampleWholeSource(env *Env, cfg *sampleConfig, fo []int) (*sampleSource, error) {
	c := env.Comm
	g, err := graph.Load(cfg.data, graph.ReadOptions{NoFeatures: true})
	if err != nil {
		return nil, err
	}
	symmetrized := cfg.symmetrize && !g.Symmetric
	if cfg.symmetrize {
		g = g.Symmetrized()
	}
	checkDirection(env, cfg.data, g, symmetrized)
	train, err := sampleSeeds(g, cfg)
	if err != nil {
		return nil, err
	}
	var smp sampling.Sampler
	var grid *collective.Grid
	switch cfg.topology {
	case sampling.LayoutReplicated:
		smp, err = sampling.New(cfg.sampler, g.Adj, fo, nil)
	case sampling.Layout15D:
		if grid, err = collective.NewGrid(c, c.Size()/cfg.c, cfg.c); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
		smp, err = sampling.New(cfg.sampler, g.Adj, fo, grid)
	case sampling.Layout2D:
		if grid, err = squareGrid(c); err != nil {
			return nil, err
		}
		b := spgemm.Bounds(g.NumNodes, grid.PR)
		smp, err = sampling.NewBlock(cfg.sampler, sampling.Layout2D, grid, b, sparse.RowRange(g.Adj, b[grid.Row], b[grid.Row+1]), fo)
	}
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	src := &sampleSource{smp: smp, train: train, name: g.Name, n: g.NumNodes, grid: grid}
	if graph.IsPartDir(cfg.data) && cfg.dump != "" {
		// Dumps name the original ids, as from the parts.
		m, err := graph.ReadPartManifest(cfg.data)
		if err != nil {
			return nil, err
		}
		all, err := graph.LoadParts(cfg.data, m, 0, m.Parts, graph.PartReadOptions{NoFeatures: true, NoLabels: true})
		if err != nil {
			return nil, err
		}
		src.orig = func(ids []int64) ([]int64, error) {
			out := make([]int64, len(ids))
			for i, v := range ids {
				out[i] = all.OrigIDs[v]
			}
			return out, nil
		}
	}
	return src, nil
}

// squareGrid returns the √p×√p grid of c for the 2D topology.
func squareGrid(c collective.Comm) (*collective.Grid, error) {
	p := c.Size()
	s := 1
	for (s+1)*(s+1) <= p {
		s++
	}
	if s*s != p {
		return nil, fmt.Errorf("sample: --topology 2d needs a square number of ranks, not %d", p)
	}
	return collective.NewGrid(c, s, s)
}

// samplePartsSource reads this rank's grid row's parts of a partitioned
// dataset (the grid rows are the run parts: p/c for 1.5d, √p for 2d) and
// builds the distributed sampler from them: no rank holds the whole
// topology. The seeds (the split's training vertices, or every vertex for
// "all") are gathered from the parts.
func samplePartsSource(env *Env, cfg *sampleConfig, fo []int) (*sampleSource, error) {
	c := env.Comm
	p := c.Size()
	if cfg.symmetrize {
		return nil, fmt.Errorf("sample: %s is partitioned: symmetrize when partitioning (partition --symmetrize)", cfg.data)
	}
	m, err := graph.ReadPartManifest(cfg.data)
	if err != nil {
		return nil, err
	}
	var rc int
	var grid *collective.Grid
	if cfg.topology == sampling.Layout2D {
		if grid, err = squareGrid(c); err != nil {
			return nil, err
		}
		rc = grid.PC
	} else {
		if grid, err = collective.NewGrid(c, p/cfg.c, cfg.c); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
		rc = cfg.c
	}
	first, last, err := m.RunParts(c.Rank(), p, rc)
	if err != nil {
		return nil, err
	}
	part, err := graph.LoadParts(cfg.data, m, first, last, graph.PartReadOptions{NoFeatures: true, NoLabels: true})
	if err := collective.Agree(c, err); err != nil {
		return nil, err
	}
	bounds := m.RunOffsets(p / rc)
	smp, err := sampling.NewBlock(cfg.sampler, cfg.topology, grid, bounds, part.Adj, fo)
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	// The seeds: one replica of each run part contributes its own, in
	// rank order, which is ascending id order.
	var mine []int64
	if c.Rank()%rc == 0 {
		if cfg.split == "all" {
			mine = make([]int64, part.Hi-part.Lo)
			for i := range mine {
				mine[i] = part.Lo + int64(i)
			}
		} else {
			name, _, err := m.SplitNamed(cfg.split)
			if err != nil {
				return nil, fmt.Errorf("sample: %w", err)
			}
			s, ok := part.Splits[name]
			if !ok {
				return nil, fmt.Errorf("sample: %s has no split %q", cfg.data, cfg.split)
			}
			mine = s.Train
		}
	}
	train, _, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return nil, err
	}
	orig := func(ids []int64) ([]int64, error) { return part.AskOrigIDs(c, bounds, rc, ids) }
	return &sampleSource{smp: smp, train: train, name: m.Name, n: m.NumNodes, orig: orig, grid: grid}, nil
}

// sampleSeeds returns the vertices whose minibatches the command samples:
// the training vertices of cfg.split, or every vertex for "all".
func sampleSeeds(g *graph.Dataset, cfg *sampleConfig) ([]int64, error) {
	if cfg.split == "all" {
		train := make([]int64, g.NumNodes)
		for v := range train {
			train[v] = int64(v)
		}
		return train, nil
	}
	_, sp, err := g.SplitNamed(cfg.split)
	if err != nil {
		return nil, fmt.Errorf("sample: %s %w", cfg.data, err)
	}
	return sp.Train, nil
}

// sampleSchedule returns this rank's minibatches of all epochs in order,
// the epochs' shuffles of the seeds, and the number of minibatches over
// all ranks. Minibatch b of an epoch is a slice of the epoch's global
// shuffle of the n seeds, sampled by rank b mod p with a key of (seed,
// epoch, b): the minibatches do not depend on p, c, the topology or the
// bulk.
func sampleSchedule(cfg *sampleConfig, n, p, me int) (mine []sampleItem, orders [][]int, all int) {
	orders = make([][]int, cfg.epochs)
	for epoch := range cfg.epochs {
		orders[epoch] = rng.New(cfg.seed, streamSampleOrder, uint64(epoch)).Perm(n)
		total := (n + cfg.batch - 1) / cfg.batch
		if cfg.maxBatches > 0 {
			total = min(total, cfg.maxBatches)
		}
		all += total
		for b := me; b < total; b += p {
			mine = append(mine, sampleItem{epoch, b})
		}
	}
	return mine, orders, all
}

// sampleAll samples this rank's minibatches of all epochs in order, bulk
// at a time (a bulk may span epochs, as a sampler running ahead of
// training would), dumping them with cfg.dump. Every rank makes the same
// number of Sample calls (the distributed topology's are collective), the
// last ones possibly empty.
func sampleAll(env *Env, cfg *sampleConfig, src *sampleSource) (sampleTotals, error) {
	smp, train := src.smp, src.train
	c := env.Comm
	p := c.Size()
	defer collective.SetPhase(c, "sample")()
	mine, orders, all := sampleSchedule(cfg, len(train), p, c.Rank())
	restore := collective.SetPhase(c, metrics.PhaseSetup)
	mostMine, err := collective.AllreduceScalar(c, int64(len(mine)), collective.Max)
	if err != nil {
		return sampleTotals{}, err
	}
	restore()
	var tot sampleTotals
	calls := (int(mostMine) + cfg.bulk - 1) / cfg.bulk
	for call := range calls {
		chunk := mine[min(call*cfg.bulk, len(mine)):min((call+1)*cfg.bulk, len(mine))]
		batches := make([][]int64, len(chunk))
		keys := make([]uint64, len(chunk))
		for x, it := range chunk {
			order := orders[it.epoch]
			for _, k := range order[it.b*cfg.batch : min((it.b+1)*cfg.batch, len(order))] {
				batches[x] = append(batches[x], train[k])
			}
			keys[x] = rng.Mix(cfg.seed, streamSampleKeys, uint64(it.epoch), uint64(it.b))
		}
		t0 := time.Now()
		mbs, err := smp.Sample(batches, keys)
		if err != nil {
			return sampleTotals{}, err
		}
		tot.seconds += time.Since(t0).Seconds()
		name := func(v int64) int64 { return v }
		if cfg.dump != "" && src.orig != nil {
			if name, err = originalNames(mbs, src.orig); err != nil {
				return sampleTotals{}, err
			}
		}
		for x, m := range mbs {
			tot.minibatches++
			tot.vertices += int64(len(m.Input()))
			for _, blk := range m.Blocks {
				tot.edges += blk.Adj.NNZ()
			}
			if cfg.dump != "" {
				it := chunk[x]
				path := filepath.Join(cfg.dump, fmt.Sprintf("e%d-b%d.txt", it.epoch, it.b))
				if err := dumpMiniBatch(path, m, it.epoch, it.b, keys[x], string(cfg.sampler), name); err != nil {
					return sampleTotals{}, err
				}
			}
		}
		env.Progress("%d of %d minibatches sampled", min(int64((call+1)*cfg.bulk*p), int64(all)), all)
	}
	return tot, nil
}

// originalNames returns the mapping of the vertices of mbs to their
// original ids (orig, collective: every rank calls it once per bulk).
func originalNames(mbs []*sampling.MiniBatch, orig func([]int64) ([]int64, error)) (func(int64) int64, error) {
	var ids []int64
	for _, m := range mbs {
		ids = append(ids, m.Input()...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	o, err := orig(ids)
	if err != nil {
		return nil, err
	}
	return func(v int64) int64 {
		k, _ := slices.BinarySearch(ids, v)
		return o[k]
	}, nil
}

// dumpMiniBatch writes m as text: a header line, the seeds, then per block
// (input layer first) its sizes, its sources' ids and one line per edge
// "dst src", with the edge's weight for LADIES. Vertices are written as
// name gives them: their global ids, or a partitioned dataset's original
// ids.
func dumpMiniBatch(path string, m *sampling.MiniBatch, epoch, batch int, key uint64, sampler string, name func(int64) int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# gnnmpi minibatch %d of epoch %d, key %#x, sampler %s, %d blocks\n", batch, epoch, key, sampler, len(m.Blocks))
	fmt.Fprintf(w, "seeds %d", len(m.Seeds))
	for _, v := range m.Seeds {
		fmt.Fprintf(w, " %d", name(v))
	}
	fmt.Fprintln(w)
	for l, b := range m.Blocks {
		fmt.Fprintf(w, "block %d dst %d src %d edges %d\n", l, len(b.Dst), len(b.Src), b.Adj.NNZ())
		fmt.Fprint(w, "src")
		for _, v := range b.Src {
			fmt.Fprintf(w, " %d", name(v))
		}
		fmt.Fprintln(w)
		for i, v := range b.Dst {
			for q := b.Adj.Indptr[i]; q < b.Adj.Indptr[i+1]; q++ {
				if b.Adj.Values != nil {
					fmt.Fprintf(w, "%d %d %.17g\n", name(v), name(b.Src[b.Adj.Indices[q]]), b.Adj.Values[q])
				} else {
					fmt.Fprintf(w, "%d %d\n", name(v), name(b.Src[b.Adj.Indices[q]]))
				}
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("sample: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sample: %s: %w", path, err)
	}
	return nil
}
