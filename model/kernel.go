package model

import (
	"runtime"
	"slices"
	"sync"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// minParallelWork is the number of multiply-adds below which a sparse kernel
// runs on one goroutine.
const minParallelWork = 1 << 16

// parallel calls fn on consecutive chunks [lo, hi) covering [0, n), on up to
// GOMAXPROCS goroutines when work (multiply-adds in total) is large enough.
// Chunk boundaries are multiples of align. Each index is handled by exactly
// one call, so results do not depend on the number of goroutines.
func parallel(n, align int, work int64, fn func(lo, hi int)) {
	p := runtime.GOMAXPROCS(0)
	if q := int(work / minParallelWork); q < p {
		p = q
	}
	if q := (n + align - 1) / align; q < p {
		p = q
	}
	if p <= 1 {
		fn(0, n)
		return
	}
	chunk := ((n+p-1)/p + align - 1) / align * align
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// spmm computes dst = S·x, where S is a's sparsity pattern weighted by w
// (one weight per stored entry, or nil for all ones) and with row i scaled by
// rowScale[i] (nil for 1). x has a.NCols rows and f columns; dst has a.NRows
// rows of f columns and is overwritten.
func spmm(dst []float32, a *sparse.CSR, w, rowScale []float32, x []float32, f int) {
	nr := int(a.NRows)
	dst = dst[:nr*f]
	parallel(nr, 1, a.NNZ()*int64(f), func(lo, hi int) {
		var alpha []float32
		for i := lo; i < hi; i++ {
			out := dst[i*f : (i+1)*f]
			s := float32(1)
			if rowScale != nil {
				s = rowScale[i]
			}
			e0, e1 := a.Indptr[i], a.Indptr[i+1]
			alpha = alpha[:0]
			for e := e0; e < e1; e++ {
				al := s
				if w != nil {
					al *= w[e]
				}
				alpha = append(alpha, al)
			}
			gatherRowTo(out, alpha, a.Indices[e0:e1], x, f)
		}
	})
}

// gatherRow computes out += Σ_k alpha[k]·(row idx[k] of x, f wide), bit
// for bit one dense.Axpy per entry in k order, zero alphas included: with
// dense.AxpyGather, which keeps out in registers, unless an alpha is zero
// (AxpyGather skips those; Axpy adds 0·x, NaN for an infinite x).
func gatherRow(out, alpha []float32, idx []int64, x []float32, f int) {
	if !slices.Contains(alpha, 0) {
		dense.AxpyGather(out, alpha, idx, x, f)
		return
	}
	for k, c := range idx {
		dense.Axpy(alpha[k], x[int(c)*f:int(c+1)*f], out)
	}
}

// gatherRowTo is gatherRow into an out that starts from +0, without
// reading out: bit for bit clear(out) and then gatherRow.
func gatherRowTo(out, alpha []float32, idx []int64, x []float32, f int) {
	if !slices.Contains(alpha, 0) {
		dense.AxpyGatherTo(out, alpha, idx, x, f)
		return
	}
	clear(out)
	gatherRow(out, alpha, idx, x, f)
}

// transposed is the transpose of a block's weighted pattern (CSC order):
// column j's entries are ptr[j]:ptr[j+1] of row (the destination) and val
// (the weight), in increasing row order. Backward passes use it to turn the
// scatter dL/dx += Sᵀ·dy into a gather with sequential writes, which runs in
// parallel over source rows and sums in a fixed order.
type transposed struct {
	ptr []int
	row []int32
	val []float32
}

// build sets t to the transpose of S, S as in spmm.
func (t *transposed) build(a *sparse.CSR, w, rowScale []float32) {
	nr, nc, nnz := int(a.NRows), int(a.NCols), int(a.NNZ())
	if cap(t.ptr) < nc+1 {
		t.ptr = make([]int, nc+1)
	}
	t.ptr = t.ptr[:nc+1]
	clear(t.ptr)
	for _, j := range a.Indices {
		t.ptr[j+1]++
	}
	for j := range nc {
		t.ptr[j+1] += t.ptr[j]
	}
	if cap(t.row) < nnz {
		t.row = make([]int32, nnz)
	}
	t.row = t.row[:nnz]
	t.val = dense.Grow(t.val, nnz)
	// t.ptr[j] serves as the insertion cursor of column j, then is shifted back.
	for i := range nr {
		s := float32(1)
		if rowScale != nil {
			s = rowScale[i]
		}
		for e := a.Indptr[i]; e < a.Indptr[i+1]; e++ {
			j := a.Indices[e]
			k := t.ptr[j]
			t.ptr[j]++
			t.row[k] = int32(i)
			v := s
			if w != nil {
				v *= w[e]
			}
			t.val[k] = v
		}
	}
	copy(t.ptr[1:], t.ptr[:nc])
	t.ptr[0] = 0
}

// mulAdd computes dst += Sᵀ·dy: dy has one row of f columns per row of S
// and dst one per column.
func (t *transposed) mulAdd(dst, dy []float32, f int) { t.mul(dst, dy, f, false) }

// mulTo computes dst = Sᵀ·dy (mulAdd without reading dst): bit for bit
// clear(dst) and then mulAdd.
func (t *transposed) mulTo(dst, dy []float32, f int) { t.mul(dst, dy, f, true) }

// mul is mulAdd, or mulTo when to is set.
func (t *transposed) mul(dst, dy []float32, f int, to bool) {
	nc := len(t.ptr) - 1
	parallel(nc, 1, int64(len(t.row))*int64(f), func(lo, hi int) {
		var idx []int64
		for j := lo; j < hi; j++ {
			k0, k1 := t.ptr[j], t.ptr[j+1]
			idx = idx[:0]
			for _, i := range t.row[k0:k1] {
				idx = append(idx, int64(i))
			}
			if to {
				gatherRowTo(dst[j*f:(j+1)*f], t.val[k0:k1], idx, dy, f)
			} else {
				gatherRow(dst[j*f:(j+1)*f], t.val[k0:k1], idx, dy, f)
			}
		}
	})
}

// colSumAdd adds the column sums of the r×f matrix x to dst (len f).
func colSumAdd(dst, x []float32, r, f int) {
	for i := 0; i < r; i++ {
		dense.Axpy(1, x[i*f:(i+1)*f], dst)
	}
}

// addRowVec adds v (len f) to every row of the r×f matrix x.
func addRowVec(x, v []float32, r, f int) {
	for i := 0; i < r; i++ {
		dense.Axpy(1, v, x[i*f:(i+1)*f])
	}
}
