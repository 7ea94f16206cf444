package sampling

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

// distCase is a sampler to run replicated and distributed.
type distCase struct {
	name  string
	build func(top Topology) (Sampler, error)
	mat   func(adj *sparse.CSR) *sparse.CSR // the matrix the topology holds
}

func distCases() []distCase {
	return []distCase{
		{"sage", func(top Topology) (Sampler, error) { return NewNodeWiseOn(top, []int{4, 3}) },
			func(adj *sparse.CSR) *sparse.CSR { return adj }},
		{"sage-all", func(top Topology) (Sampler, error) { return NewNodeWiseOn(top, []int{-1, 2}) },
			func(adj *sparse.CSR) *sparse.CSR { return adj }},
		{"ladies", func(top Topology) (Sampler, error) { return NewLayerWiseOn(top, []int{25, 12}) },
			GCNNormalized},
	}
}

// testBatches returns nb minibatches of up to size distinct seeds, with
// their keys; the last one is short.
func testBatches(r *rand.Rand, n int64, nb, size int) ([][]int64, []uint64) {
	perm := r.Perm(int(n))
	var batches [][]int64
	var keys []uint64
	for b := range nb {
		sz := size
		if b == nb-1 {
			sz = size / 2
		}
		seeds := make([]int64, sz)
		for x := range seeds {
			seeds[x] = int64(perm[b*size+x])
		}
		batches = append(batches, seeds)
		keys = append(keys, r.Uint64())
	}
	return batches, keys
}

// sameMiniBatch requires got to be want, entry for entry (nil and empty
// slices alike).
func sameMiniBatch(t *testing.T, want, got *MiniBatch, what string) {
	t.Helper()
	require.Equal(t, want.Seeds, got.Seeds, what)
	require.Len(t, got.Blocks, len(want.Blocks), what)
	for l := range want.Blocks {
		w, g := want.Blocks[l], got.Blocks[l]
		require.Equal(t, w.Dst, g.Dst, "%s block %d", what, l)
		require.Equal(t, w.Src, g.Src, "%s block %d", what, l)
		require.Equal(t, [2]int64{w.Adj.NRows, w.Adj.NCols}, [2]int64{g.Adj.NRows, g.Adj.NCols}, "%s block %d", what, l)
		require.Equal(t, w.Adj.Indptr, g.Adj.Indptr, "%s block %d", what, l)
		require.True(t, slices.Equal(w.Adj.Indices, g.Adj.Indices), "%s block %d indices", what, l)
		require.True(t, slices.Equal(w.Adj.Values, g.Adj.Values), "%s block %d values", what, l)
		require.Equal(t, w.Adj.Values == nil, g.Adj.Values == nil, "%s block %d values", what, l)
	}
}

// sampleShare samples rank's share of batches (minibatch b on rank
// b mod p) with s, bulk at a time, in as many Sample calls as the rank with
// the most minibatches makes (the distributed topologies' calls are
// collective), and stores them in out under mu.
func sampleShare(s Sampler, rank, p, bulk int, batches [][]int64, keys []uint64, out []*MiniBatch, mu *sync.Mutex) error {
	calls := ((len(batches)+p-1)/p + bulk - 1) / bulk
	var mine []int
	for b := rank; b < len(batches); b += p {
		mine = append(mine, b)
	}
	for call := range calls {
		ids := mine[min(call*bulk, len(mine)):min((call+1)*bulk, len(mine))]
		bs, ks := [][]int64{}, []uint64{}
		for _, b := range ids {
			bs, ks = append(bs, batches[b]), append(ks, keys[b])
		}
		ms, err := s.Sample(bs, ks)
		if err != nil {
			return err
		}
		mu.Lock()
		for x, b := range ids {
			out[b] = ms[x]
		}
		mu.Unlock()
	}
	return nil
}

// sampleDistributed samples batches on p in-process ranks over a (p/c)×c
// grid, minibatch b on rank b mod p, bulk at a time, and returns the
// minibatches in order.
func sampleDistributed(t *testing.T, p, c, bulk int, m *sparse.CSR, build func(Topology) (Sampler, error), batches [][]int64, keys []uint64) []*MiniBatch {
	t.Helper()
	out := make([]*MiniBatch, len(batches))
	var mu sync.Mutex
	err := inproc.Run(p, inproc.Options{}, func(cm collective.Comm) error {
		g, err := collective.NewGrid(cm, p/c, c)
		if err != nil {
			return err
		}
		top, err := Distributed15D(g, m)
		if err != nil {
			return err
		}
		s, err := build(top)
		if err != nil {
			return err
		}
		if err := sampleShare(s, cm.Rank(), p, bulk, batches, keys, out, &mu); err != nil {
			return err
		}
		return g.Free()
	})
	require.NoError(t, err)
	return out
}

