package sparse

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
)

// Options configures the products MulSR, MulRowsSR and MulMaskedSR. A nil
// *Options, like the zero value, asks for the defaults.
type Options struct {
	// Threads bounds the number of goroutines a product runs on; 0 (or
	// less) means runtime.GOMAXPROCS(0). Small products use fewer. The
	// result does not depend on it.
	Threads int
	// SortedB promises that every row of B is sorted with no repeated
	// column (as Matrix.RowsSorted and a dedupe would show): a row of A
	// with one entry then copies its row of B without checking it. A
	// caller that multiplies the same B many times checks it once. The
	// result is wrong if the promise is false.
	SortedB bool

	acc   accChoice // tests force an accumulator
	exact bool      // tests: use Threads goroutines however small the work
}

// accChoice forces the accumulator of every general row, for tests.
type accChoice uint8

const (
	accAuto accChoice = iota
	accDense
	accHash
)

// Tuning constants of the products.
const (
	// Dense accumulators (a value and a byte per column of B, per
	// goroutine) are allowed when B has at most denseMinCols columns, or
	// at most maxDenseCols and the product's flops are at least half the
	// accumulators' total size, which pays for setting them up.
	denseMinCols = 1 << 12
	maxDenseCols = 1 << 25
	// denseCacheBytes bounds the size of a dense accumulator (about a
	// core's L2 cache) with which every row uses it; wider products use it
	// only for rows whose flops exceed NCols/denseMinFill, and hash the
	// others.
	denseCacheBytes = 1 << 20
	denseMinFill    = 16
	// minThreadWork is the least work (flops plus rows) worth a goroutine.
	minThreadWork = 1 << 18
	// blocksPerThread is the number of row blocks per goroutine, handed
	// out dynamically.
	blocksPerThread = 32
	// hashInitMax caps the initial size of a symbolic-phase hash table;
	// it doubles as it fills.
	hashInitMax = 1 << 13
	// smallSort is the row length up to which rows are insertion sorted;
	// longer ones are radix sorted.
	smallSort = 64
)

// MulSR returns the product C = A·B over the semiring sr:
//
//	C(i,j) = ⊕_k A(i,k) ⊗ B(k,j), over the stored entries A(i,k) and B(k,j).
//
// A nil Values slice stands for entries equal to sr.One(). C always has
// Values. It holds an entry for every (i, j) reached by at least one term,
// whatever the value, so an absent entry of C means sr.Zero(). The columns of
// each row of C are sorted and distinct. The rows of A and B need not be
// sorted, and repeated entries are combined like any other terms. For every
// (i, j) the terms are added in the order of the entries of row i of A, and
// within a row of B in its order, starting from the identity of ⊕; the
// result is therefore deterministic and independent of o.Threads.
//
// The product runs Gustavson's row-by-row algorithm in two phases: a
// symbolic phase counts the entries of every row of C, so that C is
// allocated once, and a numeric phase computes them. Both run on up to
// o.Threads goroutines, over blocks of rows balanced by their number of
// scalar products (flops), each goroutine with its own accumulators. Each
// row is accumulated in a dense accumulator (a value and a mark byte per
// column of B, with the row extracted in order by a scan of the marks or a
// sort of the touched columns, whichever costs less) or in an open-addressing
// hash table sized to the row, chosen by the row's flops and the width of B.
// A row of A with a single entry whose row of B is sorted and distinct (a
// selection) is copied.
//
// MulSR takes O(flops + nnz(A) + NRows(A) + Σ_i c_i·log c_i) time, where c_i
// is the length of row i of C, plus O(NCols(B)) per goroutine when the
// product is large enough to use dense accumulators; a product of few rows,
// such as a selection Q·A, costs O(output) however large B is. The inputs
// are not modified and C shares no memory with them.
//
// MulSR returns an error wrapping ErrShape if A.NCols != B.NRows. If a or b
// is not a valid matrix (see Validate), it may panic or return garbage; a
// panic on one of its goroutines is passed on to the caller.
func MulSR[T Scalar, S Semiring[T]](sr S, a, b *Matrix[T], o *Options) (*Matrix[T], error) {
	if a.NCols != b.NRows {
		return nil, fmt.Errorf("%w: %d×%d times %d×%d", ErrShape, a.NRows, a.NCols, b.NRows, b.NCols)
	}
	return newProduct(kernelOf[T](sr), a, b, nil, o).run(), nil
}

