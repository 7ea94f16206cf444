package pipe

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// blockInputs returns the contiguous (block) book of g into parts, every
// vertex's chunk (method, seed 1) and the book's offsets.
func blockInputs(t *testing.T, g *graph.Dataset, parts, chunks int, method partition.Method) (*partition.Book, []int32, []int64) {
	t.Helper()
	book := partition.Block(g.NumNodes, parts)
	chunk, err := graph.SubPartition(g.Adj, book, chunks, method, 1)
	require.NoError(t, err)
	offsets := make([]int64, parts+1)
	for q, n := range book.Sizes() {
		offsets[q+1] = offsets[q] + n
	}
	return book, chunk, offsets
}

// blockPlan builds rank c's PartPlan from its part's rows only: the rows
// [offsets[k], offsets[k+1]) of g and their chunks.
func blockPlan(c collective.Comm, g *graph.Dataset, lay Layout, offsets []int64, chunk []int32, chunks int) (*PartPlan, error) {
	k := lay.Pipeline(c.Rank())
	lo, hi := offsets[k], offsets[k+1]
	rows := make([]int64, hi-lo)
	for i := range rows {
		rows[i] = lo + int64(i)
	}
	local := sparse.SelectRows(g.Adj, rows)
	return NewBlockPlan(c, lay, offsets, local, chunk[lo:hi], chunks)
}

// A part's plan built from its own rows (NewBlockPlan, collective) equals
// the one derived from the replicated plan of the whole graph: the same
// blocks (sources, columns, degrees), served rows and halo totals.
func TestBlockPlanEqualsPartPlan(t *testing.T) {
	g := sbm()
	for _, parts := range []int{1, 2, 3, 4} {
		for _, chunks := range []int{1, 3} {
			for _, stages := range []int{1, 2} {
				t.Run(fmt.Sprintf("P%d_N%d_S%d", parts, chunks, stages), func(t *testing.T) {
					lay := Layout{Stages: stages, Pipelines: parts}
					book, chunk, offsets := blockInputs(t, g, parts, chunks, "metis")
					plan, err := NewPlan(g.Adj, book.Part, chunk, parts, chunks)
					require.NoError(t, err)
					got := make([]*PartPlan, lay.Ranks())
					require.NoError(t, inproc.Run(lay.Ranks(), inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
						pp, err := blockPlan(c, g, lay, offsets, chunk, chunks)
						got[c.Rank()] = pp
						return err
					}))
					for r, pp := range got {
						assert.Equal(t, plan.PartPlan(lay.Pipeline(r)), pp, "rank %d", r)
					}
				})
			}
		}
	}
}

// Training on block plans is bit-identical to training on the replicated
// plan, bytes included, in every mode.
func TestBlockPlanTrainsLikeReplicated(t *testing.T) {
	g := sbm()
	for _, kind := range []model.Kind{model.ConvGCN, model.ConvSAGE, model.ConvGCNII} {
		for _, tc := range []struct {
			lay    Layout
			chunks int
		}{{Layout{1, 4}, 1}, {Layout{4, 1}, 3}, {Layout{2, 2}, 2}, {Layout{1, 3}, 2}} {
			t.Run(fmt.Sprintf("%s_S%d_P%d_N%d", kind, tc.lay.Stages, tc.lay.Pipelines, tc.chunks), func(t *testing.T) {
				P := tc.lay.Pipelines
				book, chunk, offsets := blockInputs(t, g, P, tc.chunks, "random")
				plan, err := NewPlan(g.Adj, book.Part, chunk, P, tc.chunks)
				require.NoError(t, err)
				cfg := testConfig(kind, tc.lay)
				want := runPipe(t, cfg, plan, 3)
				got := runPipeComm(t, cfg, 3, func(c collective.Comm) (Data, error) {
					pp, err := blockPlan(c, g, tc.lay, offsets, chunk, tc.chunks)
					if err != nil {
						return Data{}, err
					}
					return partData(pp, g.Splits["random"]), nil
				})
				require.Equal(t, want, got)
				vol := Analytical(plan.PartPlan(0), tc.lay, cfg.Model)
				for _, ph := range TrainPhases() {
					assert.Equal(t, vol.Train[ph], got.bytes[ph], ph)
				}
				assert.Equal(t, vol.Eval, got.bytes[metrics.PhaseEval])
			})
		}
	}
}

