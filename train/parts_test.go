package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/internal/memlimit"
	"gnnmpi/sparse"
)

// partDir writes the test SBM partitioned into k parts (METIS) into a
// temporary directory and returns it.
func partDir(t *testing.T, k int) string {
	t.Helper()
	g := sbm()
	book, err := graph.MetisPartition(g, k, "random", 1)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "d")
	_, err = graph.WriteParts(dir, g, book, "", nil)
	require.NoError(t, err)
	return dir
}

// runParts trains on p in-process ranks from the partitioned dataset dir,
// loaded with lo (Replication set from cfg), and returns every rank's
// result.
func runParts(p int, dir string, lo LoadOptions, cfg Config) ([]*Result, error) {
	results := make([]*Result, p)
	lo.Replication = cfg.Replication
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Load(c, dir, lo)
		if err != nil {
			return err
		}
		res, err := Run(collective.WithStats(c, nil), d, cfg, Hooks{})
		results[c.Rank()] = res
		return err
	})
	return results, err
}

// curve is what a run's epochs must agree on across topologies: losses
// and accuracies (bytes and times differ).
func curve(res *Result) [][5]float64 {
	var out [][5]float64
	for _, e := range res.Epochs {
		out = append(out, [5]float64{e.Loss, e.TrainAcc, e.ValAcc, e.ValLoss, e.TestAcc})
	}
	return out
}

// A partitioned dataset trains exactly as the same dataset held whole:
// every rank holding only its part's rows with a 1.5D or 2D topology gives
// the losses and accuracies of the replicated topology, for SAGE and
// LADIES, on 1 to 4 ranks.
func TestPartitionedEqualsReplicated(t *testing.T) {
	dir := partDir(t, 12)
	type topo struct {
		top     Topology
		c, repl int
	}
	for _, kind := range []string{"sage", "ladies"} {
		for p := 1; p <= 4; p++ {
			tops := []topo{{Topology15D, 1, 1}}
			if p%2 == 0 {
				tops = append(tops, topo{Topology15D, 2, 2})
			}
			if p == 1 || p == 4 {
				tops = append(tops, topo{Topology2D, 1, isqrt(p)})
			}
			for _, tp := range tops {
				cfg := testConfig("sage")
				if kind == "ladies" {
					cfg = testConfig("gcn")
					cfg.Sampler, cfg.Fanouts = SamplerLADIES, []int{60, 60}
				}
				cfg.Epochs, cfg.Replication = 2, tp.repl
				want, err := runParts(p, dir, LoadOptions{WholeTopology: true}, cfg)
				require.NoError(t, err, "%s p=%d replicated", kind, p)
				cfg.Topology, cfg.C = tp.top, tp.c
				got, err := runParts(p, dir, LoadOptions{}, cfg)
				require.NoError(t, err, "%s p=%d %s c=%d", kind, p, tp.top, tp.c)
				for r := range p {
					require.Equal(t, curve(want[r]), curve(got[r]), "%s p=%d %s c=%d rank %d", kind, p, tp.top, tp.c, r)
				}
			}
		}
	}
}

// GCN's normalisation reads the degrees of sampled vertices that other
// parts hold: fetched, they give the replicated run's curve.
func TestPartitionedGCNDegrees(t *testing.T) {
	dir := partDir(t, 4)
	cfg := testConfig("gcn")
	cfg.Epochs = 2
	want, err := runParts(4, dir, LoadOptions{WholeTopology: true}, cfg)
	require.NoError(t, err)
	cfg.Topology = Topology15D
	got, err := runParts(4, dir, LoadOptions{}, cfg)
	require.NoError(t, err)
	require.Equal(t, curve(want[0]), curve(got[0]))
	require.Positive(t, got[0].Epochs[1].ValAcc)
}