// MulSRTo is MulSR writing C into dst, reusing its arrays where their
// capacity suffices (dst's contents are overwritten; a nil dst is MulSR).
// The result is dst, which then shares no memory with a and b but may
// share its arrays with what dst held before; C is the same as MulSR's.
// A caller that multiplies many times and drops each product before the
// next saves their allocation.
//
// MulSRTo returns an error wrapping ErrShape if A.NCols != B.NRows.
func MulSRTo[T Scalar, S Semiring[T]](dst *Matrix[T], sr S, a, b *Matrix[T], o *Options) (*Matrix[T], error) {
	if a.NCols != b.NRows {
		return nil, fmt.Errorf("%w: %d×%d times %d×%d", ErrShape, a.NRows, a.NCols, b.NRows, b.NCols)
	}
	p := newProduct(kernelOf[T](sr), a, b, nil, o)
	p.dst = dst
	return p.run(), nil
}

// MulRowsSR returns the rows rows of the product A·B over sr, in that
// order: row r of C is row rows[r] of A·B. It equals MulSR(sr, Q·A, B) where
// Q is the selection matrix with Q(r, rows[r]) = 1, without forming Q·A;
// rows may repeat and need not be sorted. It takes time in proportion to
// the flops of the selected rows and their output, however large A and B
// are. C has the properties documented on MulSR; nil or empty rows give a
// 0×B.NCols matrix.
//
// MulRowsSR returns an error wrapping ErrShape if A.NCols != B.NRows.
// It will panic if an entry of rows lies outside [0, A.NRows).
func MulRowsSR[T Scalar, S Semiring[T]](sr S, rows []int64, a, b *Matrix[T], o *Options) (*Matrix[T], error) {
	if a.NCols != b.NRows {
		return nil, fmt.Errorf("%w: %d×%d times %d×%d", ErrShape, a.NRows, a.NCols, b.NRows, b.NCols)
	}
	for _, r := range rows {
		if r < 0 || r >= a.NRows {
			panic("sparse: row index out of range")
		}
	}
	if rows == nil {
		rows = []int64{} // nil means every row to newProduct
	}
	return newProduct(kernelOf[T](sr), a, b, rows, o).run(), nil
}

// MulMaskedSR returns the masked product C = (A·B)⟨M⟩ over sr: the entries
// of A·B at the positions stored in mask (its values are ignored), and no
// others. C(i,j) is stored when mask holds (i,j), at least once, and some
// term A(i,k) ⊗ B(k,j) exists. The rows of mask need not be sorted or
// distinct; C's rows are sorted and distinct, and its values are those MulSR
// would give. mask may be of any element type, a or b themselves included.
//
// Every row is accumulated only at its mask's columns (in a hash table of
// the mask row, or the dense accumulator for wide rows), so the product takes
// O(flops + nnz(A) + nnz(mask) + NRows(A)) time plus the sort of unsorted
// mask rows, and its memory follows the mask rather than A·B.
//
// MulMaskedSR returns an error wrapping ErrShape if A.NCols != B.NRows or
// mask is not A.NRows×B.NCols.
func MulMaskedSR[T Scalar, S Semiring[T], M Scalar](sr S, mask *Matrix[M], a, b *Matrix[T], o *Options) (*Matrix[T], error) {
	if a.NCols != b.NRows {
		return nil, fmt.Errorf("%w: %d×%d times %d×%d", ErrShape, a.NRows, a.NCols, b.NRows, b.NCols)
	}
	if mask.NRows != a.NRows || mask.NCols != b.NCols {
		return nil, fmt.Errorf("%w: mask %d×%d for a %d×%d product", ErrShape, mask.NRows, mask.NCols, a.NRows, b.NCols)
	}
	p := newProduct(kernelOf[T](sr), a, b, nil, o)
	p.masked, p.mptr, p.mind = true, mask.Indptr, mask.Indices
	return p.run(), nil
}

