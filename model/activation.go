package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
)

// ReLU is the rectifier y = max(x, 0) with its backward pass.
type ReLU struct {
	y  *dense.Matrix
	dx *dense.Matrix // Backward's result, reused
}

// Forward returns max(x, 0) in a matrix the ReLU owns, which Backward
// reads and the next Forward overwrites: do not modify it before Backward,
// and copy what must outlive the next Forward.
func (r *ReLU) Forward(x *dense.Matrix) *dense.Matrix {
	y := dense.Reuse(r.y, x.Rows, x.Cols)
	parallel(len(x.Data), 1, int64(len(x.Data)), func(lo, hi int) {
		dense.ReLU(y.Data[lo:hi], x.Data[lo:hi])
	})
	r.y = y
	return y
}

// Backward returns dL/dx = dy where x > 0 and 0 elsewhere, in a matrix the
// ReLU owns, which the next Backward overwrites.
// It will panic if dy does not match the last Forward.
func (r *ReLU) Backward(dy *dense.Matrix) *dense.Matrix {
	checkSame(r.y, dy)
	dx := dense.Reuse(r.dx, dy.Rows, dy.Cols)
	r.dx = dx
	parallel(len(dy.Data), 1, int64(len(dy.Data)), func(lo, hi int) {
		dense.ReLUGrad(dx.Data[lo:hi], dy.Data[lo:hi], r.y.Data[lo:hi])
	})
	return dx
}

// reluMask is a ReLU applied in place that keeps, for Backward, one bit per
// element (x > 0) instead of its output, so that the output can be freed as
// soon as its reader is done with it (a deep stack's next layer).
type reluMask struct {
	rows, cols int
	bits       []uint64
}

// forward sets x = max(x, 0) in place (0 for NaN and −0, as ReLU does),
// records where x > 0 and returns x.
func (r *reluMask) forward(x *dense.Matrix) *dense.Matrix {
	r.rows, r.cols = x.Rows, x.Cols
	words := (len(x.Data) + 63) / 64
	if cap(r.bits) < words {
		r.bits = make([]uint64, words)
	}
	r.bits = r.bits[:words]
	clear(r.bits)
	for i, v := range x.Data {
		if v > 0 {
			r.bits[i>>6] |= 1 << (i & 63)
		} else {
			x.Data[i] = 0
		}
	}
	return x
}

// backward returns dL/dx = dy where x > 0 and 0 elsewhere, as a new matrix.
// It will panic if no forward preceded it or dy does not match it.
func (r *reluMask) backward(dy *dense.Matrix) *dense.Matrix {
	if r.bits == nil {
		panic("model: Backward before Forward")
	}
	checkGrad(dy, r.rows, r.cols)
	dx := dense.New(dy.Rows, dy.Cols)
	for i, v := range dy.Data {
		if r.bits[i>>6]&(1<<(i&63)) != 0 {
			dx.Data[i] = v
		}
	}
	return dx
}

// positive reports whether element i of the last forward's input was > 0.
func (r *reluMask) positive(i int) bool { return r.bits[i>>6]&(1<<(i&63)) != 0 }

// ELU is the exponential linear unit with α = 1: y = x for x > 0 and
// eˣ − 1 otherwise. The GAT paper uses it between layers.
type ELU struct {
	y  *dense.Matrix
	dx *dense.Matrix // Backward's result, reused
}

// Forward returns ELU(x) in a matrix the ELU owns, which Backward reads
// and the next Forward overwrites: do not modify it before Backward, and
// copy what must outlive the next Forward.
func (u *ELU) Forward(x *dense.Matrix) *dense.Matrix {
	y := dense.Reuse(u.y, x.Rows, x.Cols)
	for i, v := range x.Data {
		if v > 0 {
			y.Data[i] = v
		} else {
			y.Data[i] = float32(math.Expm1(float64(v)))
		}
	}
	u.y = y
	return y
}

