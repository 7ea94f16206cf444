package spgemm

import (
	"sync"

	"gnnmpi/sparse"
)

// Local block manipulation: the slicing, concatenation and sparse sums the
// distributed products need around the local kernel of package sparse.

// rowLengths returns the lengths of rows [lo, hi) of a.
func rowLengths[T sparse.Scalar](a *sparse.Matrix[T], lo, hi int64) []int64 {
	d := make([]int64, hi-lo)
	for i := range d {
		d[i] = a.Indptr[lo+int64(i)+1] - a.Indptr[lo+int64(i)]
	}
	return d
}

// hconcat returns [p_0 | p_1 | …]: the pieces have the same rows, and the
// columns of piece t are shifted by off[t]; the result has ncols columns. Row
// i of the result lists the entries of row i of each piece in piece order.
// All pieces must be pattern or all valued.
func hconcat[T sparse.Scalar](pieces []*sparse.Matrix[T], off []int64, nrows, ncols int64, valued bool) *sparse.Matrix[T] {
	ptr := make([]int64, nrows+1)
	for _, pc := range pieces {
		for i := range nrows {
			ptr[i+1] += pc.Indptr[i+1] - pc.Indptr[i]
		}
	}
	for i := range nrows {
		ptr[i+1] += ptr[i]
	}
	out := &sparse.Matrix[T]{NRows: nrows, NCols: ncols, Indptr: ptr, Indices: make([]int64, ptr[nrows])}
	if valued {
		out.Values = make([]T, ptr[nrows])
	}
	next := append([]int64(nil), ptr[:nrows]...)
	for t, pc := range pieces {
		for i := range nrows {
			s, e := pc.Indptr[i], pc.Indptr[i+1]
			at := next[i]
			for k, j := range pc.Indices[s:e] {
				out.Indices[at+int64(k)] = j + off[t]
			}
			if valued {
				copy(out.Values[at:], pc.Values[s:e])
			}
			next[i] += e - s
		}
	}
	return out
}

// sum returns mats[0] ⊕ mats[1] ⊕ … over sr: the union of their entries,
// with the values at a shared position combined in the order of mats (a
// left fold). Every matrix must have the same shape and rows with sorted,
// distinct columns, as sparse.MulSR returns them; the result has them too.
// A pattern matrix's entries are sr.One(). The rows are split into blocks
// over up to threads goroutines.
func sum[T sparse.Scalar, S sparse.Semiring[T]](sr S, mats []*sparse.Matrix[T], threads int) *sparse.Matrix[T] {
	acc := mats[0]
	if acc.Values == nil {
		acc = withValues(acc, sr.One())
	}
	for _, b := range mats[1:] {
		acc = add(sr, acc, b, threads)
	}
	return acc
}

// withValues returns a copy of the pattern matrix a with every value v.
func withValues[T sparse.Scalar](a *sparse.Matrix[T], v T) *sparse.Matrix[T] {
	vals := make([]T, a.NNZ())
	for q := range vals {
		vals[q] = v
	}
	return &sparse.Matrix[T]{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices, Values: vals}
}

// mulAdd returns part ⊕ x⊗y over sr with the local options lo: the
// product itself when part is nil (the first stage of a staged multiply).
func mulAdd[T sparse.Scalar, S sparse.Semiring[T]](sr S, part, x, y *sparse.Matrix[T], lo *sparse.Options) (*sparse.Matrix[T], error) {
	xy, err := sparse.MulSR(sr, x, y, lo)
	if err != nil {
		return nil, err
	}
	if part == nil {
		return xy, nil
	}
	return add(sr, part, xy, lo.Threads), nil
}

// add returns a ⊕ b by merging rows; see sum. a has values.
func add[T sparse.Scalar, S sparse.Semiring[T]](sr S, a, b *sparse.Matrix[T], threads int) *sparse.Matrix[T] {
	if b.Values == nil {
		b = withValues(b, sr.One())
	}
	m := a.NRows
	if a.NNZ() == 0 {
		return b
	}
	if b.NNZ() == 0 {
		return a
	}
	out := &sparse.Matrix[T]{NRows: m, NCols: a.NCols, Indptr: make([]int64, m+1)}
	if threads <= 1 || a.NNZ()+b.NNZ() < minParallelWork {
		// One pass into room for both, left partly unused.
		n := a.NNZ() + b.NNZ()
		out.Indices, out.Values = make([]int64, n), make([]T, n)
		o := int64(0)
		for i := range m {
			o += mergeRow(sr, a, b, i, out.Indices[o:], out.Values[o:])
			out.Indptr[i+1] = o
		}
		out.Indices, out.Values = out.Indices[:o:o], out.Values[:o:o]
		return out
	}
	// Count, then merge into place, both over blocks of rows.
	ptr := out.Indptr
	parallelRows(m, a.NNZ()+b.NNZ(), threads, func(lo, hi int64) {
		for i := lo; i < hi; i++ {
			x, xe := a.Indptr[i], a.Indptr[i+1]
			y, ye := b.Indptr[i], b.Indptr[i+1]
			n := (xe - x) + (ye - y)
			for x < xe && y < ye {
				ja, jb := a.Indices[x], b.Indices[y]
				if ja <= jb {
					x++
				}
				if jb <= ja {
					y++
				}
				if ja == jb {
					n--
				}
			}
			ptr[i+1] = n
		}
	})
	for i := range m {
		ptr[i+1] += ptr[i]
	}
	out.Indices, out.Values = make([]int64, ptr[m]), make([]T, ptr[m])
	parallelRows(m, ptr[m], threads, func(lo, hi int64) {
		for i := lo; i < hi; i++ {
			mergeRow(sr, a, b, i, out.Indices[ptr[i]:], out.Values[ptr[i]:])
		}
	})
	return out
}

// mergeRow writes row i of a ⊕ b (both valued) to ind and val, which have
// room for it, and returns its length.
func mergeRow[T sparse.Scalar, S sparse.Semiring[T]](sr S, a, b *sparse.Matrix[T], i int64, ind []int64, val []T) int64 {
	ai, av := a.Indices[a.Indptr[i]:a.Indptr[i+1]], a.Values[a.Indptr[i]:a.Indptr[i+1]]
	bi, bv := b.Indices[b.Indptr[i]:b.Indptr[i+1]], b.Values[b.Indptr[i]:b.Indptr[i+1]]
	x, y, o := 0, 0, 0
	for x < len(ai) && y < len(bi) {
		ja, jb := ai[x], bi[y]
		switch {
		case ja < jb:
			ind[o], val[o] = ja, av[x]
			x++
		case ja > jb:
			ind[o], val[o] = jb, bv[y]
			y++
		default:
			ind[o], val[o] = ja, sr.Add(av[x], bv[y])
			x++
			y++
		}
		o++
	}
	o += copy(ind[o:], ai[x:])
	copy(val[o-(len(ai)-x):], av[x:])
	n := copy(ind[o:], bi[y:])
	copy(val[o:], bv[y:])
	return int64(o + n)
}

// minParallelWork is the least number of entries worth splitting a sum
// over goroutines.
const minParallelWork = 1 << 16

// parallelRows calls fn over blocks of [0, m) on up to threads goroutines
// when the work justifies it.
func parallelRows(m, work int64, threads int, fn func(lo, hi int64)) {
	t := int64(max(1, threads))
	t = min(t, max(1, work/minParallelWork), max(1, m))
	if t <= 1 {
		fn(0, m)
		return
	}
	var wg sync.WaitGroup
	for x := range t {
		lo, hi := m*x/t, m*(x+1)/t
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}