// product is one SpGEMM in progress.
type product[T Scalar] struct {
	k      kernel[T]
	a, b   *Matrix[T]
	rows   []int64 // rows of A making the rows of C; nil for all
	masked bool
	// sortedB: the rows of B are known to be sorted and distinct.
	sortedB bool
	mptr    []int64 // mask, when masked
	mind    []int64
	dst     *Matrix[T] // MulSRTo's: C's storage, reused
	ident   T
	one     T

	m        int64   // rows of C
	sel      []bool  // sel[i]: row i of C copies a sorted row of B
	flops    []int64 // flops[i] = scalar products of rows [0, i) of C
	threads  int
	exact    bool
	dense    bool  // dense accumulators allowed
	accBytes int64 // bytes per column of a dense accumulator
	acc      accChoice
	c        *Matrix[T]
	workers  []*worker[T]
}

func newProduct[T Scalar](k kernel[T], a, b *Matrix[T], rows []int64, o *Options) *product[T] {
	p := &product[T]{k: k, a: a, b: b, rows: rows, m: a.NRows, ident: k.ident(), one: k.One()}
	p.accBytes = int64(binary.Size(p.one)) + 1
	if rows != nil {
		p.m = int64(len(rows))
	}
	p.threads = runtime.GOMAXPROCS(0)
	if o != nil {
		if o.Threads > 0 {
			p.threads = o.Threads
		}
		p.acc, p.exact = o.acc, o.exact
		p.sortedB = o.SortedB
	}
	return p
}

// arow returns the range of entries of A that make row i of C.
func (p *product[T]) arow(i int64) (lo, hi int64) {
	r := i
	if p.rows != nil {
		r = p.rows[i]
	}
	return p.a.Indptr[r], p.a.Indptr[r+1]
}

// run computes the product: flops per row, then the symbolic and numeric
// phases.
func (p *product[T]) run() *Matrix[T] {
	m := p.m
	a, b := p.a, p.b
	// Flops per row, as prefix sums.
	p.flops = make([]int64, m+1)
	bptr := b.Indptr
	var f int64
	for i := range m {
		lo, hi := p.arow(i)
		for _, k := range a.Indices[lo:hi] {
			f += bptr[k+1] - bptr[k]
		}
		p.flops[i+1] = f
	}
	work := f + m
	if !p.exact {
		p.threads = int(min(int64(p.threads), work/minThreadWork))
	}
	p.threads = int(max(1, min(int64(p.threads), m)))
	ncols := b.NCols
	p.dense = ncols <= denseMinCols || (ncols <= maxDenseCols && ncols*int64(p.threads) <= 2*f)
	switch p.acc {
	case accDense:
		p.dense = true
	case accHash:
		p.dense = false
	}
	p.workers = make([]*worker[T], p.threads)
	for x := range p.workers {
		p.workers[x] = &worker[T]{p: p}
	}

	if !p.masked {
		p.sel = make([]bool, m)
	}
	c := &Matrix[T]{NRows: m, NCols: ncols}
	if p.dst != nil {
		*p.dst, c = Matrix[T]{NRows: m, NCols: ncols, Indptr: p.dst.Indptr, Indices: p.dst.Indices, Values: p.dst.Values}, p.dst
	}
	c.Indptr = reuse(c.Indptr, m+1)
	c.Indptr[0] = 0
	p.c = c
	// Symbolic phase: c.Indptr[i+1] = length of row i.
	p.parallel(p.flops, 1, func(w *worker[T], lo, hi int64) {
		for i := lo; i < hi; i++ {
			c.Indptr[i+1] = w.count(i)
		}
	})
	for i := range m {
		c.Indptr[i+1] += c.Indptr[i]
	}
	nnz := c.Indptr[m]
	c.Indices = reuse(c.Indices, nnz)
	c.Values = reuse(c.Values, nnz)
	// Numeric phase, balanced by flops plus output.
	wt := p.flops
	if p.threads > 1 {
		wt = make([]int64, m+1)
		for i := range wt {
			wt[i] = p.flops[i] + c.Indptr[i]
		}
	}
	p.parallel(wt, 1, func(w *worker[T], lo, hi int64) {
		for i := lo; i < hi; i++ {
			w.fill(i)
		}
	})
	return c
}

