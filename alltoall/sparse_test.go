package alltoall

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/dense"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// sparseFeatures returns n sparse rows of f columns with about a fifth of
// the entries nonzero (every seventh row empty), ascending columns and
// distinct values, or a pattern matrix.
func sparseFeatures(n int64, f int, pattern bool) *sparse.Matrix[float32] {
	r := rand.New(rand.NewPCG(uint64(n), uint64(f)))
	a := &sparse.Matrix[float32]{NRows: n, NCols: int64(f), Indptr: make([]int64, n+1), Indices: []int64{}}
	if !pattern {
		a.Values = []float32{}
	}
	for g := range n {
		for j := range f {
			if g%7 != 3 && r.IntN(5) == 0 {
				a.Indices = append(a.Indices, int64(j))
				if !pattern {
					a.Values = append(a.Values, float32(g)+float32(j)/64)
				}
			}
		}
		a.Indptr[g+1] = int64(len(a.Indices))
	}
	return a
}

// denseOf returns the rows of a as a dense matrix.
func denseOf(a *sparse.Matrix[float32]) *dense.Matrix {
	m := dense.New(int(a.NRows), int(a.NCols))
	for i := range int(a.NRows) {
		for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
			m.Row(i)[a.Indices[e]] = 1
			if a.Values != nil {
				m.Row(i)[a.Indices[e]] = a.Values[e]
			}
		}
	}
	return m
}

// sparseStoreRun is storeRun for NewSparseStore: localOf gives each
// part's local rows.
func sparseStoreRun(t *testing.T, q, c int, book *partition.Book, localOf func(part int) *sparse.Matrix[float32],
	optsOf func(rank int) StoreOptions, fn func(rank int, cm collective.Comm, s *Store) error) {
	t.Helper()
	require.Equal(t, q, book.Parts)
	err := inproc.Run(q*c, opts, func(cm collective.Comm) error {
		cm = collective.WithStats(cm, nil)
		g, err := collective.NewGrid(cm, q, c)
		if err != nil {
			return err
		}
		s, err := NewSparseStore(g.ColComm, book, localOf(g.Row), optsOf(cm.Rank()))
		if err != nil {
			return err
		}
		return fn(cm.Rank(), cm, s)
	})
	require.NoError(t, err)
}

// sameSparse checks that got is exactly the rows ids of x: the same
// columns, and the same values (or none for a pattern).
func sameSparse(got, x *sparse.Matrix[float32], ids []int64) error {
	want := sparse.SelectRows(x, ids)
	if len(want.Indices) == 0 {
		want.Indices = got.Indices[:0]
	}
	if want.Values != nil && len(want.Values) == 0 {
		want.Values = got.Values[:0]
	}
	if got.NRows != want.NRows || got.NCols != want.NCols || !slices.Equal(got.Indptr, want.Indptr) ||
		!slices.Equal(got.Indices, want.Indices) || (got.Values == nil) != (want.Values == nil) || !slices.Equal(got.Values, want.Values) {
		return fmt.Errorf("fetched %+v, want %+v", got, want)
	}
	return nil
}

