package alltoall

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/partition"
)

// opts bounds every collective wait so that a deadlock fails the test.
var opts = inproc.Options{Timeout: 20 * time.Second}

func TestNewPlan(t *testing.T) {
	// Parts: gid 0..6 → 0 1 2 1 0 2 1, so the local ids are
	// part 0: gids 0,4 → 0,1; part 1: gids 1,3,6 → 0,1,2; part 2: gids 2,5 → 0,1.
	book, err := partition.New([]int32{0, 1, 2, 1, 0, 2, 1}, 3, "test")
	require.NoError(t, err)
	ids := []int64{3, 0, 6, 3, 4, 5, 1}
	orig := slices.Clone(ids)
	p := NewPlan(ids, book, 0)
	assert.Equal(t, orig, ids, "ids modified")
	want := &Plan{
		rank: 0, parts: 3,
		counts: []int{0, 3, 1},
		// Rank 1's rows by local id (gids 1, 3, 6), then rank 2's (gid 5).
		req: []int64{0, 1, 2, 1},
		// gid 3 → received row 1, gid 0 → own row 0, gid 6 → 2, gid 3 → 1,
		// gid 4 → own row 1, gid 5 → 3, gid 1 → 0.
		from: []int64{1, ^0, 2, 1, ^1, 3, 0},
		// gids 0 and 4 are rank 0's, and they are the resident rows.
		own: 2, resident: 2,
	}
	assert.Equal(t, want, p)
	assert.Equal(t, 4, p.Remote())

	empty := NewPlan(nil, book, 2)
	assert.Equal(t, 0, empty.Remote())
	assert.Equal(t, []int{0, 0, 0}, empty.counts)

	assert.PanicsWithValue(t, "alltoall: rank out of range", func() { NewPlan(ids, book, 3) })
	assert.PanicsWithValue(t, "alltoall: rank out of range", func() { NewPlan(ids, book, -1) })
	assert.PanicsWithValue(t, "alltoall: id out of range", func() { NewPlan([]int64{7}, book, 0) })
	assert.PanicsWithValue(t, "alltoall: id out of range", func() { NewPlan([]int64{-1}, book, 0) })
}

// unevenBook returns a book for n vertices over p parts with skewed part
// sizes: part q gets weight (q+1)², and with empty set, part p−1 gets no
// vertex at all.
func unevenBook(t testing.TB, r *rand.Rand, n int64, p int, empty bool) *partition.Book {
	var total int
	weights := make([]int, p)
	for q := range weights {
		weights[q] = (q + 1) * (q + 1)
		if empty && p > 1 && q == p-1 {
			weights[q] = 0
		}
		total += weights[q]
	}
	part := make([]int32, n)
	for gid := range part {
		x := r.IntN(total)
		q := 0
		for x >= weights[q] {
			x -= weights[q]
			q++
		}
		part[gid] = int32(q)
	}
	book, err := partition.New(part, p, "uneven")
	require.NoError(t, err)
	return book
}

// globalFeatures returns the n×f matrix with element (gid, j) = gid·64 + j,
// exact in float32 for the sizes used here.
func globalFeatures(n int64, f int) *dense.Matrix {
	x := dense.New(int(n), f)
	for gid := range int(n) {
		for j := range f {
			x.Data[gid*f+j] = float32(gid*64 + j)
		}
	}
	return x
}

// localFeatures returns rank's part of x under book: row lid is the row of
// the vertex Owned(rank)[lid].
func localFeatures(x *dense.Matrix, book *partition.Book, rank int) *dense.Matrix {
	owned := book.Owned(rank)
	l := dense.New(len(owned), x.Cols)
	for lid, gid := range owned {
		copy(l.Row(lid), x.Row(int(gid)))
	}
	return l
}

// volume returns the bytes rank sends and receives in one exchange, derived
// from the requests of all ranks without the package: a count to each other
// rank (8 bytes), then each distinct remote id requested (8 bytes) one way
// and its feature row (4f bytes) the other.
func volume(reqs [][]int64, book *partition.Book, rank, f int) (sent, recv int64) {
	p := len(reqs)
	distinctFrom := func(q int) map[int64]bool { // ids rank q requests remotely
		m := map[int64]bool{}
		for _, gid := range reqs[q] {
			if book.Owner(gid) != q {
				m[gid] = true
			}
		}
		return m
	}
	asked := int64(len(distinctFrom(rank)))
	var served int64
	for q := range p {
		if q == rank {
			continue
		}
		for gid := range distinctFrom(q) {
			if book.Owner(gid) == rank {
				served++
			}
		}
	}
	count := 8 * int64(p-1)
	return count + 8*asked + 4*int64(f)*served, count + 8*served + 4*int64(f)*asked
}

