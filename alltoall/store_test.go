package alltoall

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/internal/f16"
	"gnnmpi/internal/prefetch"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// storeRun runs p = q·c in-process ranks as a q×c grid; each rank builds a
// Store over its grid column (its replica group) with the q-part book, as
// train does with --replication c, and calls fn with it.
func storeRun(t *testing.T, q, c int, book *partition.Book, x *dense.Matrix, optsOf func(rank int) StoreOptions,
	fn func(rank int, cm collective.Comm, s *Store) error) {
	t.Helper()
	require.Equal(t, q, book.Parts)
	err := inproc.Run(q*c, opts, func(cm collective.Comm) error {
		cm = collective.WithStats(cm, nil)
		g, err := collective.NewGrid(cm, q, c)
		if err != nil {
			return err
		}
		s, err := NewStore(g.ColComm, book, localFeatures(x, book, g.Row), optsOf(cm.Rank()))
		if err != nil {
			return err
		}
		return fn(cm.Rank(), cm, s)
	})
	require.NoError(t, err)
}

// scores returns a score per vertex for a policy of the tests: nil (none),
// an integer-valued "degree" with many ties, or a continuous per-rank score
// (as VIP and sim give every rank its own).
func scores(policy CachePolicy, n int64, rank int) []float64 {
	switch policy {
	case CacheNone:
		return nil
	case CacheDegree:
		s := make([]float64, n)
		for v := range s {
			s[v] = float64(v % 7)
		}
		return s
	}
	r := rand.New(rand.NewPCG(uint64(rank), 99))
	s := make([]float64, n)
	for v := range s {
		if r.IntN(4) > 0 {
			s[v] = r.Float64()
		}
	}
	return s
}

// vecOf returns the sparse scores of dense ones (nil for nil).
func vecOf(score []float64) *sparse.Vec {
	if score == nil {
		return nil
	}
	return sparse.VecFromDense(score)
}

// The rows a Store fetches are bitwise those of the whole matrix (f32), or
// those rounded to half precision (f16), for every replication factor,
// cache policy and size; the counts add up; the cache holds the top-scored
// remote vertices.
func TestStoreMatchesReference(t *testing.T) {
	const n, f = 300, 6
	x := globalFeatures(n, f)
	for _, q := range []int{1, 2, 3} {
		for _, c := range []int{1, 2} {
			book := unevenBook(t, rand.New(rand.NewPCG(uint64(q), 5)), n, q, false)
			for _, policy := range []CachePolicy{CacheNone, CacheDegree, CacheVIP} {
				for _, alpha := range []float64{0, 0.05, 0.3, 10} {
					if policy == CacheNone && alpha > 0 {
						continue
					}
					for _, dt := range []DType{F32, F16} {
						name := fmt.Sprintf("q%d_c%d_%s_a%g_%s", q, c, policy, alpha, dt)
						t.Run(name, func(t *testing.T) {
							k := int(alpha * n / float64(q))
							storeRun(t, q, c, book, x, func(rank int) StoreOptions {
								return StoreOptions{DType: dt, Score: vecOf(scores(policy, n, rank)), CacheRows: k, GPUFrac: 0.25}
							}, func(rank int, _ collective.Comm, s *Store) error {
								score := scores(policy, n, rank)
								part := rank / c
								// The cache is SelectCache's choice.
								want := SelectCache(book, part, vecOf(score), k)
								if got := s.Resident(); !slices.Equal(keepRemote(got, book, part), sortedByScore(want, score)) {
									return fmt.Errorf("rank %d: cached %v, want %v", rank, keepRemote(got, book, part), want)
								}
								r := rand.New(rand.NewPCG(uint64(rank), 7))
								for range 3 {
									ids := make([]int64, r.IntN(60))
									for i := range ids {
										ids[i] = r.Int64N(n)
									}
									got, cnt, err := s.Fetch(ids)
									if err != nil {
										return err
									}
									if err := sameRows(got, x, ids, dt == F16); err != nil {
										return fmt.Errorf("rank %d: %w", rank, err)
									}
									if wc := countsOf(ids, book, part, s); cnt != wc {
										return fmt.Errorf("rank %d: counts %+v, want %+v", rank, cnt, wc)
									}
								}
								return nil
							})
						})
					}
				}
			}
		}
	}
}

// keepRemote returns the ids of resident not owned by part, in order.
func keepRemote(resident []int64, book *partition.Book, part int) []int64 {
	var out []int64
	for _, g := range resident {
		if book.Owner(g) != part {
			out = append(out, g)
		}
	}
	return out
}

