package train

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// distributeRows returns what rank k's run part of a partitioned dataset
// holds: g's vertices already numbered so that the parts of the contiguous
// book are the ranges of offsets, the rank keeps only part k's adjacency
// rows, labels, split members and feature rows.
func distributeRows(g *graph.Dataset, split string, parts, k int) (*Data, error) {
	book := partition.Block(g.NumNodes, parts)
	d, err := Distribute(g, split, book, k)
	if err != nil {
		return nil, err
	}
	d.Offsets = make([]int64, parts+1)
	for q, n := range book.Sizes() {
		d.Offsets[q+1] = d.Offsets[q] + n
	}
	lo, hi := d.Offsets[k], d.Offsets[k+1]
	rows := make([]int64, hi-lo)
	for i := range rows {
		rows[i] = lo + int64(i)
	}
	own := func(ids []int64) []int64 {
		return slices.DeleteFunc(slices.Clone(ids), func(v int64) bool { return v < lo || v >= hi })
	}
	d.RowLo, d.RowHi, d.Book = lo, hi, nil
	d.Adj = sparse.SelectRows(g.Adj, rows)
	d.Labels = slices.Clone(g.Labels[lo:hi])
	d.Split = graph.Split{Train: own(d.Split.Train), Valid: own(d.Split.Valid), Test: own(d.Split.Test)}
	return d, nil
}

// runFullData trains cfg on p in-process ranks, rank r on data(r, stages),
// and returns every rank's result and error, and the job's.
func runFullData(t *testing.T, p int, cfg FullConfig, h Hooks, data func(r, stages int) (*Data, error)) ([]*FullResult, []error, error) {
	t.Helper()
	stages, err := FullStages(cfg, p)
	require.NoError(t, err)
	results, errs := make([]*FullResult, p), make([]error, p)
	err = inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		d, err := data(c.Rank(), stages)
		if err != nil {
			return err
		}
		results[c.Rank()], errs[c.Rank()] = RunFull(collective.WithStats(c, nil), d, cfg, h)
		return errs[c.Rank()]
	})
	return results, errs, err
}

// replicatedBlock is rank r's replicated data under the contiguous book.
func replicatedBlock(p int) func(r, stages int) (*Data, error) {
	return func(r, stages int) (*Data, error) {
		return Distribute(sbm(), "random", partition.Block(sbm().NumNodes, p/stages), r/stages)
	}
}

// ownRows is rank r's partitioned data: its part's rows only.
func ownRows(p int) func(r, stages int) (*Data, error) {
	return func(r, stages int) (*Data, error) { return distributeRows(sbm(), "random", p/stages, r/stages) }
}

// Full-graph training from each rank's own rows (a partitioned dataset)
// gives exactly the curve, evaluations, bytes and trainer state of the
// replicated topology under the same (contiguous) book, in every mode, on
// 1 to 4 ranks, with chunks from METIS on each part's own subgraph or
// random.
func TestRunFullFromOwnRowsEqualsReplicated(t *testing.T) {
	type tc struct {
		mode     Mode
		p, pipes int
		method   ChunkMethod
	}
	var cases []tc
	for p := 1; p <= 4; p++ {
		cases = append(cases, tc{ModeGraph, p, 0, ChunkMetis}, tc{ModePipe, p, 0, ChunkMetis})
	}
	cases = append(cases, tc{ModeHybrid, 2, 2, ChunkMetis}, tc{ModeHybrid, 4, 2, ChunkMetis}, tc{ModeHybrid, 4, 2, ChunkRandom}, tc{ModePipe, 3, 0, ChunkRandom})
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s_p%d_%s", tc.mode, tc.p, tc.method), func(t *testing.T) {
			cfg := fullConfig(tc.mode)
			cfg.Pipelines, cfg.ChunkMethod = tc.pipes, tc.method
			want, _, err := runFullData(t, tc.p, cfg, Hooks{}, replicatedBlock(tc.p))
			require.NoError(t, err)
			got, _, err := runFullData(t, tc.p, cfg, Hooks{}, ownRows(tc.p))
			require.NoError(t, err)
			for r := range tc.p {
				require.Equal(t, want[r].Epochs, withoutTimes(got[r].Epochs, want[r].Epochs), "rank %d", r)
				assert.Equal(t, want[r].Analytical, got[r].Analytical)
				assert.Equal(t, want[r].HaloRows, got[r].HaloRows)
				assert.Equal(t, want[r].StateBytes, got[r].StateBytes, "the trainers hold the same")
				assert.Equal(t, want[r].TestAcc, got[r].TestAcc)
			}
			for _, ph := range fullCommPhases {
				assert.Equal(t, got[0].Analytical[ph], got[0].BytesPerEpoch[ph], ph)
			}
		})
	}
}