// Backward returns dL/dx = dy for x > 0 and dy·(y+1) = dy·eˣ otherwise, in
// a matrix the ELU owns, which the next Backward overwrites. It will panic
// if dy does not match the last Forward.
func (u *ELU) Backward(dy *dense.Matrix) *dense.Matrix {
	checkSame(u.y, dy)
	dx := dense.Reuse(u.dx, dy.Rows, dy.Cols)
	u.dx = dx
	for i, v := range u.y.Data {
		if v > 0 {
			dx.Data[i] = dy.Data[i]
		} else {
			dx.Data[i] = dy.Data[i] * (v + 1)
		}
	}
	return dx
}

// Dropout is inverted dropout: in training each element is zeroed with
// probability Rate and the others are scaled by 1/(1−Rate), so that
// evaluation is the identity.
//
// The mask takes 16 random bits per element (four elements per 64-bit draw),
// so Rate is rounded to a multiple of 2⁻¹⁶; the scale uses the rounded
// rate, keeping the expectation exact. A forward draws one key from the
// rng, and row i of the matrix draws from its own stream seeded by (key,
// id(i)), in column order: the rows are masked in parallel, and the mask
// does not depend on GOMAXPROCS. id(i) is i for Forward, ForwardSparse and
// Mask with nil ids, and ids[i] otherwise: a minibatch trainer passes the
// global vertex ids of the rows, so that a vertex's mask depends on the
// vertex, not on where its row is, nor on which rank holds it.
//
// With SkipZeros a zero element draws nothing (it is zero whether dropped or
// not; its mask is 0, so it passes no gradient), which makes the draws of a
// matrix those of its nonzeros: ForwardSparse on the same rows as CSR draws
// the same numbers and drops the same entries. A Model sets it on its input
// dropout, whose zeros are the data's. Hidden layers keep drawing for every
// element: there a ReLU output that is 0 on one path and a rounding error
// above 0 on another (dense and sparse input, two BLAS) would otherwise
// shift every later draw, and the two runs would drop different elements.
type Dropout struct {
	Rate float32
	// SkipZeros makes zero elements draw no random number.
	SkipZeros bool

	// noMask makes Forward keep no mask, for a dropout whose Backward is
	// never called (a Model's input dropout: Backward does not compute
	// dL/dx for the input). It saves writing a mask as large as the input.
	noMask bool
	// unmasked: the last Forward dropped without keeping a mask.
	unmasked bool

	mask   []float32 // 0 or 1/(1−Rate) per element; nil when the last Forward was the identity
	buf    []float32
	y, dx  *dense.Matrix // Forward's and Backward's results, reused
	sparse bool          // the last forward was ForwardSparse, which has no Backward
	// ForwardSparse's result arrays, reused (their full capacity).
	sPtr, sIdx []int64
	sVal       []float32
}

// Forward returns x with dropout applied, in a matrix the Dropout owns
// (overwritten by its next Forward), when train is true and Rate > 0,
// drawing the mask from rng. Otherwise it returns x itself.
// It will panic if Rate is outside [0, 1), or if rng is nil when needed.
func (d *Dropout) Forward(x *dense.Matrix, train bool, rng *rand.Rand) *dense.Matrix {
	return d.ForwardIDs(x, nil, train, rng)
}