// sortedByScore orders ids hottest first, ties by id, as the table is.
func sortedByScore(ids []int64, score []float64) []int64 {
	out := slices.Clone(ids)
	slices.SortStableFunc(out, func(a, b int64) int {
		if score[a] != score[b] {
			if score[a] > score[b] {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	return out
}

// sameRows checks that row i of got is row ids[i] of x, bitwise, or its
// half-precision rounding.
func sameRows(got, x *dense.Matrix, ids []int64, half bool) error {
	if got.Rows != len(ids) || got.Cols != x.Cols {
		return fmt.Errorf("got %d×%d, want %d×%d", got.Rows, got.Cols, len(ids), x.Cols)
	}
	for i, g := range ids {
		for j, v := range x.Row(int(g)) {
			if half {
				v = f16.ToFloat32(f16.FromFloat32(v))
			}
			if got.Row(i)[j] != v {
				return fmt.Errorf("row %d (vertex %d) col %d: got %v want %v", i, g, j, got.Row(i)[j], v)
			}
		}
	}
	return nil
}

// countsOf derives a fetch's counts without the store's plan.
func countsOf(ids []int64, book *partition.Book, part int, s *Store) Counts {
	c := Counts{Rows: int64(len(ids))}
	remote := map[int64]bool{}
	for _, g := range ids {
		switch {
		case book.Owner(g) == part:
			c.Local++
		case s.Cached(g):
			c.Hits++
		default:
			remote[g] = true
		}
	}
	c.Remote = int64(len(remote))
	return c
}

// With no cache a Store fetches exactly what Fetch does, with the same
// bytes on the wire; a cache large enough for every vertex fetches no row;
// the bytes of a cached fetch follow the closed form of Fetch's doc with
// only the misses counted, and F16 halves the row bytes.
func TestStoreVolume(t *testing.T) {
	const n, f, q = 240, 5, 4
	x := globalFeatures(n, f)
	book := unevenBook(t, rand.New(rand.NewPCG(3, 3)), n, q, true)
	reqs := volumeRequests(n, q)
	for _, alpha := range []float64{0, 0.1, 0.5, 1, 4} {
		for _, dt := range []DType{F32, F16} {
			t.Run(fmt.Sprintf("a%g_%s", alpha, dt), func(t *testing.T) {
				k := int(alpha * n / q)
				storeRun(t, q, 1, book, x, func(rank int) StoreOptions {
					return StoreOptions{DType: dt, Score: vecOf(positive(n, rank)), CacheRows: k}
				}, func(rank int, cm collective.Comm, s *Store) error {
					var got *dense.Matrix
					var cnt Counts
					sent, err := fetchBytes(cm, func() (err error) { got, cnt, err = s.Fetch(reqs[rank]); return })
					if err != nil {
						return err
					}
					// The closed form over the misses of every rank.
					misses := make([][]int64, q)
					for o := range q {
						cache := SelectCache(book, o, vecOf(positive(n, o)), k)
						for _, g := range reqs[o] {
							if !slices.Contains(cache, g) {
								misses[o] = append(misses[o], g)
							}
						}
					}
					w := int64(4)
					if dt == F16 {
						w = 2
					}
					var served int64
					for o := range q {
						if o == rank {
							continue
						}
						for _, g := range distinct(misses[o]) {
							if book.Owner(g) == rank {
								served++
							}
						}
					}
					wantSent := 8*int64(q-1) + 8*remoteOf(misses[rank], book, rank) + w*f*served
					if sent != wantSent {
						return fmt.Errorf("rank %d: sent %d bytes, want %d", rank, sent, wantSent)
					}
					if alpha == 0 && dt == F32 {
						// Plain Fetch: same rows, same bytes.
						var plain *dense.Matrix
						ps, err := fetchBytes(cm, func() (err error) {
							plain, err = Fetch(cm, reqs[rank], book, localFeatures(x, book, rank))
							return
						})
						if err != nil {
							return err
						}
						if ps != sent || !slices.Equal(plain.Data, got.Data) {
							return fmt.Errorf("rank %d: store sent %d bytes, Fetch %d; rows equal %v", rank, sent, ps, slices.Equal(plain.Data, got.Data))
						}
					}
					if alpha >= 4 && (cnt.Remote != 0 || cnt.Local+cnt.Hits != cnt.Rows) {
						return fmt.Errorf("rank %d: everything cached yet %+v", rank, cnt)
					}
					return sameRows(got, x, reqs[rank], dt == F16)
				})
			})
		}
	}
}

// A Store whose fetches go in rounds (StoreOptions.RoundBytes) fetches
// bitwise the rows, counts and bytes of one that sends every row in one
// call, over 2 + k Alltoallv calls per fetch with k = ⌈m/b⌉ for the
// largest part of m rows and b rows per requester and round; the cache it
// fills in rounds holds the same rows.
func TestStoreRounds(t *testing.T) {
	const n, f = 200, 6
	x := globalFeatures(n, f)
	for _, q := range []int{1, 2, 3, 4} {
		for _, c := range []int{1, 2} {
			book := unevenBook(t, rand.New(rand.NewPCG(uint64(q), 11)), n, q, q == 4)
			m := slices.Max(book.Sizes())
			for _, dt := range []DType{F32, F16} {
				w := int64(4)
				if dt == F16 {
					w = 2
				}
				// 1 byte: one row per requester and round; 3 rows' worth
				// per requester; the default, which fits everything.
				for _, rb := range []int64{1, int64(max(1, q-1)) * 3 * f * w, 0} {
					t.Run(fmt.Sprintf("q%d_c%d_%s_rb%d", q, c, dt, rb), func(t *testing.T) {
						b := int64(1)
						if rb == 0 {
							b = m // the default bound holds every part here
						} else if q > 1 {
							b = max(1, rb/(int64(q-1)*f*w))
						}
						k := (m + b - 1) / b
						if q == 1 {
							k = 1
						}
						err := inproc.Run(q*c, opts, func(cm collective.Comm) error {
							cm = collective.WithStats(cm, nil)
							g, err := collective.NewGrid(cm, q, c)
							if err != nil {
								return err
							}
							rank := cm.Rank()
							local := localFeatures(x, book, g.Row)
							o := StoreOptions{DType: dt, Score: vecOf(scores(CacheVIP, n, rank)), CacheRows: n / (3 * q), RoundBytes: -1}
							whole, err := NewStore(g.ColComm, book, local, o)
							if err != nil {
								return err
							}
							o.RoundBytes = rb
							rounds, err := NewStore(g.ColComm, book, local, o)
							if err != nil {
								return err
							}
							if !slices.Equal(whole.Resident(), rounds.Resident()) {
								return fmt.Errorf("rank %d: resident rows differ", rank)
							}
							r := rand.New(rand.NewPCG(uint64(rank), 13))
							for range 3 {
								ids := make([]int64, r.IntN(3*n))
								for i := range ids {
									ids[i] = r.Int64N(n)
								}
								fetch := func(s *Store, phase string) (*dense.Matrix, Counts, collective.Count, error) {
									before := collective.SnapshotOf(cm)
									restore := collective.SetPhase(cm, phase)
									got, cnt, err := s.Fetch(ids)
									restore()
									return got, cnt, collective.SnapshotOf(cm).Sub(before)[phase]["alltoallv"], err
								}
								wg, wc, wt, err := fetch(whole, "whole")
								if err != nil {
									return err
								}
								rg, rc, rt, err := fetch(rounds, "rounds")
								if err != nil {
									return err
								}
								if err := sameRows(rg, x, ids, dt == F16); err != nil {
									return fmt.Errorf("rank %d: %w", rank, err)
								}
								if !slices.Equal(wg.Data, rg.Data) || wc != rc {
									return fmt.Errorf("rank %d: rows equal %v, counts %+v and %+v", rank, slices.Equal(wg.Data, rg.Data), wc, rc)
								}
								if wt.Calls != 3 || rt.Calls != 2+k || wt.SentBytes != rt.SentBytes || wt.RecvBytes != rt.RecvBytes {
									return fmt.Errorf("rank %d: one call %+v, rounds %+v; want %d calls", rank, wt, rt, 2+k)
								}
							}
							return nil
						})
						require.NoError(t, err)
					})
				}
			}
		}
	}
}

// positive returns a positive score for every vertex, per rank, so that a
// cache of n rows holds every remote vertex.
func positive(n int64, rank int) []float64 {
	s := scores(CacheVIP, n, rank)
	for v := range s {
		s[v] += 0.001
	}
	return s
}

// distinct returns the distinct ids of reqs.
func distinct(reqs []int64) []int64 {
	out := slices.Clone(reqs)
	slices.Sort(out)
	return slices.Compact(out)
}

// remoteOf counts the distinct ids of reqs that rank does not own.
func remoteOf(reqs []int64, book *partition.Book, rank int) int64 {
	m := map[int64]bool{}
	for _, g := range reqs {
		if book.Owner(g) != rank {
			m[g] = true
		}
	}
	return int64(len(m))
}

// The resident table is ordered hottest first, its tiers split it at
// GPUFrac, and F16 halves the rows' memory.
func TestStoreLayout(t *testing.T) {
	const n, f = 100, 8
	x := globalFeatures(n, f)
	book := partition.Block(n, 2)
	score := make([]float64, n)
	for v := range score {
		score[v] = float64((v * 37) % 101)
	}
	var got [2][2]*Store
	for k, dt := range []DType{F32, F16} {
		storeRun(t, 2, 1, book, x, func(int) StoreOptions {
			return StoreOptions{DType: dt, Score: vecOf(score), CacheRows: 20, GPUFrac: 0.3}
		}, func(rank int, _ collective.Comm, s *Store) error {
			got[k][rank] = s
			return nil
		})
	}
	for rank := range 2 {
		s := got[0][rank]
		res := s.Resident()
		require.Len(t, res, 50+20)
		assert.Equal(t, 50, s.OwnRows())
		assert.Equal(t, 20, s.CachedRows())
		for i := 1; i < len(res); i++ {
			assert.GreaterOrEqual(t, score[res[i-1]], score[res[i]], "row %d", i)
		}
		tiers := s.Tiers()
		assert.Equal(t, []Tier{{"gpu", 21, 21 * 4 * f}, {"host", 49, 49 * 4 * f}}, tiers)
		h := got[1][rank]
		assert.Equal(t, F16, h.DType())
		assert.Equal(t, tiers[0].Bytes/2, h.Tiers()[0].Bytes)
		assert.Equal(t, s.Bytes()-h.Bytes(), int64(70*2*f))
		assert.Equal(t, int64(20*(4*f+20)), s.CacheBytes(), "20 cached rows of f float32 and their index entries")
		assert.Equal(t, int64(20*(2*f+20)), h.CacheBytes())
		assert.False(t, s.identity, "scored own rows are not in local-id order")
	}
	// Without scores the own rows are in local-id order, and plan reads
	// the resident row of local id lid as lid itself.
	storeRun(t, 2, 1, book, x, func(int) StoreOptions { return StoreOptions{} }, func(rank int, _ collective.Comm, s *Store) error {
		assert.True(t, s.identity)
		for lid, row := range s.local {
			assert.Equal(t, lid, int(row))
		}
		return nil
	})
}

func TestSelectCache(t *testing.T) {
	book, err := partition.New([]int32{0, 1, 1, 0, 1, 1, 1}, 2, "test")
	require.NoError(t, err)
	score := []float64{9, 0.5, 3, 8, 3, 0, 7}
	assert.Equal(t, []int64{6, 2, 4}, SelectCache(book, 0, vecOf(score), 3))
	assert.Equal(t, []int64{6, 2, 4, 1}, SelectCache(book, 0, vecOf(score), 10), "zero scores are never cached")
	assert.Equal(t, []int64{0, 3}, SelectCache(book, 1, vecOf(score), 5))
	assert.Nil(t, SelectCache(book, 0, nil, 3))
	assert.Nil(t, SelectCache(book, 0, vecOf(score), 0))
}

func TestNewStoreErrors(t *testing.T) {
	book := partition.Block(10, 2)
	x := globalFeatures(10, 3)
	for _, tc := range []struct {
		name string
		o    StoreOptions
		want string
	}{
		{"dtype", StoreOptions{DType: "f8"}, `unknown feature dtype "f8"`},
		{"scores", StoreOptions{Score: &sparse.Vec{N: 9}}, "scores for 9 vertices, the book has 10"},
		{"score order", StoreOptions{Score: &sparse.Vec{N: 10, Indices: []int64{3, 2}, Values: []float64{1, 1}}}, "not strictly ascending"},
		{"score nan", StoreOptions{Score: &sparse.Vec{N: 10, Indices: []int64{3}, Values: []float64{math.NaN()}}}, "entry 3 is NaN"},
		{"cache without scores", StoreOptions{CacheRows: 2}, "needs scores"},
		{"gpu", StoreOptions{GPUFrac: 1.5}, "GPU fraction 1.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := inproc.Run(2, opts, func(c collective.Comm) error {
				_, err := NewStore(c, book, localFeatures(x, book, c.Rank()), tc.o)
				return err
			})
			require.ErrorContains(t, err, tc.want)
		})
	}
	err := inproc.Run(1, opts, func(c collective.Comm) error {
		_, err := NewStore(c, book, x, StoreOptions{})
		return err
	})
	require.ErrorContains(t, err, "store over 1 ranks for a book of 2 parts")
	err = inproc.Run(2, opts, func(c collective.Comm) error {
		_, err := NewStore(c, book, x, StoreOptions{})
		return err
	})
	require.ErrorContains(t, err, "owns 5 vertices but has 10 feature rows")
}

// volumeRequests returns the ids each of q ranks asks for in the volume
// tests: 50 + 10k random vertices of n for rank k, repeats included.
func volumeRequests(n, q int) [][]int64 {
	reqs := make([][]int64, q)
	r := rand.New(rand.NewPCG(8, 8))
	for k := range reqs {
		for range 50 + 10*k {
			reqs[k] = append(reqs[k], r.Int64N(int64(n)))
		}
	}
	return reqs
}

// fetchBytes runs fn under the phase "fetch" on cm and returns the bytes
// this rank sent in it.
func fetchBytes(cm collective.Comm, fn func() error) (int64, error) {
	before := collective.SnapshotOf(cm)
	restore := collective.SetPhase(cm, "fetch")
	err := fn()
	restore()
	return collective.SnapshotOf(cm).Sub(before).Phase("fetch").SentBytes, err
}

// A fetch large enough to be planned and gathered on several goroutines
// (more than resolveSplit ids and gatherSplit bytes of rows per goroutine,
// GOMAXPROCS raised to 4) returns the same rows and counts as the
// reference, with own, cached and remote rows mixed and repeated, in both
// dtypes, with the gather's prefetch instructions (amd64) and with its
// loads ahead.
func TestStoreGatherSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer func() { usePrefetch = prefetch.Enabled }()
	const n, f = 12000, 64 // 256- or 128-byte rows: 3 MiB or 1.5 MiB of own rows per rank
	x := globalFeatures(n, f)
	for _, tc := range []struct {
		name     string
		q        int
		dtype    DType
		cache    int
		prefetch bool
	}{
		{"np1 f32", 1, F32, 0, true},
		{"np1 f16", 1, F16, 0, true},
		{"np2 f32 cached", 2, F32, 1000, true},
		{"np3 f16 cached", 3, F16, 500, true},
		{"np1 f32 loads", 1, F32, 0, false},
		{"np3 f16 cached loads", 3, F16, 500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prefetch && !prefetch.Enabled {
				t.Skip("no prefetch instructions here")
			}
			usePrefetch = tc.prefetch
			book := partition.Random(n, tc.q, 3)
			storeRun(t, tc.q, 1, book, x, func(rank int) StoreOptions {
				return StoreOptions{DType: tc.dtype, Score: vecOf(positive(n, rank)), CacheRows: tc.cache}
			}, func(rank int, _ collective.Comm, s *Store) error {
				r := rand.New(rand.NewPCG(7, uint64(rank)))
				ids := make([]int64, 3*n) // every vertex about three times: over 2·resolveSplit ids
				for i := range ids {
					ids[i] = r.Int64N(n)
				}
				got, cnt, err := s.Fetch(ids)
				if err != nil {
					return err
				}
				if want := countsOf(ids, book, rank, s); cnt != want {
					return fmt.Errorf("counts: got %+v want %+v", cnt, want)
				}
				return sameRows(got, x, ids, tc.dtype == F16)
			})
		})
	}
}