// On the partitioned path a rank holds its part's rows: its topology and
// feature bytes follow its share of the graph, not the graph.
func TestPartitionedBytes(t *testing.T) {
	const p = 4
	dir := partDir(t, p)
	g := sbm()
	whole := csrBytes(g.Adj)
	f := int64(g.Feat.Cols)
	cfg := testConfig("sage")
	cfg.Epochs, cfg.Topology, cfg.C = 1, Topology15D, 1
	var mu sync.Mutex
	rows := make([]int64, p)
	nnz := make([]int64, p)
	var results []*Result
	results = make([]*Result, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Load(c, dir, LoadOptions{})
		if err != nil {
			return err
		}
		assert.Nil(t, d.Book.Part, "the book holds offsets only")
		assert.Len(t, d.Labels, int(d.RowHi-d.RowLo))
		for _, v := range d.Split.Train {
			assert.True(t, v >= d.RowLo && v < d.RowHi, "split members are the rank's rows")
		}
		mu.Lock()
		rows[c.Rank()], nnz[c.Rank()] = d.RowHi-d.RowLo, d.Adj.NNZ()
		mu.Unlock()
		res, err := Run(collective.WithStats(c, nil), d, cfg, Hooks{})
		results[c.Rank()] = res
		return err
	})
	require.NoError(t, err)
	mem := results[0].Memory
	var total int64
	for r := range p {
		require.Less(t, rows[r], g.NumNodes/2, "rank %d holds a part, not the graph", r)
		// The rank's adjacency rows, counted once though the sampler
		// shares them.
		assert.Equal(t, (rows[r]+1)*8+nnz[r]*8, mem[MemTopology][r], "rank %d topology", r)
		assert.Less(t, mem[MemTopology][r], whole*2/5, "rank %d topology against the whole graph's %d bytes", r, whole)
		// Own rows: f float32 and an index entry each (no cache here).
		assert.Equal(t, rows[r]*(4*f+8+4), mem[MemFeatures][r], "rank %d features", r)
		assert.Zero(t, mem[MemCache][r])
		total += mem[MemTopology][r]
	}
	assert.Equal(t, whole+int64(p-1)*8, total, "the parts' topology adds up to the graph's (plus one row offset per extra part)")
}

// A rank count the parts cannot be spread over, or a part too large for
// the memory a rank may allocate, fails every rank with an error that
// names the directory.
func TestPartitionedLoadErrors(t *testing.T) {
	dir := partDir(t, 4)
	errs := make([]error, 3)
	_ = inproc.Run(3, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		_, errs[c.Rank()] = Load(c, dir, LoadOptions{})
		return errs[c.Rank()]
	})
	for r, err := range errs {
		require.Error(t, err, "rank %d", r)
		require.ErrorContains(t, err, "manifest.json")
	}
	cfg := testConfig("sage")
	cfg.Shuffle, cfg.Topology = ShuffleGlobal, Topology15D
	_, err := runParts(2, dir, LoadOptions{}, cfg)
	requireSettings(t, err, "use Shuffle local", SettingShuffle, SettingShuffle)

	defer func(f func() memlimit.Budget) { available = f }(available)
	available = func() memlimit.Budget { return memlimit.Budget{Bytes: 1 << 10, Source: "test limit"} }
	errs = make([]error, 2)
	_ = inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		_, errs[c.Rank()] = Load(c, dir, LoadOptions{})
		return errs[c.Rank()]
	})
	for r, err := range errs {
		require.ErrorContains(t, err, "out of memory", "rank %d", r)
		require.ErrorContains(t, err, dir)
		require.ErrorContains(t, err, "test limit")
	}

	// Loading fits, training's footprint (store, inference outputs) does
	// not: checked before the store allocates, on every rank.
	var calls atomic.Int64
	available = func() memlimit.Budget {
		if calls.Add(1) <= 2 { // the two ranks' loads
			return memlimit.Budget{Bytes: 1 << 40, Source: "load limit"}
		}
		return memlimit.Budget{Bytes: 1 << 10, Source: "train limit"}
	}
	cfg = testConfig("sage")
	cfg.Topology = Topology15D
	_, err = runParts(2, dir, LoadOptions{}, cfg)
	require.ErrorContains(t, err, "out of memory: training needs")
	require.ErrorContains(t, err, "feature store")
	require.ErrorContains(t, err, "train limit")
	require.NotContains(t, err.Error(), "mapped host tier")

	// On a GPU the tiers' mapped copy of the resident rows counts too
	// (checked before the device opens: no GPU library is needed).
	calls.Store(0)
	cfg.Device, cfg.GPUFrac = DeviceCUDA, 0.25
	_, err = runParts(2, dir, LoadOptions{}, cfg)
	require.ErrorContains(t, err, "mapped host tier")
}