// What a rank's block plan holds is O(part rows + part edges + halo): on a
// sparse graph, cut into few enough parts, every array is shorter than the
// graph, and the plan's bytes
// fall with the number of parts.
func TestBlockPlanHoldsNoGraphSizedArray(t *testing.T) {
	p := graph.DefaultSBM(4000)
	p.AvgDegree = 1.5
	g, err := graph.SBM(p)
	require.NoError(t, err)
	n := g.NumNodes
	var whole int64
	for _, parts := range []int{1, 4} {
		lay := Layout{Stages: 1, Pipelines: parts}
		_, chunk, offsets := blockInputs(t, g, parts, 2, "metis")
		got := make([]*PartPlan, parts)
		require.NoError(t, inproc.Run(parts, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			pp, err := blockPlan(c, g, lay, offsets, chunk, 2)
			got[c.Rank()] = pp
			return err
		}))
		for k, pp := range got {
			rows := offsets[k+1] - offsets[k]
			nnz := g.Adj.Indptr[offsets[k+1]] - g.Adj.Indptr[offsets[k]]
			// Rows, columns and degrees are bounded by the part's rows
			// plus the whole part's remote sources (a superset of every
			// chunk's), indices by the part's edges.
			halo := int64(pp.whole.RemoteRows())
			bound := max(rows+1+halo, nnz)
			if parts > 1 {
				require.Less(t, bound, n, "the bound is below n for the check to mean anything")
			}
			lens := []int{len(pp.Gids)}
			for _, b := range append(pp.chunks, pp.whole) {
				lens = append(lens, len(b.Gids), len(b.Dst), len(b.Local), len(b.A.Indptr), len(b.A.Indices), len(b.deg), len(b.Remote))
				for _, r := range b.Remote {
					lens = append(lens, len(r))
				}
			}
			for _, s := range [][][][]int32{pp.served, pp.servedWhole} {
				lens = append(lens, len(s))
				for _, q := range s {
					for _, ids := range q {
						lens = append(lens, len(ids))
					}
				}
			}
			for _, l := range lens {
				assert.LessOrEqual(t, int64(l), bound, "part %d of %d", k, parts)
			}
			if parts == 1 {
				whole = pp.Bytes()
			} else {
				assert.Less(t, pp.Bytes(), whole/2, "part %d of %d", k, parts)
			}
		}
	}
}

// Inconsistent inputs are an error on every rank, not a hang.
func TestBlockPlanErrors(t *testing.T) {
	g := sbm()
	lay := Layout{Stages: 1, Pipelines: 2}
	_, chunk, offsets := blockInputs(t, g, 2, 2, "random")
	for _, tc := range []struct {
		name string
		edit func(r int, offsets []int64, chunk []int32) ([]int64, []int32)
		want string
	}{
		{"offsets", func(r int, o []int64, c []int32) ([]int64, []int32) { o[0] = 1; return o, c }, "part offsets"},
		{"chunk", func(r int, o []int64, c []int32) ([]int64, []int32) {
			if r == 1 {
				c[o[1]] = 7
			}
			return o, c
		}, "chunk 7"},
		{"empty chunk", func(r int, o []int64, c []int32) ([]int64, []int32) {
			if r == 0 {
				clear(c[:o[1]])
			}
			return o, c
		}, "chunk 1 is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, 2)
			_ = inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				o, ch := tc.edit(c.Rank(), append([]int64(nil), offsets...), append([]int32(nil), chunk...))
				_, errs[c.Rank()] = blockPlan(c, g, lay, o, ch, 2)
				return errs[c.Rank()]
			})
			for r, err := range errs {
				require.Error(t, err, "rank %d", r)
			}
			assert.True(t, slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), tc.want) }), "%v", errs)
		})
	}
}