// ForwardIDs is Forward with row i's stream keyed by ids[i] instead of i
// (nil ids: Forward).
// It will panic if ids is not nil and len(ids) != x.Rows, as Forward
// otherwise.
func (d *Dropout) ForwardIDs(x *dense.Matrix, ids []int64, train bool, rng *rand.Rand) *dense.Matrix {
	if !d.active(train, rng) {
		return x
	}
	checkIDs(ids, x.Rows)
	if d.noMask {
		d.unmasked = true
	} else {
		d.buf = dense.Grow(d.buf, len(x.Data))
		d.mask = d.buf
	}
	key := rng.Uint64()
	y := dense.Reuse(d.y, x.Rows, x.Cols)
	d.y = y
	c := x.Cols
	proto := newDropper(d.Rate, 0, 0)
	parallel(x.Rows, 1, int64(len(x.Data)), func(lo, hi int) {
		var words *[8 * wordsChunk / 4]uint64 // rows8's draws, allocated at its first use
		can8 := true                          // rows8 can run (AVX-512)
		for r := lo; r < hi; {
			if can8 && r+8 <= hi && (!d.SkipZeros || noZeroRows(x.Data[r*c:(r+8)*c], c)) {
				if words == nil {
					words = new([8 * wordsChunk / 4]uint64)
				}
				var mask []float32
				if d.mask != nil {
					mask = d.mask[r*c : (r+8)*c]
				}
				if proto.rows8(key, ids, r, c, mask, y.Data[r*c:(r+8)*c], x.Data[r*c:(r+8)*c], words) {
					r += 8
					continue
				}
				can8 = false
			}
			var mask []float32
			if d.mask != nil {
				mask = d.mask[r*c : (r+1)*c]
			}
			dr := proto.stream(key, rowID(ids, r))
			dr.row(mask, y.Data[r*c:(r+1)*c], x.Data[r*c:(r+1)*c], d.SkipZeros)
			r++
		}
	})
	return y
}

// rowID returns the stream of row r: ids[r], or r when ids is nil.
func rowID(ids []int64, r int) uint64 {
	if ids == nil {
		return uint64(r)
	}
	return uint64(ids[r])
}

// mixKey returns rng.Mix(key, id), for code whose rng is a parameter.
func mixKey(key, id uint64) uint64 { return rng.Mix(key, id) }

// checkIDs panics unless ids is nil or has one id per row of rows.
func checkIDs(ids []int64, rows int) {
	if ids != nil && len(ids) != rows {
		panic("model: dropout ids do not match the rows")
	}
}

// noZeroRows reports whether none of the rows of c elements in x has an
// element equal to 0.
func noZeroRows(x []float32, c int) bool {
	for lo := 0; lo < len(x); lo += c {
		if dense.HasZero(x[lo : lo+c]) {
			return false
		}
	}
	return true
}

// Mask draws the mask Forward would draw from rng on the rows×cols matrix
// x and returns it, without applying it: 0 or 1/(1−Rate) per element, in
// dst grown to rows·cols. It makes the same draws as Forward, so a caller
// that applies the mask elsewhere (gpu/gnn, on a device) drops the same
// elements. x is read only with SkipZeros (a zero element draws nothing
// and gets mask 0) and may be nil otherwise. Row r's stream is keyed by
// ids[r], as ForwardIDs's, or by r when ids is nil. It returns nil, drawing
// nothing, when Forward would return x itself (not train, or Rate 0); it
// does not change the state Backward reads.
// It will panic if Rate is outside [0, 1), rng is nil when needed,
// SkipZeros is set and len(x) != rows·cols, or ids is not nil and
// len(ids) != rows.
func (d *Dropout) Mask(dst []float32, rows, cols int, x []float32, ids []int64, train bool, rng *rand.Rand) []float32 {
	if !(d.Rate >= 0 && d.Rate < 1) {
		panic("model: dropout rate outside [0, 1)")
	}
	if !train || d.Rate == 0 {
		return nil
	}
	if rng == nil {
		panic("model: dropout needs an rng")
	}
	if d.SkipZeros && len(x) != rows*cols {
		panic("model: dropout mask: len(x) != rows·cols")
	}
	checkIDs(ids, rows)
	dst = dense.Grow(dst, rows*cols)
	key, _, _, _ := d.MaskKey(train, rng)
	for r := range rows {
		dr := newDropper(d.Rate, key, rowID(ids, r))
		for i := r * cols; i < (r+1)*cols; i++ {
			if d.SkipZeros && x[i] == 0 {
				dst[i] = 0
				continue
			}
			dst[i] = dr.next()
		}
	}
	return dst
}

