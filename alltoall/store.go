package alltoall

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/f16"
	"gnnmpi/internal/prefetch"
	"gnnmpi/partition"
	"gnnmpi/sparse"
)

// DType is the storage type of a Store's rows (StoreOptions.DType); its
// value is the name flags and metrics use.
type DType string

// Storage types of a Store's rows.
const (
	F32 DType = "f32" // float32, as loaded
	F16 DType = "f16" // IEEE half precision: half the memory and the bytes on the wire
)

// CachePolicy names what score ranks the remote vertices a rank caches; its
// value is the name flags and metrics use.
type CachePolicy string

// Cache policies. The scores themselves come from the caller (train
// computes them); the names are shared so that every layer spells them
// alike.
const (
	CacheNone   CachePolicy = "none"   // no cache
	CacheDegree CachePolicy = "degree" // in-degree
	CacheVIP    CachePolicy = "vip"    // vertex-inclusion probability (SALIENT++)
	CacheSim    CachePolicy = "sim"    // access counts of simulated epochs of the sampler
)

// StoreOptions configure a Store.
type StoreOptions struct {
	// DType is F32 ("" means F32) or F16.
	DType DType
	// Score says, per global vertex, how often this rank reads its row
	// (higher is hotter; NaN is not allowed): a sparse vector of length
	// n (the book's vertex count) listing the vertices this rank knows, 0
	// for the others. The cache holds the CacheRows remote vertices of
	// highest positive score (SelectCache), and all resident rows, own and
	// cached, are laid out hottest first. nil keeps the own rows in
	// local-id order and allows no cache.
	Score *sparse.Vec
	// CacheRows is the number of remote rows to cache (at most).
	CacheRows int
	// GPUFrac is the fraction of the resident rows, hottest first, that
	// Tiers counts as the device tier. The Store itself keeps every row in
	// host memory; gnnmpi/gpu/tier places the tiers on a GPU.
	GPUFrac float64
	// RoundBytes bounds the row bytes a fetch moves per rank and direction
	// in one Alltoallv call (0 means DefaultRoundBytes; < 0, no bound): the
	// rows go in as many calls as that bound needs for the largest part,
	// so that a rank stages at most about 2·RoundBytes of rows at a time
	// beside its result, whatever the size of the fetch.
	RoundBytes int64
}

// DefaultRoundBytes is the default StoreOptions.RoundBytes: 64 MiB.
const DefaultRoundBytes = 64 << 20

// Counts describe one fetch on one rank: Rows positions asked for, of which
// Local were this rank's own rows and Hits were served by its cache; Remote
// distinct rows came from other ranks. Local + Hits + (positions of remote
// rows) = Rows.
type Counts struct {
	Rows, Local, Hits, Remote int64
}

// Add returns the element-wise sum of a and b.
func (a Counts) Add(b Counts) Counts {
	return Counts{a.Rows + b.Rows, a.Local + b.Local, a.Hits + b.Hits, a.Remote + b.Remote}
}

// Tier is a contiguous range of a Store's resident rows destined for one
// kind of memory.
type Tier struct {
	Name  string // "gpu" or "host"
	Rows  int    // resident rows [start, start+Rows) in hottest-first order
	Bytes int64  // storage of those rows
}