// parallel calls fn over blocks of the rows of C on p.threads goroutines,
// each with its own worker. The blocks have about equal weight, where wt
// holds prefix sums of the rows' weights and each row weighs perRow more.
// A panic in fn is passed on to the caller.
func (p *product[T]) parallel(wt []int64, perRow int64, fn func(w *worker[T], lo, hi int64)) {
	m := p.m
	if p.threads == 1 {
		fn(p.workers[0], 0, m)
		return
	}
	nb := min(m, int64(p.threads*blocksPerThread))
	total := wt[m] + perRow*m
	bnd := make([]int64, nb+1)
	for x := int64(1); x < nb; x++ {
		target := total / nb * x
		lo := bnd[x-1]
		bnd[x] = lo + int64(sort.Search(int(m-lo), func(r int) bool {
			i := lo + int64(r)
			return wt[i]+perRow*i >= target
		}))
	}
	bnd[nb] = m
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var pv any
	for _, w := range p.workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { pv = r })
					next.Store(nb) // stop the others early
				}
			}()
			for {
				x := next.Add(1) - 1
				if x >= nb {
					return
				}
				fn(w, bnd[x], bnd[x+1])
			}
		})
	}
	wg.Wait()
	if pv != nil {
		panic(pv)
	}
}

// worker holds one goroutine's accumulators. Between rows, every mark and
// hit is 0, every element of val and hval is the semiring's identity and
// every key is -1.
type worker[T Scalar] struct {
	p     *product[T]
	mark  []uint8 // dense: 1 per column touched (or in the mask), padded to 8
	hit   []uint8 // dense masked: 1 per column of the mask touched
	val   []T     // dense: a value per column
	keys  []int64 // hash: columns, -1 for an empty slot
	hval  []T     // hash: values
	hhit  []bool  // hash masked: slot touched
	slots []int64 // scratch: per entry of a row of B, its slot
	xs    []T     // scratch: per entry of a row of B, its value
	tmp   []int64 // scratch: radix sort
	ones  []T     // scratch: One, for a pattern B
}

// rowDense reports whether a row with f flops uses the dense accumulator,
// allocating it on first use.
func (w *worker[T]) rowDense(f int64) bool {
	p := w.p
	ncols := p.b.NCols
	if !p.dense || (p.acc == accAuto && ncols*p.accBytes > denseCacheBytes && f*denseMinFill < ncols) {
		return false
	}
	if w.val == nil {
		w.mark = make([]uint8, (ncols+7)&^7)
		w.val = make([]T, ncols)
		fillValue(w.val, p.ident)
		if p.masked {
			w.hit = make([]uint8, ncols)
		}
	}
	return true
}

// hashTable readies the hash accumulator for size slots (a power of two),
// and returns its keys and the shift of the hash function.
func (w *worker[T]) hashTable(size int64) ([]int64, uint) {
	if int64(len(w.keys)) < size {
		w.keys = make([]int64, size)
		for s := range w.keys {
			w.keys[s] = -1
		}
		w.hval = make([]T, size)
		fillValue(w.hval, w.p.ident)
		if w.p.masked {
			w.hhit = make([]bool, size)
		}
	}
	return w.keys[:size], uint(64 - bits.TrailingZeros64(uint64(size)))
}

// tableSize returns the hash table size for n keys: a power of two at
// least 2n, so that the load stays at most 1/2, and at least 8.
func tableSize(n int64) int64 {
	if n <= 4 {
		return 8
	}
	return int64(1) << bits.Len64(uint64(2*n-1))
}