// MaskKey draws from rng what Mask draws, and returns what defines the
// mask instead of the mask, for a caller that computes it elsewhere
// (gpu/gnn, in a kernel): row r's decisions come from the stream
// rng.PCG{Hi: key, Lo: r}, or Lo: ids[r] for Mask with ids, each 64-bit
// draw making four decisions of 16 bits, low bits first; an element is
// kept, with mask value keep, when its 16 bits are at least t, and
// dropped (0) otherwise; with SkipZeros a zero element draws nothing and
// gets 0. ok is false, and nothing is drawn, when Mask would return nil
// (not train, or Rate 0).
// It will panic if Rate is outside [0, 1), or if rng is nil when needed.
func (d *Dropout) MaskKey(train bool, rng *rand.Rand) (key uint64, t uint32, keep float32, ok bool) {
	if !(d.Rate >= 0 && d.Rate < 1) {
		panic("model: dropout rate outside [0, 1)")
	}
	if !train || d.Rate == 0 {
		return 0, 0, 0, false
	}
	if rng == nil {
		panic("model: dropout needs an rng")
	}
	dr := newDropper(d.Rate, 0, 0)
	return rng.Uint64(), uint32(dr.t), dr.keep, true
}

// ForwardSparse is Forward on sparse rows: it returns x with dropout
// applied, as a matrix with values holding only the kept entries (in x's
// order, scaled by 1/(1−Rate)), when train is true and Rate > 0, and x
// itself otherwise. The result's arrays are the Dropout's own, which its
// next ForwardSparse overwrites (a minibatch's 10 MB of them were
// allocated afresh, and cleared, at every step). Every stored entry with a nonzero value (every entry of
// a pattern, whose values are 1) draws one decision, in row-major stored
// order, whatever SkipZeros is; with each row's columns sorted and
// distinct, those are the draws Forward with SkipZeros makes on x's dense
// form, so both keep the same entries. Inputs get
// no gradient: Backward panics after a ForwardSparse that dropped.
// It will panic if Rate is outside [0, 1), or if rng is nil when needed.
func (d *Dropout) ForwardSparse(x *sparse.Matrix[float32], train bool, rng *rand.Rand) *sparse.Matrix[float32] {
	return d.ForwardSparseIDs(x, nil, train, rng)
}

// ForwardSparseIDs is ForwardSparse with row i's stream keyed by ids[i]
// instead of i (nil ids: ForwardSparse), the draws of ForwardIDs.
// It will panic if ids is not nil and len(ids) != x.NRows, as
// ForwardSparse otherwise.
func (d *Dropout) ForwardSparseIDs(x *sparse.Matrix[float32], ids []int64, train bool, rng *rand.Rand) *sparse.Matrix[float32] {
	if !d.active(train, rng) {
		return x
	}
	checkIDs(ids, int(x.NRows))
	d.sparse = true
	key := rng.Uint64()
	nr := int(x.NRows)
	base := x.Indptr[0]
	nnz := x.Indptr[nr] - base
	d.sPtr, d.sIdx = growInt64(d.sPtr, nr+1), growInt64(d.sIdx, int(nnz))
	d.sVal = dense.Grow(d.sVal, int(nnz))
	y := &sparse.Matrix[float32]{
		NRows:   x.NRows,
		NCols:   x.NCols,
		Indptr:  d.sPtr,
		Indices: d.sIdx,
		Values:  d.sVal,
	}
	y.Indptr[0] = 0
	// Blocks of rows run in parallel, each row on its own stream. A block
	// [lo, hi) packs its kept entries from offset Indptr[lo] − base (they
	// cannot pass the block's own entries), and y.Indptr[i+1] holds row i's
	// count; the blocks are then moved down in order.
	type block struct{ lo, kept int }
	var mu sync.Mutex
	var blocks []block
	parallel(nr, 1, nnz, func(lo, hi int) {
		pos := int(x.Indptr[lo] - base)
		start := pos
		for i := lo; i < hi; i++ {
			dr := newDropper(d.Rate, key, rowID(ids, i))
			n := dr.sparseRow(y.Indices[pos:], y.Values[pos:], x, i)
			y.Indptr[i+1] = int64(n)
			pos += n
		}
		mu.Lock()
		blocks = append(blocks, block{lo, pos - start})
		mu.Unlock()
	})
	slices.SortFunc(blocks, func(a, b block) int { return a.lo - b.lo })
	pos := 0
	for _, b := range blocks {
		from := int(x.Indptr[b.lo] - base)
		copy(y.Indices[pos:], y.Indices[from:from+b.kept])
		copy(y.Values[pos:], y.Values[from:from+b.kept])
		pos += b.kept
	}
	y.Indices, y.Values = y.Indices[:pos:pos], y.Values[:pos:pos]
	for i := range nr {
		y.Indptr[i+1] += y.Indptr[i]
	}
	return y
}