// BenchmarkStoreFetch measures the gather of a fetch served from the
// store's own rows (one rank, as at np 1): ids distinct random vertices of
// n (a minibatch's input layer) with f float32 features. Bytes are the
// rows gathered, to compare with a memmove's rate.
func BenchmarkStoreFetch(b *testing.B) {
	for _, bc := range []struct {
		ids, f int
		n      int64
	}{
		{1 << 16, 128, 1 << 20},
	} {
		for _, pf := range []bool{false, true} {
			usePrefetch = pf && prefetch.Enabled
			b.Run(fmt.Sprintf("p=1/ids=%d/f=%d/n=%d/prefetch=%v", bc.ids, bc.f, bc.n, pf), func(b *testing.B) {
				book := partition.Block(bc.n, 1)
				x := dense.New(int(bc.n), bc.f)
				r := rand.New(rand.NewPCG(1, 2))
				for i := range x.Data {
					x.Data[i] = r.Float32()
				}
				ids := r.Perm(int(bc.n))[:bc.ids]
				req := make([]int64, len(ids))
				for i, v := range ids {
					req[i] = int64(v)
				}
				b.SetBytes(int64(bc.ids * bc.f * 4))
				b.ReportAllocs()
				err := inproc.Run(1, opts, func(c collective.Comm) error {
					s, err := NewStore(c, book, x, StoreOptions{})
					if err != nil {
						return err
					}
					var dst *dense.Matrix
					b.ResetTimer()
					for range b.N {
						if dst, _, err = s.FetchTo(dst, req); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		}
		usePrefetch = prefetch.Enabled
	}
}