// hashMul is the 64-bit golden-ratio constant of Fibonacci hashing.
const hashMul = 0x9e3779b97f4a7c15

// probe returns column j's slot in keys, an open-addressing table of
// columns (-1: empty) whose length is a power of two, 1<<(64-shift)
// (hashTable): the slot holding j, or else the first empty slot on j's
// linear probe path from its Fibonacci hash, where j is to go. The table
// must have an empty slot or hold j.
func probe(keys []int64, j int64, shift uint) uint64 {
	mask := uint64(len(keys) - 1)
	s := uint64(j) * hashMul >> shift
	for keys[s] >= 0 && keys[s] != j {
		s = (s + 1) & mask
	}
	return s
}

// brow returns row k of B and its values, One for a pattern B.
func (w *worker[T]) brow(k int64) ([]int64, []T) {
	b := w.p.b
	lo, hi := b.Indptr[k], b.Indptr[k+1]
	if b.Values != nil {
		return b.Indices[lo:hi], b.Values[lo:hi]
	}
	n := hi - lo
	if int64(len(w.ones)) < n {
		w.ones = make([]T, max(n, 2*int64(len(w.ones))))
		fillValue(w.ones, w.p.one)
	}
	return b.Indices[lo:hi], w.ones[:n]
}

// aval returns the value of entry q of A.
func (w *worker[T]) aval(q int64) T {
	if w.p.a.Values == nil {
		return w.p.one
	}
	return w.p.a.Values[q]
}

// count returns the length of row i of C.
func (w *worker[T]) count(i int64) int64 {
	p := w.p
	f := p.flops[i+1] - p.flops[i]
	if f == 0 {
		return 0
	}
	lo, hi := p.arow(i)
	if p.masked {
		mrow := p.mind[p.mptr[i]:p.mptr[i+1]]
		if len(mrow) == 0 {
			return 0
		}
		if w.rowDense(f) {
			return w.countDenseMasked(lo, hi, mrow)
		}
		return w.countHashMasked(lo, hi, mrow)
	}
	if hi-lo == 1 {
		// A selection, if the row of B is sorted and distinct.
		k := p.a.Indices[lo]
		if row := p.b.Indices[p.b.Indptr[k]:p.b.Indptr[k+1]]; p.sortedB || strictlyIncreasing(row) {
			p.sel[i] = true
			return int64(len(row))
		}
	}
	if w.rowDense(f) {
		return w.countDense(lo, hi, f)
	}
	return w.countHash(lo, hi, f)
}

// fill computes row i of C into its place.
func (w *worker[T]) fill(i int64) {
	p := w.p
	c := p.c
	off, end := c.Indptr[i], c.Indptr[i+1]
	if off == end {
		return
	}
	ind, val := c.Indices[off:end], c.Values[off:end]
	lo, hi := p.arow(i)
	f := p.flops[i+1] - p.flops[i]
	if p.masked {
		mrow := p.mind[p.mptr[i]:p.mptr[i+1]]
		if w.rowDense(f) {
			w.fillDenseMasked(lo, hi, mrow, ind, val)
		} else {
			w.fillHashMasked(lo, hi, mrow, ind, val)
		}
		return
	}
	if p.sel[i] {
		bi, bv := w.brow(p.a.Indices[lo])
		copy(ind, bi)
		p.k.scale(val, bv, w.aval(lo))
		// ident ⊕ x == x, as an accumulated row would give.
		return
	}
	if w.rowDense(f) {
		w.fillDense(lo, hi, ind, val)
	} else {
		w.fillHash(lo, hi, ind, val)
	}
}