// growInt64 returns buf[:n], or a new slice of length n if buf is too
// small.
func growInt64(buf []int64, n int) []int64 {
	if cap(buf) < n {
		return make([]int64, n)
	}
	return buf[:n]
}

// active checks Rate and reports whether a forward in this mode drops,
// resetting the state of the last forward.
func (d *Dropout) active(train bool, rng *rand.Rand) bool {
	if !(d.Rate >= 0 && d.Rate < 1) {
		panic("model: dropout rate outside [0, 1)")
	}
	d.mask, d.sparse, d.unmasked = nil, false, false
	if !train || d.Rate == 0 {
		return false
	}
	if rng == nil {
		panic("model: dropout needs an rng")
	}
	return true
}

// Backward returns dL/dx: dy times the last mask in a matrix the Dropout
// owns (overwritten by its next Backward), or dy itself when the last
// Forward was the identity. It will panic if dy does not
// match the mask, if the last forward was a ForwardSparse that dropped, or
// if it dropped without keeping a mask (a Model's input dropout).
func (d *Dropout) Backward(dy *dense.Matrix) *dense.Matrix {
	if d.sparse {
		panic("model: no dropout Backward after ForwardSparse")
	}
	if d.unmasked {
		panic("model: no dropout Backward after a Forward that kept no mask")
	}
	if d.mask == nil {
		return dy
	}
	if len(dy.Data) != len(d.mask) {
		panic("model: dy shape does not match the dropout mask")
	}
	dx := dense.Reuse(d.dx, dy.Rows, dy.Cols)
	d.dx = dx
	parallel(len(dy.Data), 1, int64(len(dy.Data)), func(lo, hi int) {
		dense.Mul(dx.Data[lo:hi], dy.Data[lo:hi], d.mask[lo:hi])
	})
	return dx
}

// dropper draws dropout decisions: 16 bits of rng per decision, four per
// Uint64, a decision keeping its element when the bits are at least
// round(rate·2¹⁶).
type dropper struct {
	src  rng.PCG
	t    uint64  // drop threshold
	keep float32 // 1/(1 − t/2¹⁶)
	r    uint64  // undrawn bits
	k    int     // decisions left in r
}

// newDropper returns the decisions of the stream (key, stream).
func newDropper(rate float32, key, stream uint64) dropper {
	t := uint64(math.Round(float64(rate) * 65536))
	d := dropper{t: t, keep: float32(1 / (1 - float64(t)/65536))}
	d.src = rng.PCG{Hi: key, Lo: stream}
	return d
}

// stream returns newDropper(rate, key, stream) for d = newDropper(rate, …):
// the same threshold and scale, without working them out again.
func (d dropper) stream(key, stream uint64) dropper {
	return dropper{src: rng.PCG{Hi: key, Lo: stream}, t: d.t, keep: d.keep}
}

