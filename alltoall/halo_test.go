package alltoall

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// haloChunks returns, for rank k, three random lists of vertices of n
// (repeats within and across lists, some empty), as chunks of layer-wise
// inference read them; every rank has as many, since each is fetched
// collectively.
func haloChunks(n int64, rank int) [][]int64 {
	r := rand.New(rand.NewPCG(uint64(rank), 17))
	chunks := make([][]int64, 3)
	for i := range chunks {
		chunks[i] = make([]int64, r.IntN(50))
		for j := range chunks[i] {
			chunks[i][j] = r.Int64N(n)
		}
	}
	return chunks
}

// The rows gathered from a store and a halo fetched once are bitwise the
// rows a fetch of each chunk returns (dense f32 and f16, sparse with values
// and patterns, as dense and as sparse rows), for every replication factor
// and cache; the halo holds exactly the distinct vertices of the chunks
// the store does not hold.
func TestHaloGatherMatchesFetch(t *testing.T) {
	const n, f = 300, 7
	x := globalFeatures(n, f)
	for _, kind := range []string{"f32", "f16", "sparse", "pattern"} {
		xs := sparseFeatures(n, f, kind == "pattern")
		for _, q := range []int{1, 2, 3} {
			for _, c := range []int{1, 2} {
				book := unevenBook(t, rand.New(rand.NewPCG(uint64(q), 5)), n, q, false)
				for _, alpha := range []float64{0, 0.3} {
					t.Run(fmt.Sprintf("%s_q%d_c%d_a%g", kind, q, c, alpha), func(t *testing.T) {
						k := int(alpha * n / float64(q))
						optsOf := func(rank int) StoreOptions {
							o := StoreOptions{Score: vecOf(scores(CacheVIP, n, rank)), CacheRows: k}
							if kind == "f16" {
								o.DType = F16
							}
							return o
						}
						check := func(rank int, _ collective.Comm, s *Store) error {
							chunks := haloChunks(n, rank)
							all := slices.Concat(chunks...)
							h, cnt, err := s.FetchHalo(nil, all)
							if err != nil {
								return err
							}
							var want []int64
							for _, g := range distinct(all) {
								if book.Owner(g) != rank/c && !s.Cached(g) {
									want = append(want, g)
								}
							}
							slices.Sort(want)
							if !slices.Equal(h.ids, want) || h.Rows() != len(want) || cnt.Remote != int64(len(want)) {
								return fmt.Errorf("rank %d: halo %v (remote %d), want %v", rank, h.ids, cnt.Remote, want)
							}
							var dbuf *dense.Matrix
							var sbuf *sparse.Matrix[float32]
							for _, ids := range chunks {
								ref, _, err := s.Fetch(ids)
								if err != nil {
									return err
								}
								dbuf = s.GatherTo(dbuf, h, ids)
								if dbuf.Rows != ref.Rows || !slices.Equal(dbuf.Data[:ref.Rows*f], ref.Data[:ref.Rows*f]) {
									return fmt.Errorf("rank %d: gathered dense rows differ from the fetch's", rank)
								}
								if !s.Sparse() {
									continue
								}
								sref, _, err := s.FetchSparse(ids)
								if err != nil {
									return err
								}
								sbuf = s.GatherSparseTo(sbuf, h, ids)
								if !slices.Equal(sbuf.Indptr, sref.Indptr) || !slices.Equal(sbuf.Indices, sref.Indices) ||
									!slices.Equal(sbuf.Values, sref.Values) || (sbuf.Values == nil) != (sref.Values == nil) {
									return fmt.Errorf("rank %d: gathered sparse rows differ from the fetch's", rank)
								}
							}
							return nil
						}
						if kind == "sparse" || kind == "pattern" {
							sparseStoreRun(t, q, c, book, func(part int) *sparse.Matrix[float32] {
								return sparse.SelectRows(xs, book.Owned(part))
							}, optsOf, check)
						} else {
							storeRun(t, q, c, book, x, optsOf, check)
						}
					})
				}
			}
		}
	}
}

// FetchHalo sends what Fetch's closed form says for the distinct halo
// rows: 8(q−1) + 8·R + w·F·S, R the halo rows this rank asks for and S
// the distinct halo rows of the other ranks it owns, however often the
// chunks repeat a vertex.
func TestHaloVolume(t *testing.T) {
	const n, f = 240, 5
	x := globalFeatures(n, f)
	for _, q := range []int{2, 3} {
		book := unevenBook(t, rand.New(rand.NewPCG(3, uint64(q))), n, q, true)
		for _, dt := range []DType{F32, F16} {
			for _, alpha := range []float64{0, 0.3} {
				t.Run(fmt.Sprintf("q%d_%s_a%g", q, dt, alpha), func(t *testing.T) {
					k := int(alpha * n / float64(q))
					score := func(rank int) *sparse.Vec { return vecOf(positive(n, rank)) }
					halo := make([][]int64, q) // each rank's halo, derived without the store
					for o := range q {
						cache := SelectCache(book, o, score(o), k)
						for _, g := range distinct(slices.Concat(haloChunks(n, o)...)) {
							if book.Owner(g) != o && !slices.Contains(cache, g) {
								halo[o] = append(halo[o], g)
							}
						}
					}
					storeRun(t, q, 1, book, x, func(rank int) StoreOptions {
						return StoreOptions{DType: dt, Score: score(rank), CacheRows: k}
					}, func(rank int, cm collective.Comm, s *Store) error {
						sent, err := fetchBytes(cm, func() error {
							_, _, err := s.FetchHalo(nil, slices.Concat(haloChunks(n, rank)...))
							return err
						})
						if err != nil {
							return err
						}
						w := int64(4)
						if dt == F16 {
							w = 2
						}
						var served int64
						for o := range q {
							if o != rank {
								served += ownedBy(halo[o], book, rank)
							}
						}
						want := 8*int64(q-1) + 8*int64(len(halo[rank])) + w*f*served
						if sent != want {
							return fmt.Errorf("rank %d: sent %d bytes, want %d", rank, sent, want)
						}
						return nil
					})
				})
			}
		}
	}
}

// ownedBy counts the ids book gives to rank.
func ownedBy(ids []int64, book *partition.Book, rank int) int64 {
	var k int64
	for _, g := range ids {
		if book.Owner(g) == rank {
			k++
		}
	}
	return k
}