// The minibatches are the same whatever the topology, p, c and bulk.
func TestDistributed15DSameMinibatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	adj := randomAdj(t, r, 240, 12, true)
	batches, keys := testBatches(r, adj.NRows, 7, 20)
	for _, tc := range distCases() {
		m := tc.mat(adj)
		ref, err := tc.build(Replicated(m))
		require.NoError(t, err)
		want, err := ref.Sample(batches, keys)
		require.NoError(t, err)
		for _, pc := range [][2]int{{1, 1}, {2, 1}, {2, 2}, {3, 1}, {4, 2}, {4, 4}, {6, 2}, {6, 3}} {
			for _, bulk := range []int{1, 3} {
				name := fmt.Sprintf("%s/p=%d/c=%d/bulk=%d", tc.name, pc[0], pc[1], bulk)
				t.Run(name, func(t *testing.T) {
					got := sampleDistributed(t, pc[0], pc[1], bulk, m, tc.build, batches, keys)
					for b := range want {
						sameMiniBatch(t, want[b], got[b], fmt.Sprintf("minibatch %d", b))
					}
				})
			}
		}
	}
}

// The bytes of a distributed hop are the analytical ones: for the sampler's
// own messages (phase "sample") the gathers of the frontiers, and for the
// streamed product (metrics.PhaseSpGEMM) the gather of the degrees (first
// hop only), the gather of the rows each rank needs of each block and
// their entries, then per block either its 1.5D broadcast or the fetch of
// the needed rows, whichever spgemm.FetchVolume15D predicts cheaper, and
// the return of the sampled rows from the replica whose stages hold the
// row's vertex to the rank that asked for it. A small frontier fetches
// and a frontier of every vertex broadcasts; both are checked to happen.
func TestDistributed15DVolume(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	adj := randomAdj(t, r, 200, 10, true)
	const fanout = 3
	every := make([]int64, adj.NRows)
	for v := range every {
		every[v] = int64(v)
	}
	frontiers := []struct {
		name  string
		fr    [][]int64
		fetch bool // whether the blocks of other grid rows are fetched
	}{
		{"small", [][]int64{{3, 17, 40, 41, 199, 0}, {}, {5, 6, 7, 8, 9, 100, 150, 151}, {60, 61}}, true},
		{"every", [][]int64{every, every, every, every}, false},
	}
	for _, ft := range frontiers {
		for _, pc := range [][2]int{{4, 1}, {4, 2}, {4, 4}, {2, 2}} {
			p, c := pc[0], pc[1]
			q := p / c
			t.Run(fmt.Sprintf("%s/p=%d/c=%d", ft.name, p, c), func(t *testing.T) {
				fr := ft.fr[:p]
				want, fetched, broadcast := expectDistributed15D(t, adj, fr, p, c, fanout)
				if q > 1 {
					require.Equal(t, ft.fetch, fetched > 0, "fetched %d blocks", fetched)
					require.Equal(t, !ft.fetch, broadcast > 0, "broadcast %d blocks", broadcast)
				}
				got := make([][2]traffic, p)
				for _, hop := range []int{0, 1} { // the second hop gathers no degrees
					err := inproc.Run(p, inproc.Options{}, func(cm collective.Comm) error {
						cc := collective.WithStats(cm, nil)
						g, err := collective.NewGrid(cc, q, c)
						if err != nil {
							return err
						}
						top, err := Distributed15D(g, adj)
						if err != nil {
							return err
						}
						me := cc.Rank()
						keys := make([]uint64, len(fr[me]))
						for x := range keys {
							keys[x] = uint64(1000 + me)
						}
						for h := range hop + 1 {
							before := collective.SnapshotOf(cc)
							collective.SetPhase(cc, "sample")
							if _, err := top.rows(fr[me], keys, uniformPicker(0, fanout)); err != nil {
								return err
							}
							d := collective.SnapshotOf(cc).Sub(before)
							sp, mp := d.Phase("sample"), d.Phase(metrics.PhaseSpGEMM)
							if h == hop {
								got[me] = [2]traffic{{sp.SentBytes, sp.RecvBytes}, {mp.SentBytes, mp.RecvBytes}}
							}
						}
						return g.Free()
					})
					require.NoError(t, err)
					for rank := range p {
						require.Equal(t, want[hop][rank], got[rank], "hop %d rank %d: [sample, spgemm] bytes", hop, rank)
					}
				}
			})
		}
	}
}