// Store is one rank's share of a feature matrix partitioned by a
// partition.Book, plus a static cache of rows owned elsewhere, and
// the fetch that serves a minibatch's rows from them.
//
// The communicator of a Store is its replica group: one rank per part of
// the book (rank q holds part q). With c-fold replication the p ranks form
// p/c-part books and c groups, each holding every row once (the grid
// columns of a (p/c)×c collective.Grid, as in the 1.5D layout); a rank
// fetches only within its group.
//
// The resident rows (the rank's own part and its cache) are held in one
// table ordered hottest first by the score, in float32 or half precision,
// so that the hot rows are contiguous: the first Tiers()[0].Rows of them
// would form a device tier (counted only; nothing is placed on a GPU yet).
//
// A Store is not safe for concurrent use.
type Store struct {
	c     collective.Comm
	book  *partition.Book
	part  int
	cols  int
	half  bool
	f32   []float32 // resident rows, row-major (half == false)
	f16   []uint16  // resident rows, row-major (half == true)
	local []int32   // local id → resident row
	// identity: local[lid] = lid for every lid (the own rows first, in
	// local-id order: a store without scores), so plan need not read local.
	identity bool
	// cached holds the cached global ids ascending, slot the resident row
	// of each.
	cached []int64
	slot   []int32
	order  []int64 // resident row → global id (hottest first)
	gpu    int     // resident rows in the device tier
	round  round   // how a fetch sends its rows
	// roundBytes is StoreOptions.RoundBytes (0 replaced by the default).
	roundBytes int64
	// sp holds the resident rows instead of f32 and f16 when the store
	// was built by NewSparseStore.
	sp *sparseStore
	// wire32 and wire16 stage the rows of a fetch between calls, reused
	// from one fetch to the next.
	wire32 []float32
	wire16 []uint16
}

// NewStore builds rank c.Rank()'s store of the part book assigns it, whose
// rows are local (row k is the vertex with local id k), and fills its
// cache with one exchange among the ranks of c, uncounted under any phase
// of its own (the caller's phase applies).
//
// NewStore is collective over c: every rank calls it with the same book
// and options of the same kind (each rank may have its own scores).
// It returns an error if c's size is not the book's number of parts, local
// does not have the part's rows, the options are invalid, or
// communication fails.
func NewStore(c collective.Comm, book *partition.Book, local *dense.Matrix, o StoreOptions) (*Store, error) {
	return newDenseStore(c, book, local.Rows, local.Cols, o, func(s *Store) {
		for lid := range local.Rows {
			s.put(int(s.local[lid]), local.Row(lid))
		}
	})
}

// NewStoreHalf is NewStore for local rows held in half precision (as a
// float16 feature file stores them): an F16 store copies the words as
// they are, with no float32 copy of the rows, and an F32 store widens each
// row once into its table. The stores equal NewStore's of the same rows
// widened, word for word: half values are exact in float32 and round back
// to themselves.
func NewStoreHalf(c collective.Comm, book *partition.Book, local *dense.Half, o StoreOptions) (*Store, error) {
	return newDenseStore(c, book, local.Rows, local.Cols, o, func(s *Store) {
		f := s.cols
		for lid := range local.Rows {
			r := int(s.local[lid])
			if s.half {
				copy(s.f16[r*f:(r+1)*f], local.Row(lid))
			} else {
				f16.Decode(s.f32[r*f:(r+1)*f], local.Row(lid))
			}
		}
	})
}