func TestExchange(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4, 9} {
		for _, tc := range []struct {
			name  string
			n     int64
			f     int
			empty bool // the last rank owns no vertex
		}{
			{"n=50/f=3", 50, 3, false},
			{"n=200/f=8/empty part", 200, 8, true},
			{"n=30/f=0", 30, 0, false},
		} {
			t.Run(fmt.Sprintf("p=%d/%s", p, tc.name), func(t *testing.T) {
				r := rng.New(11, uint64(p), uint64(tc.n))
				book := unevenBook(t, r, tc.n, p, tc.empty)
				x := globalFeatures(tc.n, tc.f)
				// Each rank's request: random ids with repeats, own rows
				// included; rank 1 (or the only rank) asks for nothing.
				reqs := make([][]int64, p)
				for q := range reqs {
					if q == 1 {
						continue
					}
					m := r.IntN(int(tc.n) * 2)
					for range m {
						reqs[q] = append(reqs[q], r.Int64N(tc.n))
					}
				}
				err := inproc.Run(p, opts, func(c collective.Comm) error {
					c = collective.WithStats(c, nil)
					rank := c.Rank()
					local := localFeatures(x, book, rank)
					ids := reqs[rank]
					// Ranks report mismatches through assert and an error:
					// require would stop a rank goroutine mid-collective.
					check := func(got *dense.Matrix) error {
						if !assert.Equal(t, len(ids), got.Rows) || !assert.Equal(t, tc.f, got.Cols) {
							return fmt.Errorf("rank %d: result is %d×%d", rank, got.Rows, got.Cols)
						}
						for i, gid := range ids {
							if !assert.Equal(t, x.Row(int(gid)), got.Row(i), "rank %d: row %d (gid %d)", rank, i, gid) {
								return fmt.Errorf("rank %d: wrong rows", rank)
							}
						}
						return nil
					}

					// Exchange counts under the caller's phase.
					restore := collective.SetPhase(c, "mine")
					plan := NewPlan(ids, book, rank)
					got, err := Exchange(c, plan, book, local)
					if err != nil {
						return err
					}
					restore()
					if err := check(got); err != nil {
						return err
					}
					sent, recv := volume(reqs, book, rank, tc.f)
					snap := collective.SnapshotOf(c)
					a2a := snap["mine"]["alltoallv"]
					assert.Equal(t, int64(3), a2a.Calls, "rank %d: alltoallv calls", rank)
					assert.Equal(t, sent, a2a.SentBytes, "rank %d: sent bytes", rank)
					assert.Equal(t, recv, a2a.RecvBytes, "rank %d: received bytes", rank)
					assert.Equal(t, []string{"mine"}, snap.Phases(), "rank %d: traffic outside the phase", rank)

					// Fetch counts the same under "fetch" and restores the
					// phase it found.
					got, err = Fetch(c, ids, book, local)
					if err != nil {
						return err
					}
					if err := check(got); err != nil {
						return err
					}
					snap = collective.SnapshotOf(c)
					fa2a := snap["fetch"]["alltoallv"]
					assert.Equal(t, []int64{a2a.Calls, a2a.SentBytes, a2a.RecvBytes},
						[]int64{fa2a.Calls, fa2a.SentBytes, fa2a.RecvBytes}, "rank %d: Fetch traffic", rank)
					assert.Len(t, snap["fetch"], 1, "rank %d: Fetch uses Alltoallv only", rank)
					assert.Equal(t, collective.DefaultPhase, collective.StatsOf(c).Phase())
					return nil
				})
				require.NoError(t, err)
			})
		}
	}
}

func TestExchangeMisuse(t *testing.T) {
	book := partition.Block(10, 2) // rank 0 owns 0..4, rank 1 owns 5..9
	x := globalFeatures(10, 2)
	for _, tc := range []struct {
		name string
		fn   func(c collective.Comm) error
		msg  string
	}{
		{
			name: "plan of another rank",
			fn: func(c collective.Comm) error {
				_, err := Exchange(c, NewPlan([]int64{1}, book, 1-c.Rank()), book, localFeatures(x, book, c.Rank()))
				return err
			},
			msg: "alltoall: plan made for another rank or communicator size",
		},
		{
			name: "short local matrix",
			fn: func(c collective.Comm) error {
				local := localFeatures(x, book, c.Rank())
				local.Rows, local.Data = 2, local.Data[:4]
				_, err := Fetch(c, []int64{4, 9}, book, local)
				return err
			},
			msg: "alltoall: local feature matrix lacks a row this rank owns",
		},
		{
			// Rank 1 plans with a book under which gid 7 is rank 0's
			// local row 7, which rank 0 does not have.
			name: "inconsistent books",
			fn: func(c collective.Comm) error {
				b := book
				if c.Rank() == 1 {
					b = partition.Block(10, 1)
					b.Parts = 2 // same parts, everything on rank 0
				}
				_, err := Fetch(c, []int64{7}, b, localFeatures(x, book, c.Rank()))
				return err
			},
			msg: "alltoall: rank 1 asked rank 0 for local row 7, which it does not hold",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := inproc.Run(2, opts, tc.fn)
			require.ErrorContains(t, err, tc.msg)
		})
	}
}

// BenchmarkFetch measures in-process feature fetching: every rank fetches
// the rows of ids distinct random vertices (a minibatch's input layer) of
// n vertices with f float32 features, partitioned at random. Bytes are the
// feature bytes received from other ranks, summed over ranks.
func BenchmarkFetch(b *testing.B) {
	for _, bc := range []struct {
		p, ids, f int
		n         int64
	}{
		{4, 1 << 14, 128, 1 << 20},
		{8, 1 << 14, 128, 1 << 20},
	} {
		b.Run(fmt.Sprintf("p=%d/ids=%d/f=%d/n=%d", bc.p, bc.ids, bc.f, bc.n), func(b *testing.B) {
			book := partition.Random(bc.n, bc.p, 1)
			locals := make([]*dense.Matrix, bc.p)
			reqs := make([][]int64, bc.p)
			var remote int64
			for q := range bc.p {
				locals[q] = dense.New(len(book.Owned(q)), bc.f)
				r := rng.New(2, uint64(q))
				seen := map[int64]bool{}
				for len(reqs[q]) < bc.ids {
					gid := r.Int64N(bc.n)
					if !seen[gid] {
						seen[gid] = true
						reqs[q] = append(reqs[q], gid)
					}
				}
				remote += int64(NewPlan(reqs[q], book, q).Remote())
			}
			b.SetBytes(remote * int64(bc.f) * 4)
			b.ReportAllocs()
			for b.Loop() {
				err := inproc.Run(bc.p, opts, func(c collective.Comm) error {
					_, err := Fetch(c, reqs[c.Rank()], book, locals[c.Rank()])
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bc.p*bc.ids)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