// traffic is one rank's bytes sent and received.
type traffic struct{ sent, recv int64 }

// expectDistributed15D derives, message by message, each rank's [sample,
// spgemm] bytes of one 1.5D hop over frontiers fr on a (p/c)×c grid: want[0]
// for the first hop (with the gather of the degrees), want[1] for a later
// one. It also returns how many stages (over all grid columns) fetch and
// how many broadcast a block to other grid rows.
func expectDistributed15D(t *testing.T, adj *sparse.CSR, fr [][]int64, p, c, fanout int) (want [2][][2]traffic, fetched, broadcast int) {
	t.Helper()
	q := p / c
	// A sampled row holds min(fanout, distinct neighbours) columns.
	rowLen := func(v int64) int64 { return int64(min(fanout, len(neighbours(adj, v)))) }
	ab := spgemm.Bounds(adj.NRows, q)
	blockOf := func(v int64) int {
		for j := range q {
			if v < ab[j+1] {
				return j
			}
		}
		return q - 1
	}
	// need[x][j], ent[x][j]: the distinct vertices of block j in the
	// frontier of grid row x (Q_x) and their entries.
	need, ent := make([][]int64, q), make([][]int64, q)
	for x := range q {
		need[x], ent[x] = make([]int64, q), make([]int64, q)
		seen := map[int64]bool{}
		for y := range c {
			for _, v := range fr[x*c+y] {
				if !seen[v] {
					seen[v] = true
					need[x][blockOf(v)]++
					ent[x][blockOf(v)] += adj.Degree(v)
				}
			}
		}
	}
	// fetch[j]: whether block j's stage fetches (the same in every grid
	// column: it depends on the grid rows' frontiers only).
	fetch := make([]bool, q)
	for j := range q {
		nj, ej := make([]int64, q), make([]int64, q)
		for x := range q {
			nj[x], ej[x] = need[x][j], ent[x][j]
		}
		full, sel := spgemm.FetchVolume15D(q, j, ab[j+1]-ab[j], adj.Indptr[ab[j+1]]-adj.Indptr[ab[j]], nj, ej, 0)
		fetch[j] = sel < full
	}
	want[0], want[1] = make([][2]traffic, p), make([][2]traffic, p)
	for rank := range p {
		i, k := rank/c, rank%c
		var w [2]traffic
		// Sample phase: all counts (p int64), frontier ids and keys
		// over the grid row, then lengths and sampled columns back.
		counts := make([]int, p)
		for x := range p {
			counts[x] = len(fr[x])
		}
		ones := make([]int, p)
		for x := range ones {
			ones[x] = 1
		}
		w[0].sent, w[0].recv = collective.AllgathervVolume(rank, ones, 8)
		s, rv := collective.AllgathervVolume(k, counts[i*c:(i+1)*c], 8)
		w[0].sent += 2 * s
		w[0].recv += 2 * rv
		var rows []int64 // Q_i
		var owner []int
		for x := range c {
			rows = append(rows, fr[i*c+x]...)
			for range fr[i*c+x] {
				owner = append(owner, x)
			}
		}
		// Row x is computed by the replica of its vertex's block.
		for x, v := range rows {
			l := rowLen(v)
			holder := blockOf(v) % c
			if holder == owner[x] {
				continue
			}
			if holder == k {
				w[1].sent += 8 + 8*l
			}
			if owner[x] == k {
				w[1].recv += 8 + 8*l
			}
		}
		if q > 1 {
			// The plan: R and N of each of the column's stages, gathered
			// over the grid column.
			var ns int
			for j := k; j < q; j += c {
				ns++
			}
			planCounts := make([]int, q)
			for x := range planCounts {
				planCounts[x] = 2 * ns
			}
			s, rv := collective.AllgathervVolume(i, planCounts, 8)
			w[1].sent += s
			w[1].recv += rv
		}
		// Product: per stage, the broadcast of block j down the grid
		// column, or the fetch of the rows needed of it (8 bytes an id to
		// the root, 8 an entry back; the adjacency is a pattern).
		for j := k; j < q; j += c {
			if q == 1 {
				continue
			}
			if fetch[j] {
				if j == i {
					for x := range q {
						if x != i {
							w[1].recv += 8 * need[x][j]
							w[1].sent += 8 * ent[x][j]
						}
					}
				} else {
					w[1].sent += 8 * need[i][j]
					w[1].recv += 8 * ent[i][j]
				}
				continue
			}
			bytes := 8*(ab[j+1]-ab[j]) + 8*(adj.Indptr[ab[j+1]]-adj.Indptr[ab[j]])
			if j == i {
				w[1].sent += int64(q-1) * bytes
			} else {
				w[1].recv += bytes
			}
		}
		first := w
		if q > 1 {
			// The degrees, once: one int32 per row of every block, over
			// the grid column.
			rowCounts := make([]int, q)
			for x := range q {
				rowCounts[x] = int(ab[x+1] - ab[x])
			}
			s, rv := collective.AllgathervVolume(i, rowCounts, 4)
			first[1].sent += s
			first[1].recv += rv
		}
		want[0][rank], want[1][rank] = first, w
	}
	for k := range c {
		for j := k; j < q && q > 1; j += c {
			if fetch[j] {
				fetched++
			} else {
				broadcast++
			}
		}
	}
	return want, fetched, broadcast
}