// next draws a decision and returns its mask value, 0 or the keep scale.
func (d *dropper) next() float32 {
	if d.k == 0 {
		d.refill()
	}
	d.k--
	b := d.r & 0xffff
	d.r >>= 16
	if b >= d.t {
		return d.keep
	}
	return 0
}

// row masks one row: mask[i] = m and y[i] = x[i]·m for the next decision
// m of every element in order, or, with skipZeros, mask[i] = 0 and no
// decision for a zero element (y[i] = 0). mask may be nil: then only y is
// written. A row on a fresh draw whose every element draws (no zero to
// skip) goes to rowWords; otherwise it is next in a loop, with the undrawn
// bits in registers, four elements that start a fresh draw and need four
// decisions taking the four from one draw at once.
func (d *dropper) row(mask, y, x []float32, skipZeros bool) {
	if d.k == 0 && (!skipZeros || !dense.HasZero(x)) {
		d.rowWords(mask, y, x)
		return
	}
	src, r, k, t, keep := d.src, d.r, d.k, d.t, math.Float32bits(d.keep)
	y = y[:len(x)]
	if mask != nil {
		mask = mask[:len(x)]
	}
	for i := 0; i < len(x); i++ {
		if k == 0 && i+4 <= len(x) {
			x4, y4 := x[i:i+4:i+4], y[i:i+4:i+4]
			if !skipZeros || (x4[0] != 0 && x4[1] != 0 && x4[2] != 0 && x4[3] != 0) {
				var u uint64
				src, u = src.Next()
				m0, m1 := decide(u, t, keep), decide(u>>16, t, keep)
				m2, m3 := decide(u>>32, t, keep), decide(u>>48, t, keep)
				y4[0], y4[1], y4[2], y4[3] = x4[0]*m0, x4[1]*m1, x4[2]*m2, x4[3]*m3
				if mask != nil {
					m4 := mask[i : i+4 : i+4]
					m4[0], m4[1], m4[2], m4[3] = m0, m1, m2, m3
				}
				i += 3
				continue
			}
		}
		v := x[i]
		if skipZeros && v == 0 {
			if mask != nil {
				mask[i] = 0
			}
			y[i] = 0
			continue
		}
		if k == 0 {
			src, r = src.Next()
			k = 4
		}
		k--
		m := decide(r, t, keep)
		r >>= 16
		if mask != nil {
			mask[i] = m
		}
		y[i] = v * m
	}
	d.src, d.r, d.k = src, r, k
}

// wordsChunk is the elements of a row whose draws rowWords and rows8 make
// ahead at a time; a multiple of 4.
const wordsChunk = 256

// rows8 masks rows r … r+7 of c columns (mask, y and x hold those rows;
// mask may be nil), every element of which draws, each row from its own
// stream (key, rowID(ids, row)) of d's rate, as row would: the eight
// streams' draws are made side by side (dense.PCGFill8, AVX-512) into
// words, and dense.DropWordsStride applies each row's. It reports false,
// doing nothing, where PCGFill8 cannot run.
func (d dropper) rows8(key uint64, ids []int64, r, c int, mask, y, x []float32, words *[8 * wordsChunk / 4]uint64) bool {
	var hi, lo [8]uint64
	for i := range 8 {
		hi[i], lo[i] = key, rowID(ids, r+i)
	}
	for c0 := 0; c0 < c; c0 += wordsChunk {
		c1 := min(c0+wordsChunk, c)
		nw := (c1 - c0 + 3) / 4
		if !dense.PCGFill8(&hi, &lo, words[:8*nw]) {
			return false // at c0 = 0: nothing written yet
		}
		for i := range 8 {
			var m []float32
			if mask != nil {
				m = mask[i*c+c0 : i*c+c1]
			}
			dense.DropWordsStride(y[i*c+c0:i*c+c1], m, x[i*c+c0:i*c+c1], words[i:], 8, d.t, d.keep)
		}
	}
	return true
}

