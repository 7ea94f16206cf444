package dense

// Row axpys: the kernels of a sparse-input layer, X·W and Xᵀ·dZ with X as
// CSR rows, in which every stored entry (i, c, a) moves one whole row
// (a·W[c] into out[i], a·dZ[i] into dW[c]). On amd64 with AVX2 they run
// in assembly; elsewhere, and for the last len % 8 columns, in Go. Either
// way each element gets the same terms in the same order, each product
// rounded to float32 before it is added (no fused multiply-add), so the
// results are bitwise those of calling Axpy once per entry.

// AxpyGather computes dst += Σ_k alpha[k]·x[idx[k]·ld : idx[k]·ld+n],
// n = len(dst), adding the terms in increasing k: the result of
// Axpy(alpha[k], row idx[k] of x, dst) for k = 0, 1, …, bit for bit.
// Entries whose alpha is zero (+0 or −0) are skipped, as a sparse product
// skips stored zeros; alpha nil means every alpha is 1. x is row-major
// with row stride ld. dst stays in registers while every row is added, so
// a row of the sparse input costs one pass over dst.
// It will panic if alpha is not nil and len(alpha) != len(idx), or if a
// row idx[k] does not lie within x.
func AxpyGather(dst, alpha []float32, idx []int64, x []float32, ld int) {
	axpyGather(dst, alpha, idx, x, ld, false)
}

// AxpyGatherTo is AxpyGather into a dst that starts from +0: it computes
// dst = Σ_k alpha[k]·x[idx[k]·ld : idx[k]·ld+n] without reading dst, bit
// for bit the result of clear(dst) and then AxpyGather. It will panic as
// AxpyGather does.
func AxpyGatherTo(dst, alpha []float32, idx []int64, x []float32, ld int) {
	axpyGather(dst, alpha, idx, x, ld, true)
}

// axpyGather is AxpyGather, or AxpyGatherTo when zero is set.
func axpyGather(dst, alpha []float32, idx []int64, x []float32, ld int, zero bool) {
	n := len(dst)
	checkRowAxpy(alpha, idx, len(x), ld, n)
	if n == 0 {
		return
	}
	if zero && (len(idx) == 0 || !useAVX2 || n&^7 == 0) {
		clear(dst)
	}
	if len(idx) == 0 {
		return
	}
	v := n &^ 7
	if useAVX2 && v > 0 {
		gatherAVX2(&dst[0], v, &x[0], ld, &idx[0], ptrOrNil(alpha), len(idx), zero)
		if zero {
			clear(dst[v:])
		}
	} else {
		v = 0
	}
	if v == n {
		return
	}
	if v == 0 && n >= 16 {
		eachEntry(idx, alpha, func(c int, a float32) { vec.Saxpy(n, a, x[c*ld:], 1, dst, 1) })
		return
	}
	tail := dst[v:n]
	eachEntry(idx, alpha, func(c int, a float32) {
		for j, r := range x[c*ld+v : c*ld+n] {
			tail[j] += float32(a * r)
		}
	})
}

// AxpyScatter computes, for k = 0, 1, … in turn,
// dst[idx[k]·ld : idx[k]·ld+n] += alpha[k]·x with n = len(x): the result
// of Axpy(alpha[k], x, row idx[k] of dst) for each k in order, bit for
// bit, so a repeated idx adds twice. Entries whose alpha is zero (+0 or
// −0) are skipped; alpha nil means every alpha is 1. dst is row-major with
// row stride ld and must not overlap x.
// It will panic if alpha is not nil and len(alpha) != len(idx), or if a
// row idx[k] does not lie within dst.
func AxpyScatter(dst []float32, ld int, idx []int64, alpha, x []float32) {
	n := len(x)
	checkRowAxpy(alpha, idx, len(dst), ld, n)
	if n == 0 || len(idx) == 0 {
		return
	}
	v := n &^ 7
	if useAVX2 && v > 0 {
		scatterAVX2(&dst[0], ld, &x[0], v, &idx[0], ptrOrNil(alpha), len(idx))
	} else {
		v = 0
	}
	if v == n {
		return
	}
	if v == 0 && n >= 16 {
		eachEntry(idx, alpha, func(c int, a float32) { vec.Saxpy(n, a, x, 1, dst[c*ld:], 1) })
		return
	}
	tail := x[v:n]
	eachEntry(idx, alpha, func(c int, a float32) {
		row := dst[c*ld+v : c*ld+n]
		for j, r := range tail {
			row[j] += float32(a * r)
		}
	})
}

// eachEntry calls f(idx[k], alpha[k]) for k = 0, 1, … in turn (alpha 1
// when alpha is nil), skipping the entries whose alpha is zero.
func eachEntry(idx []int64, alpha []float32, f func(c int, a float32)) {
	for k, c := range idx {
		a := float32(1)
		if alpha != nil {
			if a = alpha[k]; a == 0 {
				continue
			}
		}
		f(int(c), a)
	}
}

// checkRowAxpy panics unless alpha matches idx and every row idx[k] of a
// row-major matrix of size elements and stride ld has n elements in it.
func checkRowAxpy(alpha []float32, idx []int64, size, ld, n int) {
	if alpha != nil && len(alpha) != len(idx) {
		panic("dense: len(alpha) != len(idx)")
	}
	if n == 0 || len(idx) == 0 {
		return
	}
	checkRowsIn(maxRow(idx), size, ld, n)
}

