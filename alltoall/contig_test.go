package alltoall

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// selectDense is SelectCache as it was over a dense score of every vertex,
// the reference the sparse selection must reproduce.
func selectDense(book *partition.Book, part int, score []float64, k int) []int64 {
	if score == nil || k <= 0 {
		return nil
	}
	var cand []int64
	for gid, x := range score {
		if x > 0 && book.Owner(int64(gid)) != part {
			cand = append(cand, int64(gid))
		}
	}
	slices.SortFunc(cand, func(a, b int64) int {
		if c := cmp.Compare(score[b], score[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return slices.Clip(cand[:min(k, len(cand))])
}

// layoutDense is the resident order a store had under a dense score: own
// rows and cache hottest first, ties by id.
func layoutDense(book *partition.Book, part int, score []float64, cache []int64) []int64 {
	order := append(book.Owned(part), cache...)
	slices.SortStableFunc(order, func(a, b int64) int {
		if c := cmp.Compare(score[b], score[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// contiguousPair returns a book with contiguous parts of random sizes (some
// empty) twice: made by Contiguous (offsets only) and as a Part array.
func contiguousPair(t testing.TB, r *rand.Rand, n int64, q int) (contig, arr *partition.Book) {
	offsets := make([]int64, q+1)
	for i := 1; i < q; i++ {
		offsets[i] = r.Int64N(n + 1)
	}
	offsets[q] = n
	slices.Sort(offsets)
	contig, err := partition.Contiguous(offsets, "test")
	require.NoError(t, err)
	part := make([]int32, n)
	for p := range q {
		for g := offsets[p]; g < offsets[p+1]; g++ {
			part[g] = int32(p)
		}
	}
	arr, err = partition.New(part, q, "test")
	require.NoError(t, err)
	return contig, arr
}

// The sparse scores select the cache and lay out the resident rows exactly
// as the dense scores of every vertex did, with ties, zeros and negative
// scores, listed zeros or not.
func TestSparseScoresMatchDense(t *testing.T) {
	const n = 400
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 30 {
		q := 1 + trial%4
		book := unevenBook(t, r, n, q, trial%3 == 0)
		if trial%2 == 1 {
			book, _ = contiguousPair(t, r, n, q)
		}
		score := make([]float64, n)
		listed := &sparse.Vec{N: n} // every vertex listed, zeros included
		for v := range score {
			switch r.IntN(5) {
			case 0: // missing
			case 1:
				score[v] = -float64(r.IntN(3)) // negative or zero
			case 2:
				score[v] = float64(r.IntN(4)) // ties
			default:
				score[v] = r.Float64()
			}
			listed.Indices = append(listed.Indices, int64(v))
			listed.Values = append(listed.Values, score[v])
		}
		for _, k := range []int{0, 1, 17, 150, n} {
			for part := range q {
				want := selectDense(book, part, score, k)
				require.Equal(t, want, SelectCache(book, part, vecOf(score), k), "trial %d k %d part %d", trial, k, part)
				require.Equal(t, want, SelectCache(book, part, listed, k), "trial %d k %d part %d (listed zeros)", trial, k, part)
			}
		}
		// The resident layout of a store on every rank.
		k := 60
		err := inproc.Run(q, opts, func(c collective.Comm) error {
			x := globalFeatures(n, 2)
			s, err := NewStore(c, book, localFeatures(x, book, c.Rank()), StoreOptions{Score: vecOf(score), CacheRows: k})
			if err != nil {
				return err
			}
			want := layoutDense(book, c.Rank(), score, selectDense(book, c.Rank(), score, k))
			if got := s.Resident(); !slices.Equal(got, want) {
				return fmt.Errorf("rank %d: resident %v, want %v", c.Rank(), got, want)
			}
			return nil
		})
		require.NoError(t, err, "trial %d", trial)
	}
}

// A contiguous book (offsets only) plans and fetches exactly as the same
// assignment given as a Part array: same plans, same rows, same counts,
// same cache and layout, for p = 1..4 ranks.
func TestContiguousBookStore(t *testing.T) {
	const n, f = 250, 3
	x := globalFeatures(n, f)
	for q := 1; q <= 4; q++ {
		t.Run(fmt.Sprint("p", q), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(q), 11))
			contig, arr := contiguousPair(t, r, n, q)
			require.Nil(t, contig.Part)
			reqs := make([][]int64, q)
			for k := range reqs {
				for range 40 + 7*k {
					reqs[k] = append(reqs[k], r.Int64N(n))
				}
				for rank := range q {
					assert.Equal(t, NewPlan(reqs[k], arr, rank), NewPlan(reqs[k], contig, rank))
				}
			}
			for _, dt := range []DType{F32, F16} {
				err := inproc.Run(q, opts, func(c collective.Comm) error {
					rank := c.Rank()
					o := StoreOptions{DType: dt, Score: vecOf(scores(CacheVIP, n, rank)), CacheRows: n / (2 * q), RoundBytes: 64}
					a, err := NewStore(c, arr, localFeatures(x, arr, rank), o)
					if err != nil {
						return err
					}
					b, err := NewStore(c, contig, localFeatures(x, contig, rank), o)
					if err != nil {
						return err
					}
					if !slices.Equal(a.Resident(), b.Resident()) {
						return fmt.Errorf("rank %d: resident %v, want %v", rank, b.Resident(), a.Resident())
					}
					ga, ca, err := a.Fetch(reqs[rank])
					if err != nil {
						return err
					}
					gb, cb, err := b.Fetch(reqs[rank])
					if err != nil {
						return err
					}
					if ca != cb || !slices.Equal(ga.Data, gb.Data) {
						return fmt.Errorf("rank %d: contiguous book fetched %+v, Part book %+v", rank, cb, ca)
					}
					got, err := Fetch(c, reqs[rank], contig, localFeatures(x, contig, rank))
					if err != nil {
						return err
					}
					return sameRows(got, x, reqs[rank], false)
				})
				require.NoError(t, err)
			}
		})
	}
}

// Plans and cache selection over a contiguous book of 2⁴⁰ vertices take
// memory for the ids asked for and the scores listed only.
func TestContiguousBookHuge(t *testing.T) {
	const n = 1 << 40
	book, err := partition.Contiguous([]int64{0, 1 << 38, 1 << 39, n}, "huge")
	require.NoError(t, err)
	ids := []int64{n - 1, 5, 1<<38 + 2, 5, 1<<39 - 1, 1 << 39}
	p := NewPlan(ids, book, 1)
	// Rank 0 serves local row 5; rank 2 rows 0 (gid 2³⁹) and 2³⁹ − 1
	// (gid n − 1); rank 1's own rows are local ids 2 and 2³⁸ − 1.
	assert.Equal(t, []int{1, 0, 2}, p.counts)
	assert.Equal(t, []int64{5, 0, 1<<39 - 1}, p.req)
	assert.Equal(t, []int64{2, 0, ^2, 0, ^(1<<38 - 1), 1}, p.from)
	score := &sparse.Vec{N: n, Indices: []int64{7, 1 << 38, n - 2, n - 1}, Values: []float64{2, 9, 2, 0.5}}
	assert.Equal(t, []int64{7, n - 2, n - 1}, SelectCache(book, 1, score, 5))
	assert.Equal(t, []int64{7, n - 2}, SelectCache(book, 1, score, 2))
}