// rowWords is row when d has no undrawn bits and every element of x
// draws: the draws, four decisions each, are made ahead for up to
// wordsChunk elements at a time, and dense.DropWords applies them.
func (d *dropper) rowWords(mask, y, x []float32) {
	const chunk = wordsChunk
	var words [chunk / 4]uint64
	src := d.src
	nw := 0
	for lo := 0; lo < len(x); lo += chunk {
		hi := min(lo+chunk, len(x))
		nw = (hi - lo + 3) / 4
		src = src.Fill(words[:nw])
		var m []float32
		if mask != nil {
			m = mask[lo:hi]
		}
		dense.DropWords(y[lo:hi], m, x[lo:hi], words[:nw], d.t, d.keep)
	}
	d.src, d.r, d.k = src, 0, 0
	if used := len(x) % 4; used != 0 {
		d.r, d.k = words[nw-1]>>(16*used), 4-used
	}
}

// decide returns the mask value of the decision in b's low 16 bits: the
// keep scale (keep's bits) when they are at least t, else 0. It has no
// branch (the decision is a coin flip the predictor misses half the time):
// (b − t)>>63 is 1 exactly when b < t, since both are below 2¹⁶.
func decide(b, t uint64, keep uint32) float32 {
	drop := ((b & 0xffff) - t) >> 63
	return math.Float32frombits(keep &^ uint32(-drop))
}

// sparseRow drops the stored entries of row i of x (every entry of a
// pattern, whose values are 1, and every nonzero value draws the next
// decision in stored order; a stored zero draws nothing and is not kept),
// writing the kept entries' columns and values scaled by their mask to the
// front of idx and val, and returns how many it kept. Without a branch on
// the decision: every entry is written, and the position moves on only
// past a kept one.
func (d *dropper) sparseRow(idx []int64, val []float32, x *sparse.Matrix[float32], i int) int {
	src, r, k, t, keep := d.src, d.r, d.k, d.t, math.Float32bits(d.keep)
	e0, e1 := x.Indptr[i], x.Indptr[i+1]
	cols := x.Indices[e0:e1]
	idx, val = idx[:len(cols)], val[:len(cols)]
	var vals []float32
	if x.Values != nil {
		vals = x.Values[e0:e1]
		vals = vals[:len(cols)]
	}
	n := 0
	for e, c := range cols {
		v := float32(1)
		if vals != nil {
			if v = vals[e]; v == 0 {
				continue
			}
		}
		if k == 0 {
			src, r = src.Next()
			k = 4
		}
		k--
		drop := ((r & 0xffff) - t) >> 63 // 1 exactly when the bits are below t
		r >>= 16
		idx[n] = c
		val[n] = v * math.Float32frombits(keep)
		n += int(drop ^ 1)
	}
	d.src, d.r, d.k = src, r, k
	return n
}

// refill draws the next four decisions' bits (kept out of next, which
// then inlines).
func (d *dropper) refill() {
	d.src, d.r = d.src.Next()
	d.k = 4
}

// dropMask fills dst with 0 (probability ≈ rate) or the matching inverse
// keep probability, drawing 16 bits per element from the stream of one key
// drawn from rng.
func dropMask(dst []float32, rate float32, rng *rand.Rand) {
	d := newDropper(rate, rng.Uint64(), 0)
	for i := range dst {
		dst[i] = d.next()
	}
}

// checkSame panics unless y and dy have the same shape.
func checkSame(y, dy *dense.Matrix) {
	if y == nil {
		panic("model: Backward before Forward")
	}
	if dy == nil || dy.Rows != y.Rows || dy.Cols != y.Cols {
		panic("model: dy shape does not match the last Forward")
	}
}