// maxRow returns the largest idx[k] as a uint64, so that a negative one
// wraps above any row; 0 for an empty idx.
func maxRow(idx []int64) uint64 {
	var hi uint64
	for _, c := range idx {
		hi = max(hi, uint64(c))
	}
	return hi
}

// checkRowsIn panics unless rows 0 to hi of a row-major matrix of size
// elements and stride ld have n elements in them.
func checkRowsIn(hi uint64, size, ld, n int) {
	if ld < n || size < n {
		panic("dense: row out of range")
	}
	if last := uint64((size - n) / ld); hi > last { // the last row with n elements in it
		panic("dense: row out of range")
	}
}

// ptrOrNil returns &a[0], or nil for an empty a.
func ptrOrNil(a []float32) *float32 {
	if len(a) == 0 {
		return nil
	}
	return &a[0]
}

// AxpyScatterRows computes dst += Xᵀ·Y over n columns for sparse rows X
// (indptr, idx, alpha: CSR arrays, alpha nil for a pattern) and Y
// row-major with row stride ldy: for each row i of X in turn, AxpyScatter(
// dst, ld, idx[indptr[i]:indptr[i+1]], alpha[indptr[i]:indptr[i+1]],
// y[i·ldy : i·ldy+n]), bit for bit, with the bounds checked once for all
// rows. dst must not overlap y. It is NewScatterRows(indptr, idx,
// alpha).AddTo(dst, ld, y, ldy, n).
// It will panic if indptr decreases or leaves idx, alpha is not nil and
// len(alpha) != len(idx), a row of y or of dst lies outside its slice, or
// n > ldy.
func AxpyScatterRows(dst []float32, ld int, y []float32, ldy, n int, indptr, idx []int64, alpha []float32) {
	if len(indptr) <= 1 || n == 0 {
		return
	}
	r := NewScatterRows(indptr, idx, alpha)
	r.AddTo(dst, ld, y, ldy, n)
}

// ScatterRows holds sparse rows X (CSR arrays: indptr, idx, alpha, alpha
// nil for a pattern) whose structure has been checked once, for
// AxpyScatterRows over many column tiles: each AddTo then checks its
// bounds in constant time instead of reading every entry's index again.
// The arrays are not copied and must not change while it is in use.
type ScatterRows struct {
	indptr, idx []int64
	alpha       []float32
	hi          uint64 // the largest entry's index, negative ones wrapped above; 0 when there is none
}

// NewScatterRows checks sparse rows X given as CSR arrays (X's rows are
// indptr[i]:indptr[i+1] of idx and alpha, alpha nil for a pattern) and
// returns them for AddTo.
// It will panic if indptr decreases or leaves idx, or alpha is not nil and
// len(alpha) != len(idx).
func NewScatterRows(indptr, idx []int64, alpha []float32) *ScatterRows {
	rows := len(indptr) - 1
	if rows <= 0 {
		return &ScatterRows{indptr: indptr, idx: idx, alpha: alpha}
	}
	e0, e1 := indptr[0], indptr[rows]
	if e0 < 0 || e1 > int64(len(idx)) {
		panic("dense: indptr out of range")
	}
	for i := range rows {
		if indptr[i+1] < indptr[i] {
			panic("dense: indptr decreases")
		}
	}
	if alpha != nil && len(alpha) != len(idx) {
		panic("dense: len(alpha) != len(idx)")
	}
	return &ScatterRows{indptr: indptr, idx: idx, alpha: alpha, hi: maxRow(idx[e0:e1])}
}

// AddTo computes dst += Xᵀ·Y over n columns, as AxpyScatterRows(dst, ld,
// y, ldy, n, indptr, idx, alpha) does with r's arrays, bit for bit.
// It will panic if a row of y or of dst lies outside its slice, or n >
// ldy.
func (r *ScatterRows) AddTo(dst []float32, ld int, y []float32, ldy, n int) {
	indptr, idx, alpha := r.indptr, r.idx, r.alpha
	rows := len(indptr) - 1
	if rows <= 0 || n == 0 {
		return
	}
	if n > ldy || (rows-1)*ldy+n > len(y) {
		panic("dense: row out of range")
	}
	if indptr[0] != indptr[rows] {
		checkRowsIn(r.hi, len(dst), ld, n)
	}
	v := n &^ 7
	if !useAVX2 || v == 0 {
		for i := range rows {
			var ai []float32
			if alpha != nil {
				ai = alpha[indptr[i]:indptr[i+1]]
			}
			AxpyScatter(dst, ld, idx[indptr[i]:indptr[i+1]], ai, y[i*ldy:i*ldy+n])
		}
		return
	}
	for i := range rows {
		s, t := indptr[i], indptr[i+1]
		if s == t {
			continue
		}
		var ap *float32
		if alpha != nil {
			ap = &alpha[s]
		}
		x := y[i*ldy : i*ldy+n]
		scatterAVX2(&dst[0], ld, &x[0], v, &idx[s], ap, int(t-s))
		if v == n {
			continue
		}
		for k, c := range idx[s:t] {
			al := float32(1)
			if alpha != nil {
				if al = alpha[int(s)+k]; al == 0 {
					continue
				}
			}
			row := dst[int(c)*ld+v : int(c)*ld+n]
			for j, r := range x[v:] {
				row[j] += float32(al * r)
			}
		}
	}
}