// partChunks, from a part's own rows, gives the part what graph.SubPartition
// gives it on the whole graph, with METIS and random.
func TestPartChunksEqualSubPartition(t *testing.T) {
	g := sbm()
	for _, method := range []ChunkMethod{ChunkMetis, ChunkRandom} {
		for _, parts := range []int{1, 3} {
			cfg := fullConfig(ModePipe)
			cfg.Chunks, cfg.ChunkMethod = 4, method
			want, err := graph.SubPartition(g.Adj, partition.Block(g.NumNodes, parts), 4, partition.Method(method), int(cfg.Seed))
			require.NoError(t, err)
			for k := range parts {
				d, err := distributeRows(g, "random", parts, k)
				require.NoError(t, err)
				got, err := partChunks(d, k, cfg)
				require.NoError(t, err)
				require.Equal(t, want[d.RowLo:d.RowHi], got, "%s, part %d of %d", method, k, parts)
			}
		}
	}
	d, err := distributeRows(g, "random", 200, 3)
	require.NoError(t, err)
	cfg := fullConfig(ModePipe)
	cfg.Chunks = 4
	_, err = partChunks(d, 3, cfg)
	assert.ErrorContains(t, err, "part 3 has 3 vertices, fewer than 4 chunks")
}

// A run from own rows resumes from its checkpoint on the same curve, and
// its fingerprint is that of the offsets: a checkpoint of the replicated
// topology does not resume it.
func TestFullResumeFromOwnRows(t *testing.T) {
	cfg := fullConfig(ModeHybrid)
	cfg.Pipelines, cfg.Epochs, cfg.EvalEvery = 2, 4, 2
	want, _, err := runFullData(t, 4, cfg, Hooks{}, ownRows(4))
	require.NoError(t, err)
	cfg.CheckpointDir, cfg.CheckpointEvery = t.TempDir(), 1
	_, _, err = runFullData(t, 4, cfg, killedAfter(2), ownRows(4))
	require.ErrorIs(t, err, errKilled)
	requireCheckpointFiles(t, cfg.CheckpointDir, 4, 2)
	cfg.Resume = true
	res, _, err := runFullData(t, 4, cfg, Hooks{}, ownRows(4))
	require.NoError(t, err)
	for r, got := range res {
		require.Equal(t, want[0].Epochs, withoutTimes(got.Epochs, want[0].Epochs), "rank %d", r)
	}
	_, errs, err := runFullData(t, 4, cfg, Hooks{}, replicatedBlock(4))
	require.Error(t, err)
	for r, err := range errs {
		require.ErrorContains(t, err, "Book: checkpoint", "rank %d", r)
	}
}

// Rows that are not the rank's part, or a split member outside them, are
// an error on every rank.
func TestRunFullFromOwnRowsErrors(t *testing.T) {
	cfg := fullConfig(ModeGraph)
	for _, tc := range []struct {
		edit func(r int, d *Data)
		want string
	}{
		{func(r int, d *Data) {
			if r == 1 {
				d.RowLo++
			}
		}, "this rank holds rows"},
		{func(r int, d *Data) {
			if r == 0 {
				d.Split.Train = append(d.Split.Train, d.RowHi)
			}
		}, "outside the rank's rows"},
		{func(r int, d *Data) { d.Offsets = d.Offsets[:2] }, "the data has 1 parts"},
	} {
		_, errs, err := runFullData(t, 2, cfg, Hooks{}, func(r, stages int) (*Data, error) {
			d, err := ownRows(2)(r, stages)
			if err == nil {
				tc.edit(r, d)
			}
			return d, err
		})
		require.Error(t, err)
		for r, err := range errs {
			require.Error(t, err, "rank %d", r)
		}
		assert.ErrorContains(t, err, tc.want)
	}
}