// countDense counts the distinct columns of the rows of B that the entries
// [lo, hi) of A select, which make f flops, with the dense marks.
func (w *worker[T]) countDense(lo, hi, f int64) int64 {
	a, b := w.p.a, w.p.b
	mark := w.mark
	// Plain stores, which unlike setting bits form no chain of
	// read-modify-writes when columns share a word.
	for _, k := range a.Indices[lo:hi] {
		for _, j := range b.Indices[b.Indptr[k]:b.Indptr[k+1]] {
			mark[j] = 1
		}
	}
	var n int64
	if f >= int64(len(mark))/8 {
		// Scan every word; each mark is a 1 byte.
		for x := 0; x < len(mark); x += 8 {
			if wd := binary.LittleEndian.Uint64(mark[x:]); wd != 0 {
				n += int64(bits.OnesCount64(wd))
				binary.LittleEndian.PutUint64(mark[x:], 0)
			}
		}
		return n
	}
	// Walk the terms again, counting each mark once.
	for _, k := range a.Indices[lo:hi] {
		for _, j := range b.Indices[b.Indptr[k]:b.Indptr[k+1]] {
			n += int64(mark[j])
			mark[j] = 0
		}
	}
	return n
}

// scanCheaper reports whether extracting a row of n entries by scanning
// words words of marks costs less than sorting its columns.
func scanCheaper(words, n int64) bool {
	return words <= 2*n*int64(bits.Len64(uint64(n)))
}

// fillDense computes the row of C made by the entries [lo, hi) of A into
// ind and val, whose length is the row's, with the dense accumulator.
func (w *worker[T]) fillDense(lo, hi int64, ind []int64, val []T) {
	a, k := w.p.a, w.p.k
	mark, acc := w.mark, w.val
	if scanCheaper(int64(len(mark))/8, int64(len(ind))) {
		for q := lo; q < hi; q++ {
			bi, bv := w.brow(a.Indices[q])
			k.axpyMark(acc, mark, bi, bv, w.aval(q))
		}
		// Extract in column order, restoring the identity and the marks,
		// up to the last of the row's known number of entries.
		ident := w.p.ident
		o := 0
		for x := 0; o < len(ind); x += 8 {
			wd := binary.LittleEndian.Uint64(mark[x:])
			if wd == 0 {
				continue
			}
			binary.LittleEndian.PutUint64(mark[x:], 0)
			base := int64(x)
			for wd != 0 {
				j := base + int64(bits.TrailingZeros64(wd)>>3)
				wd &= wd - 1
				ind[o] = j
				val[o] = acc[j]
				acc[j] = ident
				o++
			}
		}
		return
	}
	o := 0
	for q := lo; q < hi; q++ {
		bi, bv := w.brow(a.Indices[q])
		for _, j := range bi {
			if mark[j] == 0 {
				mark[j] = 1
				ind[o] = j
				o++
			}
		}
		k.axpy(acc, bi, bv, w.aval(q))
	}
	w.sortColumns(ind)
	ident := w.p.ident
	for o, j := range ind {
		val[o] = acc[j]
		acc[j] = ident
		mark[j] = 0
	}
}

// countHash counts the distinct columns of the rows of B that the entries
// [lo, hi) of A select, which make f flops, with a hash set that starts
// small and doubles as it fills.
func (w *worker[T]) countHash(lo, hi, f int64) int64 {
	a, b := w.p.a, w.p.b
	size := tableSize(min(f, b.NCols, hashInitMax))
	keys, shift := w.hashTable(size)
	var n int64
	for _, k := range a.Indices[lo:hi] {
		for _, j := range b.Indices[b.Indptr[k]:b.Indptr[k+1]] {
			if s := probe(keys, j, shift); keys[s] < 0 {
				keys[s] = j
				n++
				if 2*n > size {
					size *= 2
					keys, shift = w.rehash(keys, size)
				}
			}
		}
	}
	for s := range keys {
		keys[s] = -1
	}
	return n
}

// rehash moves the keys of the set old into a table of size slots and
// returns it; old is cleared.
func (w *worker[T]) rehash(old []int64, size int64) ([]int64, uint) {
	tmp := w.tmp[:0]
	for s, j := range old {
		if j >= 0 {
			tmp = append(tmp, j)
			old[s] = -1
		}
	}
	keys, shift := w.hashTable(size)
	for _, j := range tmp {
		keys[probe(keys, j, shift)] = j // the keys are distinct: an empty slot
	}
	w.tmp = tmp
	return keys, shift
}