// newDenseStore builds a dense store of rows×cols local rows, which fill
// puts into the allocated table, then fills the cache (NewStore).
func newDenseStore(c collective.Comm, book *partition.Book, rows, cols int, o StoreOptions, fill func(*Store)) (*Store, error) {
	s, cache, err := newLayout(c, book, rows, cols, o)
	if err != nil {
		return nil, err
	}
	s.round = roundOf(book.Parts, slices.Max(book.Sizes()), s.rowBytes(), s.roundBytes)

	f := s.cols
	if s.half {
		s.f16 = make([]uint16, len(s.order)*f)
	} else {
		s.f32 = make([]float32, len(s.order)*f)
	}
	fill(s)

	// Fill the cache: one exchange of the cached rows in wire format.
	p := newPlan(cache, book, s.part, func(int64, int, int64) (int64, bool) { return 0, false })
	if s.half {
		err = receive(s, p, &s.wire16, s.serve16, func(i int, row []uint16) {
			r, _ := s.lookup(cache[i])
			copy(s.f16[int(r)*f:int(r+1)*f], row)
		})
	} else {
		err = receive(s, p, &s.wire32, s.serve32, func(i int, row []float32) {
			r, _ := s.lookup(cache[i])
			copy(s.f32[int(r)*f:int(r+1)*f], row)
		})
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// newLayout checks the options of a store over c for book whose rank
// holds rows local rows of cols features, selects its cache and lays out
// its resident rows (order, local, cached and slot, the device tier); the
// caller fills in the rows and the rounds. It returns the store and the
// cached vertices, hottest first. It does not communicate.
func newLayout(c collective.Comm, book *partition.Book, rows, cols int, o StoreOptions) (*Store, []int64, error) {
	if c.Size() != book.Parts {
		return nil, nil, fmt.Errorf("alltoall: store over %d ranks for a book of %d parts", c.Size(), book.Parts)
	}
	part := c.Rank()
	owned := book.Owned(part)
	switch {
	case rows != len(owned):
		return nil, nil, fmt.Errorf("alltoall: rank %d owns %d vertices but has %d feature rows", part, len(owned), rows)
	case o.DType != "" && o.DType != F32 && o.DType != F16:
		return nil, nil, fmt.Errorf("alltoall: unknown feature dtype %q (want %s or %s)", o.DType, F32, F16)
	case o.Score != nil && o.Score.N != book.NumNodes():
		return nil, nil, fmt.Errorf("alltoall: scores for %d vertices, the book has %d", o.Score.N, book.NumNodes())
	case o.Score == nil && o.CacheRows > 0:
		return nil, nil, fmt.Errorf("alltoall: a cache of %d rows needs scores", o.CacheRows)
	case o.CacheRows < 0:
		return nil, nil, fmt.Errorf("alltoall: cache of %d rows", o.CacheRows)
	case !(o.GPUFrac >= 0 && o.GPUFrac <= 1):
		return nil, nil, fmt.Errorf("alltoall: GPU fraction %v outside [0, 1]", o.GPUFrac)
	}
	if o.Score != nil {
		if err := o.Score.Validate(); err != nil {
			return nil, nil, fmt.Errorf("alltoall: scores: %w", err)
		}
	}
	cache := SelectCache(book, part, o.Score, o.CacheRows)
	s := &Store{c: c, book: book, part: part, cols: cols, half: o.DType == F16, roundBytes: o.RoundBytes}

	// Lay out the resident rows hottest first (ties and the unscored case
	// by global id, which keeps the own rows in local-id order).
	s.order = append(owned, cache...)
	if o.Score != nil {
		s.order = byScore(s.order, o.Score)
	}
	s.local = make([]int32, len(owned))
	for row, gid := range s.order {
		if book.Owner(gid) == part {
			s.local[book.LocalID(gid)] = int32(row)
		} else {
			s.cached = append(s.cached, gid)
			s.slot = append(s.slot, int32(row))
		}
	}
	sort.Sort(byGid{s.cached, s.slot})
	s.identity = true
	for lid, row := range s.local {
		if int(row) != lid {
			s.identity = false
			break
		}
	}
	s.gpu = int(o.GPUFrac * float64(len(s.order)))
	if s.roundBytes == 0 {
		s.roundBytes = DefaultRoundBytes
	}
	return s, cache, nil
}

// byScore returns ids ordered hottest first by score, ties by ascending
// id. It sorts ids in place.
func byScore(ids []int64, score *sparse.Vec) []int64 {
	type scored struct {
		gid int64
		x   float64
	}
	all := make([]scored, len(ids))
	for i, gid := range ids {
		all[i] = scored{gid, score.At(gid)}
	}
	slices.SortFunc(all, func(a, b scored) int {
		if c := cmp.Compare(b.x, a.x); c != 0 {
			return c
		}
		return cmp.Compare(a.gid, b.gid)
	})
	for i, e := range all {
		ids[i] = e.gid
	}
	return ids
}

// SelectCache returns the k vertices not owned by part with the highest
// positive score, hottest first (ties to the lower global id); fewer if
// fewer have a positive score. It returns nil for a nil score or k ≤ 0.
// It is pure and takes O(s log s) time for s listed scores.
func SelectCache(book *partition.Book, part int, score *sparse.Vec, k int) []int64 {
	if score == nil || k <= 0 {
		return nil
	}
	var cand []int64
	for i, gid := range score.Indices {
		if score.Values[i] > 0 && book.Owner(gid) != part {
			cand = append(cand, gid)
		}
	}
	return byScore(cand, score)[:min(k, len(cand)):min(k, len(cand))]
}

// byGid sorts cached ids and their slots together.
type byGid struct {
	gid  []int64
	slot []int32
}

func (b byGid) Len() int           { return len(b.gid) }
func (b byGid) Less(i, j int) bool { return b.gid[i] < b.gid[j] }
func (b byGid) Swap(i, j int) {
	b.gid[i], b.gid[j] = b.gid[j], b.gid[i]
	b.slot[i], b.slot[j] = b.slot[j], b.slot[i]
}

// lookup returns the resident row of a cached vertex.
func (s *Store) lookup(gid int64) (int64, bool) {
	k, ok := slices.BinarySearch(s.cached, gid)
	if !ok {
		return 0, false
	}
	return int64(s.slot[k]), true
}

// put stores row into resident row r, rounding to half precision if the
// store is F16.
func (s *Store) put(r int, row []float32) {
	f := s.cols
	if s.half {
		f16.Encode(s.f16[r*f:(r+1)*f], row)
	} else {
		copy(s.f32[r*f:(r+1)*f], row)
	}
}

// read writes resident row r into dst as float32.
func (s *Store) read(r int, dst []float32) {
	f := s.cols
	if s.half {
		f16.Decode(dst, s.f16[r*f:(r+1)*f])
	} else {
		copy(dst, s.f32[r*f:(r+1)*f])
	}
}

// gatherBlock is the number of resident rows gatherRange reads ahead: it
// loads every cache line of a block's rows before copying any of them, so
// that their misses overlap instead of following one another.
const gatherBlock = 8

// gatherSplit is the bytes of rows per goroutine below which
// gatherResident does not split its rows further.
const gatherSplit = 1 << 20

// touched keeps the loads of gatherRange's read-ahead from being dropped.
var touched atomic.Uint32

// gatherResident copies the resident rows of a plan into out: row i of out
// is resident row ^from[i] for every i with from[i] < 0 (the others, the
// remote rows, are not written). The rows are split into contiguous
// ranges of at least gatherSplit bytes, one per goroutine, up to
// GOMAXPROCS: gathering rows scattered over a large table waits on memory,
// not on arithmetic, and each goroutine keeps its own misses in flight.
func (s *Store) gatherResident(out *dense.Matrix, from []int64) {
	n := len(from)
	g := min(runtime.GOMAXPROCS(0), int(int64(n)*s.rowBytes()/gatherSplit))
	if g <= 1 {
		touched.Add(s.gatherRange(out, from, 0, n))
		return
	}
	sinks := make([]uint32, g)
	var wg sync.WaitGroup
	for k := range g {
		wg.Go(func() { sinks[k] = s.gatherRange(out, from, n*k/g, n*(k+1)/g) })
	}
	wg.Wait()
	var x uint32
	for _, v := range sinks {
		x ^= v
	}
	touched.Add(x)
}

// gatherRange is gatherResident's work on rows [lo, hi) of out:
// gatherPrefetch where prefetch instructions are (usePrefetch, returning
// 0), otherwise in blocks of gatherBlock rows: first one word of every
// cache line of the block's resident rows is loaded (the words are xor-ed
// into the result, which the caller keeps, so that the loads stay), then
// the rows are copied (or decoded), from cache.
func (s *Store) gatherRange(out *dense.Matrix, from []int64, lo, hi int) uint32 {
	f := s.cols
	if usePrefetch {
		s.gatherPrefetch(out, from, lo, hi)
		return 0
	}
	var x uint32
	for b := lo; b < hi; b += gatherBlock {
		e := min(b+gatherBlock, hi)
		for _, src := range from[b:e] {
			if src >= 0 {
				continue
			}
			r := int(^src)
			if s.half {
				row := s.f16[r*f : (r+1)*f]
				for j := 0; j < len(row); j += 32 { // 64-byte lines
					x ^= uint32(row[j])
				}
			} else {
				row := s.f32[r*f : (r+1)*f]
				for j := 0; j < len(row); j += 16 {
					x ^= math.Float32bits(row[j])
				}
			}
		}
		for i := b; i < e; i++ {
			if src := from[i]; src < 0 {
				s.read(int(^src), out.Row(i))
			}
		}
	}
	return x
}

// usePrefetch selects gatherPrefetch; tests turn it off to check the
// loads' path too.
var usePrefetch = prefetch.Enabled

// gatherAhead is how many rows ahead of its copy gatherPrefetch asks for
// a resident row's cache lines.
const gatherAhead = 16

// gatherPrefetch is gatherRange with prefetch instructions: row i is
// copied (or decoded) after the lines of row i+gatherAhead were asked
// for, so that up to gatherAhead rows' misses are in flight while rows
// already in cache are copied, where loads would hold up the copies
// behind them until they return.
func (s *Store) gatherPrefetch(out *dense.Matrix, from []int64, lo, hi int) {
	f, rb := s.cols, int(s.rowBytes())
	ask := func(i int) {
		if src := from[i]; src < 0 {
			r := int(^src)
			if s.half {
				prefetch.Lines(unsafe.Pointer(&s.f16[r*f]), rb)
			} else {
				prefetch.Lines(unsafe.Pointer(&s.f32[r*f]), rb)
			}
		}
	}
	if f == 0 {
		return
	}
	for i := lo; i < min(lo+gatherAhead, hi); i++ {
		ask(i)
	}
	for i := lo; i < hi; i++ {
		if i+gatherAhead < hi {
			ask(i + gatherAhead)
		}
		if src := from[i]; src < 0 {
			s.read(int(^src), out.Row(i))
		}
	}
}

func (s *Store) serve32(lid int64, row []float32) {
	r, f := int(s.local[lid]), s.cols
	copy(row, s.f32[r*f:(r+1)*f])
}

func (s *Store) serve16(lid int64, row []uint16) {
	r, f := int(s.local[lid]), s.cols
	copy(row, s.f16[r*f:(r+1)*f])
}

// Fetch returns the feature rows of ids, in order, as float32: own and
// cached rows from the resident table, the others from the ranks of the
// store's group that own them (only the distinct misses travel, in the
// store's dtype). It is FetchTo with a fresh result.
//
// Fetch is collective over the store's communicator: every rank of it
// calls Fetch (or FetchTo) the same number of times; ranks may fetch
// different numbers of rows, including none. It does not set a phase for
// byte accounting. Rank r sends 8(q−1) + 8·R + w·F·S bytes and receives
// 8(q−1) + 8·S + w·F·R over a group of q ranks, with R the distinct remote
// rows it asks for, S the rows it serves and w = 4 (F32) or 2 (F16).
// These bytes go in 2 + k Alltoallv calls: the request counts, the
// requested ids, and the rows in k rounds, k = ⌈m/b⌉ for the largest part
// of m rows and b = ⌊RoundBytes / ((q−1)·w·F)⌋ rows per requester and
// round (k = 1 when b ≥ m), the same k on every rank. Besides the result a
// fetch stages at most one round's rows, sent and received, in a buffer
// the store keeps for the next fetch (not counted by Bytes).
// On a store of sparse rows (NewSparseStore) the rows travel sparse, with
// the bytes FetchSparse states, and come back dense.
// It returns an error if communication fails.
// It will panic if an id is outside [0, n).
func (s *Store) Fetch(ids []int64) (*dense.Matrix, Counts, error) {
	return s.FetchTo(nil, ids)
}

// FetchTo is Fetch writing into dst's storage when it is large enough (dst
// may be nil); the result aliases dst then.
func (s *Store) FetchTo(dst *dense.Matrix, ids []int64) (*dense.Matrix, Counts, error) {
	if s.sp != nil {
		return s.fetchDense(dst, ids)
	}
	p, cnt := s.plan(ids)
	f := s.cols
	out := dense.Reuse(dst, len(ids), f)
	s.gatherResident(out, p.from)
	var err error
	if s.half {
		err = receive(s, p, &s.wire16, s.serve16, func(i int, row []uint16) { f16.Decode(out.Row(i), row) })
	} else {
		err = receive(s, p, &s.wire32, s.serve32, func(i int, row []float32) { copy(out.Row(i), row) })
	}
	if err != nil {
		return nil, cnt, err
	}
	return out, cnt, nil
}

// plan returns the plan of fetching ids from the store: resident rows
// (own and cached) from the table, the others from their owners, and the
// counts of the fetch.
func (s *Store) plan(ids []int64) (*Plan, Counts) {
	p := newPlan(ids, s.book, s.part, func(gid int64, owner int, lid int64) (int64, bool) {
		if owner == s.part {
			if s.identity {
				return lid, true
			}
			return int64(s.local[lid]), true
		}
		return s.lookup(gid)
	})
	own := int64(p.own)
	return p, Counts{Rows: int64(len(ids)), Local: own, Hits: int64(p.resident) - own, Remote: int64(p.Remote())}
}

// receive carries out the exchange of p in the wire type W (float32 rows
// served by serve32, or half words by serve16), in the store's rounds with
// buf as the staging buffer, and hands every remotely served position i
// its received row.
func receive[W collective.Elem](s *Store, p *Plan, buf *[]W, serve func(lid int64, row []W), put func(i int, row []W)) error {
	return exchangeRows(s.c, p, s.cols, int64(len(s.local)), s.round, buf, serve, scatter(p, put))
}

// Cols returns the number of features per row.
func (s *Store) Cols() int { return s.cols }

// DType returns F32 or F16.
func (s *Store) DType() DType {
	if s.half {
		return F16
	}
	return F32
}

// OwnRows returns the number of rows of the rank's own part.
func (s *Store) OwnRows() int { return len(s.local) }

// OwnRowsF32 returns the rank's own rows in local-id order, OwnRows() ×
// Cols() floats row-major, as a view of the store's table, when the store
// holds dense float32 rows with its own rows first in that order (a store
// without scores); ok is false otherwise. The caller must not modify it.
func (s *Store) OwnRowsF32() (rows []float32, ok bool) {
	if s.sp != nil || s.half || !s.identity {
		return nil, false
	}
	return s.f32[:len(s.local)*s.cols], true
}

// CachedRows returns the number of cached remote rows.
func (s *Store) CachedRows() int { return len(s.cached) }

// Resident returns the global ids of the resident rows, hottest first (the
// table's order). The caller owns the slice.
func (s *Store) Resident() []int64 { return slices.Clone(s.order) }

// Cached reports whether gid's row is in the cache.
func (s *Store) Cached(gid int64) bool {
	_, ok := s.lookup(gid)
	return ok
}

// rowBytes returns the storage of one row.
func (s *Store) rowBytes() int64 {
	if s.half {
		return 2 * int64(s.cols)
	}
	return 4 * int64(s.cols)
}

// Tiers returns the split of the resident rows, hottest first: the device
// tier (StoreOptions.GPUFrac of them) and the host tier.
func (s *Store) Tiers() []Tier {
	if s.sp != nil {
		return s.sp.tiers(s.gpu)
	}
	rb := s.rowBytes()
	host := len(s.order) - s.gpu
	return []Tier{{Name: "gpu", Rows: s.gpu, Bytes: int64(s.gpu) * rb}, {Name: "host", Rows: host, Bytes: int64(host) * rb}}
}

// CacheBytes returns the part of Bytes that holds the cached remote rows
// and their index entries.
func (s *Store) CacheBytes() int64 {
	var rows int64
	if s.sp != nil {
		per := int64(4 + 4*len(s.sp.val)/max(len(s.sp.col), 1))
		for _, r := range s.slot {
			rows += 8 + s.sp.rowLen(r)*per
		}
	} else {
		rows = int64(len(s.slot)) * s.rowBytes()
	}
	return rows + int64(len(s.cached))*(12+8)
}

// Bytes returns the memory the store holds: its resident rows and their
// indexes.
func (s *Store) Bytes() int64 {
	if s.sp != nil {
		return s.sp.bytes() + int64(len(s.order))*8 + int64(len(s.local))*4 + int64(len(s.cached))*12
	}
	return int64(len(s.order))*(s.rowBytes()+8) + int64(len(s.local))*4 + int64(len(s.cached))*12
}