// The replicated topology's chunks (rows split into many pieces over
// goroutines) give the rows of one chunk, for both samplers.
func TestReplicatedChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	adj := randomAdj(t, r, 300, 15, true)
	batches, keys := testBatches(r, adj.NRows, 5, 40)
	for _, tc := range distCases() {
		s, err := tc.build(Replicated(tc.mat(adj)))
		require.NoError(t, err)
		want, err := s.Sample(batches, keys)
		require.NoError(t, err)
		func() {
			defer func(w int64, p int) { chunkWork = w; runtime.GOMAXPROCS(p) }(chunkWork, runtime.GOMAXPROCS(5))
			chunkWork = 37
			got, err := s.Sample(batches, keys)
			require.NoError(t, err)
			for b := range want {
				sameMiniBatch(t, want[b], got[b], fmt.Sprintf("%s minibatch %d", tc.name, b))
			}
		}()
	}
}

// Every rank of a 1.5D topology learns whether all the adjacency's rows
// are sorted and distinct, with the degrees (no byte more), also when
// only another grid row's block has a repeated entry, and samples the
// same minibatches either way.
func TestDistributed15DDistinctRows(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	clean := randomAdj(t, r, 120, 9, false)
	// One repeated entry in the last row with any: in the last grid row's
	// block whatever p.
	var rows, cols []int64
	dup := int64(-1)
	for v := clean.NRows - 1; v >= 0 && dup < 0; v-- {
		if clean.Degree(v) > 0 {
			dup = v
		}
	}
	for v := range clean.NRows {
		for q := clean.Indptr[v]; q < clean.Indptr[v+1]; q++ {
			rows, cols = append(rows, v), append(cols, clean.Indices[q])
			if v == dup && q == clean.Indptr[v] {
				rows, cols = append(rows, v), append(cols, clean.Indices[q])
			}
		}
	}
	repeated, err := sparse.FromCOO(clean.NRows, clean.NCols, rows, cols, nil)
	require.NoError(t, err)
	batches, keys := testBatches(r, clean.NRows, 4, 16)
	for _, tc := range []struct {
		name     string
		m        *sparse.CSR
		distinct bool
	}{{"clean", clean, true}, {"repeated", repeated, false}} {
		ref, err := NewNodeWise(tc.m, []int{3, 2})
		require.NoError(t, err)
		want, err := ref.Sample(batches, keys)
		require.NoError(t, err)
		for _, pc := range [][2]int{{1, 1}, {2, 1}, {3, 1}, {4, 2}} {
			p, c := pc[0], pc[1]
			name := fmt.Sprintf("%s/p=%d/c=%d", tc.name, p, c)
			err := inproc.Run(p, inproc.Options{}, func(cm collective.Comm) error {
				g, err := collective.NewGrid(cm, p/c, c)
				if err != nil {
					return err
				}
				top, err := Distributed15D(g, tc.m)
				if err != nil {
					return err
				}
				s, err := NewNodeWiseOn(top, []int{3, 2})
				if err != nil {
					return err
				}
				got, err := s.Sample(batches, keys)
				if err != nil {
					return err
				}
				if d := top.(*dist15D).distinct; d != tc.distinct {
					return fmt.Errorf("rank %d: distinct %v", cm.Rank(), d)
				}
				for b := range want {
					if !reflect.DeepEqual(want[b], got[b]) {
						return fmt.Errorf("rank %d: minibatch %d differs", cm.Rank(), b)
					}
				}
				return g.Free()
			})
			require.NoError(t, err, name)
		}
	}
}