// fillHash computes the row of C made by the entries [lo, hi) of A into
// ind and val, whose length is the row's, with a hash accumulator.
func (w *worker[T]) fillHash(lo, hi int64, ind []int64, val []T) {
	a, k := w.p.a, w.p.k
	size := tableSize(int64(len(ind)))
	keys, shift := w.hashTable(size)
	hval := w.hval
	o := 0
	for q := lo; q < hi; q++ {
		bi, bv := w.brow(a.Indices[q])
		slots, _ := w.scratch(len(bi))
		for r, j := range bi {
			s := probe(keys, j, shift)
			if keys[s] < 0 {
				keys[s] = j
				ind[o] = j
				o++
			}
			slots[r] = int64(s)
		}
		k.axpy(hval, slots, bv, w.aval(q))
	}
	w.sortColumns(ind)
	ident := w.p.ident
	for o, j := range ind {
		s := probe(keys, j, shift) // j is in the table
		val[o] = hval[s]
		hval[s] = ident
	}
	for s := range keys {
		keys[s] = -1
	}
}

// scratch returns the slot and value buffers with length n.
func (w *worker[T]) scratch(n int) ([]int64, []T) {
	if len(w.slots) < n {
		m := max(n, 2*len(w.slots))
		w.slots = make([]int64, m)
		w.xs = make([]T, m)
	}
	return w.slots[:n], w.xs[:n]
}

// countDenseMasked counts the columns of mrow that the rows of B selected
// by the entries [lo, hi) of A touch, with the dense marks: mark holds the
// mask and hit the touched columns in it.
func (w *worker[T]) countDenseMasked(lo, hi int64, mrow []int64) int64 {
	a, b := w.p.a, w.p.b
	mark, hit := w.mark, w.hit
	for _, j := range mrow {
		mark[j] = 1
	}
	for _, k := range a.Indices[lo:hi] {
		for _, j := range b.Indices[b.Indptr[k]:b.Indptr[k+1]] {
			hit[j] = mark[j] // 1 in the mask, else stays 0
		}
	}
	var n int64
	for _, j := range mrow {
		n += int64(hit[j]) // a repeated mask column is counted once
		hit[j] = 0
		mark[j] = 0
	}
	return n
}

// fillDenseMasked computes the row of C made by the entries [lo, hi) of A
// and masked by mrow into ind and val, with the dense accumulator.
func (w *worker[T]) fillDenseMasked(lo, hi int64, mrow, ind []int64, val []T) {
	a, k := w.p.a, w.p.k
	mark, hit, acc := w.mark, w.hit, w.val
	for _, j := range mrow {
		mark[j] = 1
	}
	for q := lo; q < hi; q++ {
		bi, bv := w.brow(a.Indices[q])
		// Gather the terms in the mask, without branches, and add them.
		cols, xs := w.scratch(len(bi))
		bv = bv[:len(bi)]
		n := 0
		for r, j := range bi {
			in := mark[j]
			hit[j] = in
			cols[n] = j
			xs[n] = bv[r]
			n += int(in)
		}
		k.axpy(acc, cols[:n], xs[:n], w.aval(q))
	}
	o := 0
	for _, j := range mrow {
		if hit[j] != 0 {
			hit[j] = 0 // a repeated mask column is taken once
			ind[o] = j
			val[o] = acc[j]
			o++
		}
	}
	for _, j := range mrow {
		acc[j] = w.p.ident
		mark[j] = 0
	}
	if !strictlyIncreasing(mrow) {
		sortPairs(ind, val)
	}
}

// maskTable builds the hash table of the columns of mrow and returns it,
// with its shift.
func (w *worker[T]) maskTable(mrow []int64) ([]int64, uint) {
	size := tableSize(int64(len(mrow)))
	keys, shift := w.hashTable(size)
	for _, j := range mrow {
		keys[probe(keys, j, shift)] = j
	}
	return keys, shift
}

