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
// graph in OGB's binary layout, in rounds of 16384 edges, allocate on
// average no more than what the rows they keep need plus bounded
// buffers, stored or deflated, far below the whole edge array (16 bytes
// an edge). TotalAlloc counts the whole process, so all ranks'
// allocations are summed and divided by p. Per rank: its rows' CSR (8
// bytes an edge, 24 a row with the builder's cursor), labels (4 a row)
// and features (4F), a round's pairs, rows and received pairs (16 + 8 +
// 16 bytes an edge of the round, the received ones up to twice a round
// where the rows' owners are uneven), and at most 2 MiB of chunk buffers
// and decompressor state. A deflated edge_index adds the decompressor's
// per-block Huffman tables, garbage that TotalAlloc counts: allowed 2
// bytes an edge, 1/16 of the 32 bytes an edge that a rank decompresses on
// average in the two passes (each streams the sources up to the rank's
// slice, and the destinations past all the sources).
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
	const round = 1 << 14
	perRank := int64(8*m/p + (24+4+4*dim)*n/p + (16+8+2*16)*round + 2<<20)
	require.Less(t, perRank, int64(16*m/8), "the bound is far below the edge array")
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("compress=", compress), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "g")
			require.NoError(t, graph.WriteOGBBinary(dir, g, compress))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := inproc.Run(p, inproc.Options{}, func(c collective.Comm) error {
				o, err := distpart.OpenOGB(c, dir, distpart.OGBOptions{RoundEdges: round})
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
			bound := perRank
			if compress {
				bound += 2 * m
			}
			t.Logf("%d edges, %d ranks: %d bytes allocated a rank on average; bound %d; edge_index %d", m, p, mean, bound, 16*m)
			assert.Less(t, mean, bound)
		})
	}
}

// TestOpenOGBRounds requires the same rows from OpenOGB in rounds of 1,
// 7 and 1000 edges a rank, with and without symmetrizing, as the .gnn of
// the same graph holds: rounds cut the slices anywhere, and ranks whose
// slices end early make empty rounds.
func TestOpenOGBRounds(t *testing.T) {
	in := ogbInputs(t)["sbm"]
	for _, sym := range []bool{false, true} {
		gnn := in.gnn
		if sym {
			gnn = in.gnnSym
		}
		for _, round := range []int64{1, 7, 1000} {
			for _, npz := range []string{in.stored, in.deflated} {
				t.Run(fmt.Sprintf("sym=%v/round=%d/%s", sym, round, filepath.Base(filepath.Dir(npz))), func(t *testing.T) {
					const p = 3
					err := inproc.Run(p, inproc.Options{}, func(c collective.Comm) error {
						o, err := distpart.OpenOGB(c, npz, distpart.OGBOptions{Symmetrize: sym, RoundEdges: round})
						if err != nil {
							return err
						}
						defer o.Close()
						lo, hi := dist.BlockRange(o.NumNodes(), p, c.Rank())
						got, err := o.Rows(lo, hi)
						if err != nil {
							return err
						}
						want, err := graph.OpenBinaryRows(gnn)
						if err != nil {
							return err
						}
						defer want.Close()
						w, err := want.Rows(lo, hi)
						if err != nil {
							return err
						}
						if !assert.Equal(t, w.Indptr, got.Indptr) || !assert.Equal(t, w.Indices, got.Indices) {
							return fmt.Errorf("rank %d: rows differ", c.Rank())
						}
						return nil
					})
					require.NoError(t, err)
				})
			}
		}
	}
}