// A damaged part file fails every rank, the error naming the file.
func TestPartitionedDamagedPart(t *testing.T) {
	src := partDir(t, 2)
	dir := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, name := range []string{"manifest.json", graph.PartFileName(0), graph.PartFileName(1)} {
		b, err := os.ReadFile(filepath.Join(src, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	part := filepath.Join(dir, graph.PartFileName(1))
	st, err := os.Stat(part)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(part, st.Size()/2))
	errs := make([]error, 2)
	_ = inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := Load(c, dir, LoadOptions{})
		if err == nil {
			_, err = Run(c, d, testConfig("sage"), Hooks{})
		}
		errs[c.Rank()] = err
		return err
	})
	require.ErrorContains(t, errs[1], graph.PartFileName(1))
	require.Error(t, errs[0], "the rank whose part is intact fails too")
}

// The cache scores run from the parts too: VIP over the distributed
// topology (the vertices a rank's training vertices reach) picks the same
// cache as on the dataset held whole, so the runs serve the same rows from
// it; the in-degree, summed over the ranks' rows, scores only the rank's
// halo (the candidates a rank can know without the whole graph), so its
// cache differs. Either way the curve is the same and the cache holds its
// α·n/K rows.
func TestPartitionedCache(t *testing.T) {
	const p = 4
	dir := partDir(t, p)
	n := sbm().NumNodes
	for _, pol := range []string{"vip", "degree"} {
		cfg := testConfig("sage")
		cfg.Epochs, cfg.CacheFrac = 1, 0.5
		var err error
		cfg.Cache, err = ParseCache(pol)
		require.NoError(t, err)
		want, err := runParts(p, dir, LoadOptions{WholeTopology: true}, cfg)
		require.NoError(t, err)
		cfg.Topology = Topology15D
		got, err := runParts(p, dir, LoadOptions{}, cfg)
		require.NoError(t, err, pol)
		require.Equal(t, curve(want[0]), curve(got[0]), pol)
		if pol == "vip" {
			require.Equal(t, want[0].Epochs[0].CacheHits, got[0].Epochs[0].CacheHits, "the same cache")
		}
		require.Positive(t, got[0].Epochs[0].CacheHits, pol)
		rows := int64(cacheRows(cfg.CacheFrac, n, p))
		for r := range p {
			require.Equal(t, rows, got[0].Stores[r].CachedRows, "%s rank %d", pol, r)
			require.LessOrEqual(t, got[0].Memory[MemCache][r], rows*(int64(sbm().Feat.Cols)*4+20), "%s rank %d cache bytes", pol, r)
		}
	}
}

// The fraction of edges with a reverse is computed over the ranks' rows
// (dist.Reciprocity) and equals the whole graph's, with and without
// feature replication.
func TestPartitionedReciprocity(t *testing.T) {
	g := *sbm()
	// Drop every third stored edge: a graph with some reverses missing.
	a := g.Adj
	di := &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: make([]int64, a.NRows+1)}
	for i := range a.NRows {
		for k, j := range a.Row(i) {
			if (int(i)+k)%3 != 0 {
				di.Indices = append(di.Indices, j)
			}
		}
		di.Indptr[i+1] = int64(len(di.Indices))
	}
	g.Adj = di
	found, edges := graph.Reciprocity(di)
	want := float64(found) / float64(edges)
	require.Less(t, want, 0.9)
	book, err := graph.MetisPartition(&g, 4, "random", 1)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "d")
	_, err = graph.WriteParts(dir, &g, book, "", nil)
	require.NoError(t, err)
	for _, pc := range [][2]int{{2, 1}, {4, 1}, {4, 2}} {
		got := make([]float64, pc[0])
		err := inproc.Run(pc[0], inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			d, err := Load(c, dir, LoadOptions{Replication: pc[1]})
			if err == nil {
				got[c.Rank()] = d.Reciprocity
			}
			return err
		})
		require.NoError(t, err)
		for r := range pc[0] {
			require.InDelta(t, want, got[r], 1e-12, "p=%d c=%d rank %d", pc[0], pc[1], r)
		}
	}
}

