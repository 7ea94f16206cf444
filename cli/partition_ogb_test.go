package cli

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/graph"
	"gnnmpi/partition/dist"
	"gnnmpi/partition/distpart"
	"gnnmpi/sparse"
)

// ogbInput is a dataset written both in OGB's binary layout (stored and
// deflated) and as the binary .gnn files that the layout's ingest must
// match: of its deduplicated rows, and of its symmetrized rows.
type ogbInput struct {
	stored, deflated, gnn, gnnSym string
}

// ogbInputs writes Cora (symmetric) and an SBM graph made directed, with
// repeated edges in file order, unsorted, and some vertices unlabelled.
func ogbInputs(t *testing.T) map[string]ogbInput {
	t.Helper()
	dir := t.TempDir()
	cora, err := graph.Load(filepath.Join("..", "data", "cora"), graph.ReadOptions{FeatureFormat: graph.FeatureDense})
	require.NoError(t, err)
	sbm, err := graph.SBM(graph.DefaultSBM(400))
	require.NoError(t, err)
	var r, c []int64
	for i := range sbm.Adj.NRows {
		row := sbm.Adj.Row(i)
		for k := len(row) - 1; k >= 0; k-- { // descending: unsorted rows
			j := row[k]
			if (i+j+int64(k))%3 == 0 {
				continue
			}
			r, c = append(r, i), append(c, j)
			if j%7 == 0 {
				r, c = append(r, i), append(c, j)
			}
		}
	}
	sbm.Adj, err = sparse.FromCOO(sbm.NumNodes, sbm.NumNodes, r, c, nil)
	require.NoError(t, err)
	sbm.Symmetric = false
	out := map[string]ogbInput{}
	for name, d := range map[string]*graph.Dataset{"cora": cora, "sbm": sbm} {
		d.Name = name // the base name of the layout's directory
		in := ogbInput{stored: filepath.Join(dir, "stored", name), deflated: filepath.Join(dir, "deflated", name),
			gnn: filepath.Join(dir, name+".gnn"), gnnSym: filepath.Join(dir, name+"-sym.gnn")}
		require.NoError(t, graph.WriteOGBBinary(in.stored, d, false))
		require.NoError(t, graph.WriteOGBBinary(in.deflated, d, true))
		dd := *d
		dd.Adj = graph.Dedupe(d.Adj)
		require.NoError(t, graph.WriteBinary(in.gnn, &dd))
		require.NoError(t, graph.WriteBinary(in.gnnSym, d.Symmetrized()))
		out[name] = in
	}
	return out
}

// TestPartitionOGBDistributed partitions OGB's binary layout with
// --method block on 1, 2 and 4 in-process ranks, each reading 1/p of the
// edges and its rows' features, labels and split members, and requires
// the partitioned dataset and book of the .gnn of the same graph
// (deduplicated, or symmetrized with --symmetrize), part files byte for
// byte, from stored and deflated archives.
func TestPartitionOGBDistributed(t *testing.T) {
	for name, in := range ogbInputs(t) {
		for _, tc := range []struct {
			p, k int
			sym  bool
		}{{1, 3, false}, {2, 2, true}, {2, 5, false}, {4, 4, false}, {4, 3, true}} {
			for _, npz := range []string{in.stored, in.deflated} {
				t.Run(fmt.Sprintf("%s/%s/p=%d/k=%d/sym=%v", name, filepath.Base(filepath.Dir(npz)), tc.p, tc.k, tc.sym), func(t *testing.T) {
					dir := t.TempDir()
					gnn, args := in.gnn, []string{}
					if tc.sym {
						gnn, args = in.gnnSym, []string{"--symmetrize"}
					}
					run := func(data, out string) string {
						_, se, err := runCmdErr(t, tc.p, "partition", append([]string{"--method", "block", "--parts", fmt.Sprint(tc.k), "--data", data,
							"--out", out, "--book", out + ".book"}, args...)...)
						require.NoError(t, err)
						return se
					}
					se := run(npz, filepath.Join(dir, "npz"))
					assert.Contains(t, se, "partition: rank 0 holds rows [0,", "the distributed path ran")
					run(gnn, filepath.Join(dir, "gnn"))
					assertSameParts(t, filepath.Join(dir, "npz"), filepath.Join(dir, "gnn"))
				})
			}
		}
	}
}

// TestOpenOGBMemory requires that the ranks of a 16-rank job opening a
// graph in OGB's binary layout allocate, on average, under a quarter
// of the whole edge array (16 bytes an edge) each, stored or deflated.
// TotalAlloc counts the whole process, so all ranks' allocations are
// summed and divided by p. Per rank: its edges to send (16 bytes each),
// those it receives (16), its rows' CSR (8 an edge, 16 a row), its rows'
// labels (4) and features (4F), and at most 4 MiB of chunk buffers and
// decompressor state.
func TestOpenOGBMemory(t *testing.T) {
	const n, m, dim, p = 20000, 4_000_000, 4, 16
	rng := rand.New(rand.NewPCG(5, 5))
	src, dst := make([]int64, m), make([]int64, m)
	for e := range int64(m) {
		src[e], dst[e] = rng.Int64N(n), rng.Int64N(n)
	}
	adj, err := sparse.FromCOO(n, n, src, dst, nil)
	require.NoError(t, err)
	labels := make([]int32, n)
	for g := range labels {
		labels[g] = int32(g % 3)
	}
	g := &graph.Dataset{NumNodes: n, Adj: adj, Feat: dense.New(n, dim), Labels: labels, NumClasses: 3}
	src, dst = nil, nil
	perRank := int64(16*m/p + 16*m/p + 8*m/p + (16+4+4*dim)*n/p + 4<<20)
	require.Less(t, perRank, int64(16*m/4), "the bound is far below the edge array")
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("compress=", compress), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "g")
			require.NoError(t, graph.WriteOGBBinary(dir, g, compress))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := inproc.Run(p, inproc.Options{}, func(c collective.Comm) error {
				o, err := distpart.OpenOGB(c, dir, false)
				if err != nil {
					return err
				}
				defer o.Close()
				lo, hi := dist.BlockRange(n, p, c.Rank())
				_, err = o.Features(lo, hi)
				return err
			})
			runtime.ReadMemStats(&after)
			require.NoError(t, err)
			mean := int64(after.TotalAlloc-before.TotalAlloc) / p
			t.Logf("%d edges, %d ranks: %d bytes allocated a rank on average; bound %d; edge_index %d", m, p, mean, perRank, 16*m)
			assert.Less(t, mean, perRank)
		})
	}
}
