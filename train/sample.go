package train

import (
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

// Stream ids of gnnmpi sample's randomness (internal/rng paths).
const (
	streamSampleOrder = 0x6f72646572 // "order": the epoch's shuffle of the training vertices
	streamSampleKeys  = 0x6b657973   // "keys": the minibatches' sampling keys
)

// SampleConfig is the configuration of the sampling benchmark (gnnmpi
// sample): the sampler, its topology and the minibatches to draw.
type SampleConfig struct {
	Data  string // dataset: a directory, a .gnn file or a partitioned dataset
	Split string // split whose training vertices are the seeds ("": the first; "all": every vertex)
	// Sampler and Fanouts are the sampler's kind and its fanouts per hop
	// from the seeds outwards.
	Sampler sampling.Kind
	Fanouts []int
	// Topology is how the ranks hold the matrix, C the replication of the
	// 1.5D topology.
	Topology sampling.Layout
	C        int
	// Batch is the seeds per minibatch, Bulk the minibatches sampled
	// together, Epochs the passes over the seeds and MaxBatches the
	// minibatches per epoch over all ranks (0: all).
	Batch, Bulk, Epochs, MaxBatches int
	Seed                            uint64
	Symmetrize                      bool
	// Dump is a directory to write every minibatch to as
	// e<epoch>-b<batch>.txt (sampling.MiniBatch.WriteText); "" for none.
	Dump string
	// Loaded, when not nil, is called with a dataset loaded whole, and
	// whether it was symmetrized, before any sampling (the command warns
	// about a directed graph).
	Loaded func(g *graph.Dataset, symmetrized bool)
	// Progress, when not nil, reports progress after each bulk.
	Progress func(format string, args ...any)
}

// check reports the first invalid setting for p ranks.
func (cfg *SampleConfig) check(p int) error {
	switch {
	case cfg.Batch < 1:
		return fmt.Errorf("sample: --batch-size %d < 1", cfg.Batch)
	case cfg.Bulk < 1:
		return fmt.Errorf("sample: --bulk %d < 1", cfg.Bulk)
	case cfg.Epochs < 1:
		return fmt.Errorf("sample: --epochs %d < 1", cfg.Epochs)
	case cfg.MaxBatches < 0:
		return fmt.Errorf("sample: --max-batches %d < 0", cfg.MaxBatches)
	case cfg.C < 1 || p%cfg.C != 0:
		return fmt.Errorf("sample: --c %d does not divide the %d ranks", cfg.C, p)
	}
	return checkFanouts("sample", cfg.Fanouts, cfg.Sampler)
}

// SampleSource is what the sampling benchmark samples: the sampler, the
// seeds (ascending), the graph's name and order, and, for a partitioned
// dataset, the mapping of vertex ids back to the original ids.
type SampleSource struct {
	Name  string  // the graph's
	N     int64   // vertices
	Seeds []int64 // ascending
	cfg   *SampleConfig
	smp   sampling.Sampler
	orig  func(ids []int64) ([]int64, error) // collective; nil: the ids are the original ones
	grid  *collective.Grid                   // the distributed topology's, nil when replicated
}

// NewSampleSource validates cfg for c's ranks, loads the dataset (a
// partitioned one's grid row of parts with a distributed topology, else
// the whole graph on every rank) and builds the sampler, replicated or
// distributed over a grid of c. It creates cfg.Dump. It is collective
// over c (phase setup); Close frees the grid.
func NewSampleSource(c collective.Comm, cfg *SampleConfig) (*SampleSource, error) {
	if err := cfg.check(c.Size()); err != nil {
		return nil, err
	}
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	var src *SampleSource
	var err error
	if graph.IsPartDir(cfg.Data) && cfg.Topology != sampling.LayoutReplicated {
		src, err = samplePartsSource(c, cfg)
	} else {
		src, err = sampleWholeSource(c, cfg)
	}
	if err != nil {
		return nil, err
	}
	src.cfg = cfg
	if cfg.Dump != "" {
		if err := os.MkdirAll(cfg.Dump, 0o755); err != nil {
			src.Close()
			return nil, fmt.Errorf("sample: %w", err)
		}
	}
	return src, nil
}

// Close frees the distributed topology's grid.
func (s *SampleSource) Close() {
	if s.grid != nil {
		s.grid.Free()
	}
}

// sampleWholeSource loads the whole topology on every rank (a partitioned
// dataset whole, in its new ids) and builds the sampler, replicated or
// distributed in the 1.5D layout, or 2D, from it.
func sampleWholeSource(c collective.Comm, cfg *SampleConfig) (*SampleSource, error) {
	g, err := graph.Load(cfg.Data, graph.ReadOptions{NoFeatures: true})
	if err != nil {
		return nil, err
	}
	symmetrized := cfg.Symmetrize && !g.Symmetric
	if cfg.Symmetrize {
		g = g.Symmetrized()
	}
	if cfg.Loaded != nil {
		cfg.Loaded(g, symmetrized)
	}
	seeds, err := sampleSeeds(g, cfg)
	if err != nil {
		return nil, err
	}
	var smp sampling.Sampler
	var grid *collective.Grid
	switch cfg.Topology {
	case sampling.LayoutReplicated:
		smp, err = sampling.New(cfg.Sampler, g.Adj, cfg.Fanouts, nil)
	case sampling.Layout15D:
		if grid, err = collective.NewGrid(c, c.Size()/cfg.C, cfg.C); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
		smp, err = sampling.New(cfg.Sampler, g.Adj, cfg.Fanouts, grid)
	case sampling.Layout2D:
		if grid, err = squareGrid(c); err != nil {
			return nil, err
		}
		b := spgemm.Bounds(g.NumNodes, grid.PR)
		smp, err = sampling.NewBlock(cfg.Sampler, sampling.Layout2D, grid, b, sparse.RowRange(g.Adj, b[grid.Row], b[grid.Row+1]), cfg.Fanouts)
	}
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	src := &SampleSource{smp: smp, Seeds: seeds, Name: g.Name, N: g.NumNodes, grid: grid}
	if graph.IsPartDir(cfg.Data) && cfg.Dump != "" {
		// Dumps name the original ids, as from the parts.
		m, err := graph.ReadPartManifest(cfg.Data)
		if err != nil {
			return nil, err
		}
		all, err := graph.LoadParts(cfg.Data, m, 0, m.Parts, graph.PartReadOptions{NoFeatures: true, NoLabels: true})
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
	s := isqrt(p)
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
func samplePartsSource(c collective.Comm, cfg *SampleConfig) (*SampleSource, error) {
	p := c.Size()
	if cfg.Symmetrize {
		return nil, fmt.Errorf("sample: %s is partitioned: symmetrize when partitioning (partition --symmetrize)", cfg.Data)
	}
	m, err := graph.ReadPartManifest(cfg.Data)
	if err != nil {
		return nil, err
	}
	var rc int
	var grid *collective.Grid
	if cfg.Topology == sampling.Layout2D {
		if grid, err = squareGrid(c); err != nil {
			return nil, err
		}
		rc = grid.PC
	} else {
		if grid, err = collective.NewGrid(c, p/cfg.C, cfg.C); err != nil {
			return nil, fmt.Errorf("sample: %w", err)
		}
		rc = cfg.C
	}
	first, last, err := m.RunParts(c.Rank(), p, rc)
	if err != nil {
		return nil, err
	}
	part, err := graph.LoadParts(cfg.Data, m, first, last, graph.PartReadOptions{NoFeatures: true, NoLabels: true})
	if err := collective.Agree(c, err); err != nil {
		return nil, err
	}
	bounds := m.RunOffsets(p / rc)
	smp, err := sampling.NewBlock(cfg.Sampler, cfg.Topology, grid, bounds, part.Adj, cfg.Fanouts)
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	// The seeds: one replica of each run part contributes its own, in
	// rank order, which is ascending id order.
	var mine []int64
	if c.Rank()%rc == 0 {
		if cfg.Split == "all" {
			mine = make([]int64, part.Hi-part.Lo)
			for i := range mine {
				mine[i] = part.Lo + int64(i)
			}
		} else {
			name, _, err := m.SplitNamed(cfg.Split)
			if err != nil {
				return nil, fmt.Errorf("sample: %w", err)
			}
			s, ok := part.Splits[name]
			if !ok {
				return nil, fmt.Errorf("sample: %s has no split %q", cfg.Data, cfg.Split)
			}
			mine = s.Train
		}
	}
	seeds, _, err := collective.AllgatherSlice(c, mine)
	if err != nil {
		return nil, err
	}
	orig := func(ids []int64) ([]int64, error) { return part.AskOrigIDs(c, bounds, rc, ids) }
	return &SampleSource{smp: smp, Seeds: seeds, Name: m.Name, N: m.NumNodes, orig: orig, grid: grid}, nil
}

// sampleSeeds returns the vertices whose minibatches the benchmark
// samples: the training vertices of cfg.Split, or every vertex for "all".
func sampleSeeds(g *graph.Dataset, cfg *SampleConfig) ([]int64, error) {
	if cfg.Split == "all" {
		seeds := make([]int64, g.NumNodes)
		for v := range seeds {
			seeds[v] = int64(v)
		}
		return seeds, nil
	}
	_, sp, err := g.SplitNamed(cfg.Split)
	if err != nil {
		return nil, fmt.Errorf("sample: %s %w", cfg.Data, err)
	}
	return sp.Train, nil
}

// sampleItem is minibatch b of an epoch.
type sampleItem struct{ epoch, b int }

// sampleSchedule returns this rank's minibatches of all epochs in order,
// the epochs' shuffles of the n seeds, and the number of minibatches over
// all p ranks. Minibatch b of an epoch is a slice of the epoch's global
// shuffle of the seeds, sampled by rank b mod p with a key of (seed,
// epoch, b): the minibatches do not depend on p, c, the topology or the
// bulk.
func sampleSchedule(cfg *SampleConfig, n, p, me int) (mine []sampleItem, orders [][]int, all int) {
	orders = make([][]int, cfg.Epochs)
	for epoch := range cfg.Epochs {
		orders[epoch] = rng.New(cfg.Seed, streamSampleOrder, uint64(epoch)).Perm(n)
		total := (n + cfg.Batch - 1) / cfg.Batch
		if cfg.MaxBatches > 0 {
			total = min(total, cfg.MaxBatches)
		}
		all += total
		for b := me; b < total; b += p {
			mine = append(mine, sampleItem{epoch, b})
		}
	}
	return mine, orders, all
}

// sampleTotals are what a rank sampled: minibatches, edges of all their
// blocks, input vertices, and the time spent in Sample.
type sampleTotals struct {
	minibatches, edges, vertices int64
	seconds                      float64
}

// Run samples every rank's minibatches of all epochs, bulk at a time (a
// bulk may span epochs, as a sampler running ahead of training would),
// dumping them to cfg.Dump, and returns the final record's measurements,
// summed over the ranks (times: the slowest rank's). Every rank makes the
// same number of Sample calls (the distributed topologies' are
// collective), the last ones possibly empty.
//
// Run is collective over c, the communicator the source was built on:
// besides the sampler's traffic (phase sample) it reduces the count of
// calls (setup), then the totals, the byte counts and every rank's peak
// memory (phase report).
func (s *SampleSource) Run(c collective.Comm) (*metrics.Sample, error) {
	tot, err := s.sampleAll(c)
	if err != nil {
		return nil, err
	}
	defer collective.SetPhase(c, metrics.PhaseReport)()
	err = collective.AllreduceVars(c, collective.Sum, &tot.minibatches, &tot.edges, &tot.vertices)
	if err == nil {
		err = collective.AllreduceVars(c, collective.Max, &tot.seconds)
	}
	if err != nil {
		return nil, err
	}
	cs, err := collective.GatherComm(c)
	if err != nil {
		return nil, err
	}
	rss, _, err := collective.AllgatherSlice(c, []int64{memlimit.PeakRSS()})
	if err != nil {
		return nil, err
	}
	cfg := s.cfg
	res := &metrics.Sample{Sampler: string(cfg.Sampler), Fanouts: cfg.Fanouts, BatchSize: cfg.Batch, Bulk: cfg.Bulk,
		Topology: string(cfg.Topology), C: cfg.C, PeakRSS: rss, Minibatches: tot.minibatches, Edges: tot.edges,
		Vertices: tot.vertices, Seconds: tot.seconds, Bytes: map[string]int64{}}
	for ph, x := range cs.ByPhase {
		res.Bytes[ph] = x.TotalSent
	}
	if tot.seconds > 0 {
		res.MinibatchesPerS, res.EdgesPerS = float64(tot.minibatches)/tot.seconds, float64(tot.edges)/tot.seconds
	}
	return res, nil
}

// sampleAll samples this rank's minibatches of all epochs in order, bulk
// at a time, dumping them with cfg.Dump.
func (s *SampleSource) sampleAll(c collective.Comm) (sampleTotals, error) {
	cfg, smp, seeds := s.cfg, s.smp, s.Seeds
	p := c.Size()
	defer collective.SetPhase(c, metrics.PhaseSample)()
	mine, orders, all := sampleSchedule(cfg, len(seeds), p, c.Rank())
	restore := collective.SetPhase(c, metrics.PhaseSetup)
	mostMine, err := collective.AllreduceScalar(c, int64(len(mine)), collective.Max)
	if err != nil {
		return sampleTotals{}, err
	}
	restore()
	var tot sampleTotals
	calls := (int(mostMine) + cfg.Bulk - 1) / cfg.Bulk
	for call := range calls {
		chunk := mine[min(call*cfg.Bulk, len(mine)):min((call+1)*cfg.Bulk, len(mine))]
		batches := make([][]int64, len(chunk))
		keys := make([]uint64, len(chunk))
		for x, it := range chunk {
			order := orders[it.epoch]
			for _, k := range order[it.b*cfg.Batch : min((it.b+1)*cfg.Batch, len(order))] {
				batches[x] = append(batches[x], seeds[k])
			}
			keys[x] = rng.Mix(cfg.Seed, streamSampleKeys, uint64(it.epoch), uint64(it.b))
		}
		t0 := time.Now()
		mbs, err := smp.Sample(batches, keys)
		if err != nil {
			return sampleTotals{}, err
		}
		tot.seconds += time.Since(t0).Seconds()
		name := func(v int64) int64 { return v }
		if cfg.Dump != "" && s.orig != nil {
			if name, err = originalNames(mbs, s.orig); err != nil {
				return sampleTotals{}, err
			}
		}
		for x, m := range mbs {
			tot.minibatches++
			tot.vertices += int64(len(m.Input()))
			for _, blk := range m.Blocks {
				tot.edges += blk.Adj.NNZ()
			}
			if cfg.Dump != "" {
				it := chunk[x]
				path := filepath.Join(cfg.Dump, fmt.Sprintf("e%d-b%d.txt", it.epoch, it.b))
				if err := dumpMiniBatch(path, m, it.epoch, it.b, keys[x], cfg.Sampler, name); err != nil {
					return sampleTotals{}, err
				}
			}
		}
		if cfg.Progress != nil {
			cfg.Progress("%d of %d minibatches sampled", min(int64((call+1)*cfg.Bulk*p), int64(all)), all)
		}
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

// dumpMiniBatch writes m to path as text (sampling.MiniBatch.WriteText).
func dumpMiniBatch(path string, m *sampling.MiniBatch, epoch, batch int, key uint64, kind sampling.Kind, name func(int64) int64) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sample: %w", err)
	}
	if err := m.WriteText(f, epoch, batch, key, kind, name); err != nil {
		f.Close()
		return fmt.Errorf("sample: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sample: %s: %w", path, err)
	}
	return nil
}