// countHashMasked is countDenseMasked with a hash table of the mask row.
func (w *worker[T]) countHashMasked(lo, hi int64, mrow []int64) int64 {
	a, b := w.p.a, w.p.b
	keys, shift := w.maskTable(mrow)
	hhit := w.hhit
	for _, k := range a.Indices[lo:hi] {
		for _, j := range b.Indices[b.Indptr[k]:b.Indptr[k+1]] {
			if s := probe(keys, j, shift); keys[s] == j {
				hhit[s] = true
			}
		}
	}
	var n int64
	for s := range keys {
		if hhit[s] {
			n++
			hhit[s] = false
		}
		keys[s] = -1
	}
	return n
}

// fillHashMasked is fillDenseMasked with a hash table of the mask row.
func (w *worker[T]) fillHashMasked(lo, hi int64, mrow, ind []int64, val []T) {
	a, k := w.p.a, w.p.k
	keys, shift := w.maskTable(mrow)
	hhit, hval := w.hhit, w.hval
	for q := lo; q < hi; q++ {
		bi, bv := w.brow(a.Indices[q])
		slots, xs := w.scratch(len(bi))
		bv = bv[:len(bi)]
		n := 0
		for r, j := range bi {
			if s := probe(keys, j, shift); keys[s] == j {
				hhit[s] = true
				slots[n] = int64(s)
				xs[n] = bv[r]
				n++
			}
		}
		k.axpy(hval, slots[:n], xs[:n], w.aval(q))
	}
	o := 0
	for _, j := range mrow {
		s := probe(keys, j, shift) // j is in the table
		if hhit[s] {
			hhit[s] = false // a repeated mask column is taken once
			ind[o] = j
			val[o] = hval[s]
			o++
		}
	}
	for s := range keys {
		keys[s] = -1
		hhit[s] = false
		hval[s] = w.p.ident
	}
	if !strictlyIncreasing(mrow) {
		sortPairs(ind, val)
	}
}

// reuse returns s[:n] if s is not nil and its capacity suffices, else a
// new slice of n elements (never nil); the contents are unspecified (the
// caller writes every one).
func reuse[E any](s []E, n int64) []E {
	if s != nil && int64(cap(s)) >= n {
		return s[:n]
	}
	return make([]E, n)
}

// strictlyIncreasing reports whether s is sorted with no repeats.
func strictlyIncreasing(s []int64) bool {
	for x := 1; x < len(s); x++ {
		if s[x] <= s[x-1] {
			return false
		}
	}
	return true
}

// sortColumns sorts the distinct columns of a row: by insertion when the
// row is short, else by radix.
func (w *worker[T]) sortColumns(ind []int64) {
	if len(ind) <= smallSort {
		for x := 1; x < len(ind); x++ {
			j := ind[x]
			y := x
			for ; y > 0 && ind[y-1] > j; y-- {
				ind[y] = ind[y-1]
			}
			ind[y] = j
		}
		return
	}
	if len(w.tmp) < len(ind) {
		w.tmp = make([]int64, max(len(ind), 2*len(w.tmp)))
	}
	radixSort(ind, w.tmp[:len(ind)], bits.Len64(uint64(w.p.b.NCols-1)))
}

// radixSort sorts the non-negative values of s, which are below 2^nbits,
// by least significant digit first, 8 bits a pass, using tmp (as long as
// s) as scratch.
func radixSort(s, tmp []int64, nbits int) {
	src, dst := s, tmp
	for shift := 0; shift < nbits; shift += 8 {
		var cnt [256]int
		for _, v := range src {
			cnt[uint8(v>>shift)]++
		}
		if cnt[uint8(src[0]>>shift)] == len(src) {
			continue // one digit: nothing moves
		}
		sum := 0
		for d, c := range cnt {
			cnt[d] = sum
			sum += c
		}
		for _, v := range src {
			d := uint8(v >> shift)
			dst[cnt[d]] = v
			cnt[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
}

// fillValue sets every element of s to v.
func fillValue[T any](s []T, v T) {
	for x := range s {
		s[x] = v
	}
}