// A manifest whose split sizes differ from the members its part files
// hold (here one training vertex too many, or one test vertex too few)
// fails every rank, naming the manifest, the split and both counts; with
// feature replication each run part is counted once.
func TestPartitionedSplitSizesChecked(t *testing.T) {
	src := partDir(t, 2)
	m, err := graph.ReadPartManifest(src)
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		p, rc       int
		edit        func(*graph.SplitSizes)
		what        string
		stated, has int64
	}{
		{"train+1", 2, 1, func(s *graph.SplitSizes) { s.Train++ }, "training", m.Splits[0].Train + 1, m.Splits[0].Train},
		{"test-1/replicated", 2, 2, func(s *graph.SplitSizes) { s.Test-- }, "test", m.Splits[0].Test - 1, m.Splits[0].Test},
		{"intact/replicated", 4, 2, func(*graph.SplitSizes) {}, "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "d")
			require.NoError(t, os.MkdirAll(dir, 0o755))
			for _, name := range []string{graph.PartFileName(0), graph.PartFileName(1)} {
				b, err := os.ReadFile(filepath.Join(src, name))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
			}
			var raw map[string]any
			b, err := os.ReadFile(filepath.Join(src, graph.PartManifestName))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &raw))
			edited := *m
			edited.Splits = slices.Clone(m.Splits)
			tc.edit(&edited.Splits[0])
			raw["splits"] = edited.Splits
			b, err = json.Marshal(raw)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, graph.PartManifestName), b, 0o644))

			errs := make([]error, tc.p)
			_ = inproc.Run(tc.p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				_, errs[c.Rank()] = Load(c, dir, LoadOptions{Replication: tc.rc})
				return errs[c.Rank()]
			})
			for r, err := range errs {
				if tc.what == "" {
					require.NoError(t, err, "rank %d", r)
					continue
				}
				require.EqualError(t, err, fmt.Sprintf("train: %s: split %q has %d %s vertices, but its part files hold %d: the manifest does not describe these parts",
					filepath.Join(dir, graph.PartManifestName), m.Splits[0].Name, tc.stated, tc.what, tc.has), "rank %d", r)
			}
		})
	}
}

// TestPartitionBookMetisMemory checks that METIS on rank 0 beyond what the
// rank may allocate fails every rank before METIS runs, rank 0 naming the
// need, the limit and what to do instead, the others pointing at rank 0;
// and that with room it partitions, the need logged on rank 0.
func TestPartitionBookMetisMemory(t *testing.T) {
	g := sbm()
	split, _, _ := g.DefaultSplit()
	defer func(f func() memlimit.Budget) { available = f }(available)
	run := func(limit int64) ([]error, []string) {
		available = func() memlimit.Budget { return memlimit.Budget{Bytes: limit, Source: "test limit"} }
		errs := make([]error, 2)
		var logged []string
		_ = inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			log := func(f string, a ...any) {
				if c.Rank() == 0 {
					logged = append(logged, fmt.Sprintf(f, a...))
				}
			}
			b, err := partitionBook(c, g, split, LoadOptions{}, 2, log)
			if err == nil && b.NumNodes() != g.NumNodes {
				err = fmt.Errorf("book of %d vertices", b.NumNodes())
			}
			errs[c.Rank()] = err
			return err
		})
		return errs, logged
	}
	errs, logged := run(1 << 10)
	require.ErrorContains(t, errs[0], "rank 0: out of memory: METIS partitioning of the whole graph needs about")
	require.ErrorContains(t, errs[0], "test limit")
	require.ErrorContains(t, errs[0], "--partition block or random")
	require.ErrorIs(t, errs[1], collective.ErrAborted)
	require.ErrorContains(t, errs[1], "rank 0 failed")
	require.Len(t, logged, 2) // the progress line, then the check's
	require.Contains(t, logged[1], "memory check: rank 0: METIS needs about")

	errs, logged = run(1 << 40)
	require.NoError(t, errors.Join(errs...))
	require.Contains(t, logged[1], "memory check: rank 0: METIS needs about")
}