// The sparse rows a sparse Store fetches are exactly those of the whole
// matrix, values or pattern, for every replication factor, cache policy
// and size; the dense Fetch of the same store gives them dense; the
// counts add up and the cache is SelectCache's, as for dense rows.
func TestSparseStoreMatchesReference(t *testing.T) {
	const n, f = 300, 9
	for _, pattern := range []bool{false, true} {
		x := sparseFeatures(n, f, pattern)
		xd := denseOf(x)
		for _, q := range []int{1, 2, 3} {
			for _, c := range []int{1, 2} {
				book := unevenBook(t, rand.New(rand.NewPCG(uint64(q), 5)), n, q, false)
				for _, policy := range []CachePolicy{CacheNone, CacheDegree, CacheVIP} {
					for _, alpha := range []float64{0, 0.05, 0.3, 10} {
						if policy == CacheNone && alpha > 0 {
							continue
						}
						name := fmt.Sprintf("pattern%v_q%d_c%d_%s_a%g", pattern, q, c, policy, alpha)
						t.Run(name, func(t *testing.T) {
							k := int(alpha * n / float64(q))
							sparseStoreRun(t, q, c, book, func(part int) *sparse.Matrix[float32] {
								return sparse.SelectRows(x, book.Owned(part))
							}, func(rank int) StoreOptions {
								return StoreOptions{Score: vecOf(scores(policy, n, rank)), CacheRows: k, GPUFrac: 0.25}
							}, func(rank int, _ collective.Comm, s *Store) error {
								score := scores(policy, n, rank)
								part := rank / c
								want := SelectCache(book, part, vecOf(score), k)
								if got := s.Resident(); !slices.Equal(keepRemote(got, book, part), sortedByScore(want, score)) {
									return fmt.Errorf("rank %d: cached %v, want %v", rank, keepRemote(got, book, part), want)
								}
								if !s.Sparse() || s.DType() != F32 {
									return fmt.Errorf("rank %d: Sparse %v, DType %s", rank, s.Sparse(), s.DType())
								}
								r := rand.New(rand.NewPCG(uint64(rank), 7))
								var buf *sparse.Matrix[float32]
								for range 3 {
									ids := make([]int64, r.IntN(60))
									for i := range ids {
										ids[i] = r.Int64N(n)
									}
									got, cnt, err := s.FetchSparseTo(buf, ids)
									if err != nil {
										return err
									}
									buf = got
									if err := sameSparse(got, x, ids); err != nil {
										return fmt.Errorf("rank %d: %w", rank, err)
									}
									if wc := countsOf(ids, book, part, s); cnt != wc {
										return fmt.Errorf("rank %d: counts %+v, want %+v", rank, cnt, wc)
									}
									gd, dcnt, err := s.Fetch(ids)
									if err != nil {
										return err
									}
									if err := sameRows(gd, xd, ids, false); err != nil || dcnt != cnt {
										return fmt.Errorf("rank %d: dense fetch: %v, counts %+v want %+v", rank, err, dcnt, cnt)
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

// The bytes a sparse fetch sends follow the closed form of FetchSparse:
// 8(q−1)(1+k) + 8·R + Σ (4 + 4w·nnz) over the rows served, for pairs and
// patterns, with and without a cache, in one round and in several.
func TestSparseStoreVolume(t *testing.T) {
	const n, f, q = 240, 12, 4
	book := unevenBook(t, rand.New(rand.NewPCG(3, 3)), n, q, true)
	reqs := volumeRequests(n, q)
	for _, pattern := range []bool{false, true} {
		x := sparseFeatures(n, f, pattern)
		var longest int64
		for g := range int64(n) {
			longest = max(longest, x.Degree(g))
		}
		w := int64(2)
		if pattern {
			w = 1
		}
		for _, alpha := range []float64{0, 0.1, 1, 4} {
			for _, roundBytes := range []int64{0, 1} {
				t.Run(fmt.Sprintf("pattern%v_a%g_round%d", pattern, alpha, roundBytes), func(t *testing.T) {
					k := int(alpha * n / q)
					// Rounds: RoundBytes 1 means one row per requester and
					// round, so as many rounds as the largest part has rows.
					rounds := int64(1)
					if roundBytes > 0 {
						rounds = int64(slices.Max(book.Sizes()))
					}
					sparseStoreRun(t, q, 1, book, func(part int) *sparse.Matrix[float32] {
						return sparse.SelectRows(x, book.Owned(part))
					}, func(rank int) StoreOptions {
						return StoreOptions{Score: vecOf(positive(n, rank)), CacheRows: k, RoundBytes: roundBytes}
					}, func(rank int, cm collective.Comm, s *Store) error {
						var got *sparse.Matrix[float32]
						sent, err := fetchBytes(cm, func() (err error) { got, _, err = s.FetchSparse(reqs[rank]); return })
						if err != nil {
							return err
						}
						misses := make([][]int64, q)
						for o := range q {
							cache := SelectCache(book, o, vecOf(positive(n, o)), k)
							for _, g := range reqs[o] {
								if !slices.Contains(cache, g) {
									misses[o] = append(misses[o], g)
								}
							}
						}
						var rowBytes int64
						for o := range q {
							if o == rank {
								continue
							}
							for _, g := range distinct(misses[o]) {
								if book.Owner(g) == rank {
									rowBytes += 4 + 4*w*x.Degree(g)
								}
							}
						}
						wantSent := 8*int64(q-1)*(1+rounds) + 8*remoteOf(misses[rank], book, rank) + rowBytes
						if sent != wantSent {
							return fmt.Errorf("rank %d: sent %d bytes, want %d", rank, sent, wantSent)
						}
						return sameSparse(got, x, reqs[rank])
					})
				})
			}
		}
	}
}

// The sparse rows of a fetch are far fewer bytes than the dense ones: at
// a fifth of the entries nonzero, pairs take at most about 2/5 of the dense
// row bytes, and a pattern a fifth.
func TestSparseStoreFewerBytes(t *testing.T) {
	const n, f, q = 200, 40, 2
	book := partition.Block(n, q)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i)
	}
	bytesOf := func(build func(cm collective.Comm) (*Store, error)) int64 {
		var sent int64
		err := inproc.Run(q, opts, func(cm collective.Comm) error {
			cm = collective.WithStats(cm, nil)
			s, err := build(cm)
			if err != nil {
				return err
			}
			before := collective.SnapshotOf(cm)
			restore := collective.SetPhase(cm, "fetch")
			_, _, err = s.Fetch(ids)
			restore()
			if cm.Rank() == 0 {
				sent = collective.SnapshotOf(cm).Sub(before).Phase("fetch").SentBytes
			}
			return err
		})
		require.NoError(t, err)
		return sent
	}
	for _, pattern := range []bool{false, true} {
		x := sparseFeatures(n, f, pattern)
		dn := bytesOf(func(cm collective.Comm) (*Store, error) {
			return NewStore(cm, book, localFeatures(denseOf(x), book, cm.Rank()), StoreOptions{})
		})
		sp := bytesOf(func(cm collective.Comm) (*Store, error) {
			return NewSparseStore(cm, book, sparse.SelectRows(x, book.Owned(cm.Rank())), StoreOptions{})
		})
		limit := 0.45
		if pattern {
			limit = 0.25
		}
		assert.Less(t, float64(sp), limit*float64(dn), "pattern %v: sparse %d bytes, dense %d", pattern, sp, dn)
	}
}

// If one rank holds a pattern matrix and another values, every store has
// values (1 for the pattern's entries) and the fetches agree.
func TestSparseStoreMixedPattern(t *testing.T) {
	const n, f, q = 60, 8, 2
	x := sparseFeatures(n, f, false)
	book := partition.Block(n, q)
	ones := sparse.SelectRows(x, book.Owned(0))
	ones.Values = nil
	want := denseOf(x)
	for _, gid := range book.Owned(0) {
		for j, v := range want.Row(int(gid)) {
			if v != 0 {
				want.Row(int(gid))[j] = 1
			}
		}
	}
	ids := []int64{59, 0, 30, 1, 31, 0}
	sparseStoreRun(t, q, 1, book, func(part int) *sparse.Matrix[float32] {
		if part == 0 {
			return ones
		}
		return sparse.SelectRows(x, book.Owned(part))
	}, func(int) StoreOptions { return StoreOptions{} }, func(rank int, _ collective.Comm, s *Store) error {
		got, _, err := s.FetchSparse(ids)
		if err != nil {
			return err
		}
		if got.Values == nil {
			return fmt.Errorf("rank %d: a pattern result", rank)
		}
		return sameRows(denseOf(got), want, ids, false)
	})
}

// The resident sparse rows are laid out hottest first, as dense ones, and
// the memory and tiers count the nonzeros.
func TestSparseStoreLayout(t *testing.T) {
	const n, f, q = 100, 10, 2
	x := sparseFeatures(n, f, false)
	book := partition.Block(n, q)
	sparseStoreRun(t, q, 1, book, func(part int) *sparse.Matrix[float32] {
		return sparse.SelectRows(x, book.Owned(part))
	}, func(rank int) StoreOptions {
		return StoreOptions{Score: vecOf(positive(n, rank)), CacheRows: 10, GPUFrac: 0.5}
	}, func(rank int, _ collective.Comm, s *Store) error {
		order := s.Resident()
		if want := sortedByScore(order, positive(n, rank)); !slices.Equal(order, want) {
			return fmt.Errorf("rank %d: resident %v not hottest first", rank, order)
		}
		var nnz, gpuNNZ int64
		for i, g := range order {
			nnz += x.Degree(g)
			if i < len(order)/2 {
				gpuNNZ += x.Degree(g)
			}
		}
		tiers := s.Tiers()
		wantTiers := []Tier{{"gpu", len(order) / 2, int64(len(order)/2)*8 + 8*gpuNNZ},
			{"host", len(order) - len(order)/2, int64(len(order)-len(order)/2)*8 + 8*(nnz-gpuNNZ)}}
		if !reflect.DeepEqual(tiers, wantTiers) {
			return fmt.Errorf("rank %d: tiers %+v, want %+v", rank, tiers, wantTiers)
		}
		wantBytes := int64(len(order)+1)*8 + 8*nnz + int64(len(order))*8 + int64(s.OwnRows())*4 + int64(s.CachedRows())*12
		if s.Bytes() != wantBytes {
			return fmt.Errorf("rank %d: %d bytes, want %d", rank, s.Bytes(), wantBytes)
		}
		return nil
	})
}

func TestSparseStoreErrors(t *testing.T) {
	const n = 10
	x := sparseFeatures(n, 4, false)
	book := partition.Block(n, 1)
	err := inproc.Run(1, opts, func(cm collective.Comm) error {
		_, err := NewSparseStore(cm, book, x, StoreOptions{DType: F16})
		if err == nil || !assert.Contains(t, err.Error(), "f16") {
			return fmt.Errorf("f16: got %v", err)
		}
		bad := *x
		bad.Indices = slices.Clone(x.Indices)
		bad.Indices[0] = 9
		if _, err := NewSparseStore(cm, book, &bad, StoreOptions{}); err == nil {
			return fmt.Errorf("a column out of range was accepted")
		}
		if _, err := NewSparseStore(cm, book, sparse.SelectRows(x, []int64{0, 1}), StoreOptions{}); err == nil {
			return fmt.Errorf("2 rows for 10 owned vertices were accepted")
		}
		ds, err := NewStore(cm, book, denseOf(x), StoreOptions{})
		if err != nil {
			return err
		}
		if _, _, err := ds.FetchSparse([]int64{0}); err == nil {
			return fmt.Errorf("FetchSparse of a dense store succeeded")
		}
		return nil
	})
	require.NoError(t, err)
}

// BenchmarkStoreFetchSparse fetches the input rows of a minibatch from a
// one-rank sparse store at physics-like shapes (34,493 rows of 8,415
// columns, 40 valued entries a row; 24,000 rows a fetch, in random order),
// where every row is resident and the fetch is the copy of its rows.
func BenchmarkStoreFetchSparse(b *testing.B) {
	const n, cols, per, ids = 34493, 8415, 40, 24000
	r := rand.New(rand.NewPCG(1, 2))
	x := &sparse.Matrix[float32]{NRows: n, NCols: cols, Indptr: make([]int64, n+1)}
	for i := range n {
		for _, c := range r.Perm(cols)[:per] {
			x.Indices = append(x.Indices, int64(c))
			x.Values = append(x.Values, 1.0/per)
		}
		slices.Sort(x.Indices[i*per:])
		x.Indptr[i+1] = int64(len(x.Indices))
	}
	req := make([]int64, ids)
	for i := range req {
		req[i] = int64(r.IntN(n))
	}
	b.SetBytes(int64(ids * per * 12))
	b.ReportAllocs()
	err := inproc.Run(1, opts, func(c collective.Comm) error {
		s, err := NewSparseStore(c, partition.Block(n, 1), x, StoreOptions{})
		if err != nil {
			return err
		}
		var dst *sparse.Matrix[float32]
		b.ResetTimer()
		for range b.N {
			if dst, _, err = s.FetchSparseTo(dst, req); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(b, err)
}
