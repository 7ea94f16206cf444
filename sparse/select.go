package sparse

// SelectRows returns the rows of A listed in rows, in that order, as a new
// matrix: row i of the result is row rows[i] of A, its entries copied in
// A's order, and the result has A's NCols. rows may repeat and need not be
// sorted. Values are copied when A has them; a pattern stays a pattern. A
// is not modified and the result shares no memory with it. It takes time
// in proportion to len(rows) and the entries copied.
//
// SelectRows is a copy; SelectRowsSR forms the same rows as the product
// Q·A, which sorts each row and merges repeated columns.
// It will panic if an entry of rows lies outside [0, A.NRows).
func SelectRows[T Scalar](a *Matrix[T], rows []int64) *Matrix[T] {
	ptr := make([]int64, len(rows)+1)
	for x, i := range rows {
		if i < 0 || i >= a.NRows {
			panic("sparse: selected row out of range")
		}
		ptr[x+1] = ptr[x] + a.Degree(i)
	}
	nnz := ptr[len(rows)]
	out := &Matrix[T]{NRows: int64(len(rows)), NCols: a.NCols, Indptr: ptr, Indices: make([]int64, nnz)}
	if a.Values != nil {
		out.Values = make([]T, nnz)
	}
	for x, i := range rows {
		s, e := a.Indptr[i], a.Indptr[i+1]
		copy(out.Indices[ptr[x]:], a.Indices[s:e])
		if a.Values != nil {
			copy(out.Values[ptr[x]:], a.Values[s:e])
		}
	}
	return out
}

// SelectRowsSR returns P = Q·A over sr, where Q is the len(rows)×A.NRows
// selection matrix with Q(i, rows[i]) = 1: row i of P is row rows[i] of A
// with its columns sorted and the values of repeated columns merged by
// sr.Add (under PlusTimes on a pattern, into their count). rows may repeat
// and need not be sorted. A row of A that is sorted and distinct is copied
// without an accumulator; o.SortedB promises that every row is, and
// o.Threads bounds the goroutines, as for MulSR. P has the properties
// documented on MulSR: it always has values, even when A is a pattern.
// This is how samplers select the neighbourhoods of a frontier (P = Q·A).
// It will panic if an entry of rows lies outside [0, A.NRows).
func SelectRowsSR[T Scalar, S Semiring[T]](sr S, a *Matrix[T], rows []int64, o *Options) *Matrix[T] {
	nr := int64(len(rows))
	for _, i := range rows {
		if i < 0 || i >= a.NRows {
			panic("sparse: selected row out of range")
		}
	}
	q := &Matrix[T]{NRows: nr, NCols: a.NRows, Indptr: make([]int64, nr+1), Indices: rows}
	for i := range q.Indptr {
		q.Indptr[i] = int64(i)
	}
	p, err := MulSR(sr, q, a, o)
	if err != nil {
		panic(err) // Q has as many columns as A has rows
	}
	return p
}

// SelectRowsSRTo is SelectRowsSR writing P into dst, reusing its arrays
// where their capacity suffices, as MulSRTo does (a nil dst allocates);
// P is the same as SelectRowsSR's. When the rows selected are sorted and
// distinct (o.SortedB promises it of every row of A; otherwise each
// selected row is checked) it does not form Q or run the product: each row
// of P is its row of A copied, its values One ⊗ A's (One ⊗ One for a
// pattern), exactly what the product makes of a selection row, in time
// proportional to len(rows) and P's entries. A
// caller that selects many times and drops each P before the next (a
// streamed sampler) saves the product's set-up and the allocations.
// It will panic if an entry of rows lies outside [0, A.NRows).
func SelectRowsSRTo[T Scalar, S Semiring[T]](dst *Matrix[T], sr S, a *Matrix[T], rows []int64, o *Options) *Matrix[T] {
	nr := int64(len(rows))
	for _, i := range rows {
		if i < 0 || i >= a.NRows {
			panic("sparse: selected row out of range")
		}
	}
	sorted := o != nil && o.SortedB
	if !sorted {
		sorted = true
		for _, i := range rows {
			if !strictlyIncreasing(a.Indices[a.Indptr[i]:a.Indptr[i+1]]) {
				sorted = false
				break
			}
		}
	}
	if !sorted {
		q := &Matrix[T]{NRows: nr, NCols: a.NRows, Indptr: make([]int64, nr+1), Indices: rows}
		for i := range q.Indptr {
			q.Indptr[i] = int64(i)
		}
		p, err := MulSRTo(dst, sr, q, a, o)
		if err != nil {
			panic(err) // Q has as many columns as A has rows
		}
		return p
	}
	k := kernelOf[T](sr)
	c := dst
	if c == nil {
		c = &Matrix[T]{}
	}
	*c = Matrix[T]{NRows: nr, NCols: a.NCols, Indptr: reuse(c.Indptr, nr+1), Indices: c.Indices, Values: c.Values}
	c.Indptr[0] = 0
	for x, i := range rows {
		c.Indptr[x+1] = c.Indptr[x] + a.Indptr[i+1] - a.Indptr[i]
	}
	nnz := c.Indptr[nr]
	c.Indices, c.Values = reuse(c.Indices, nnz), reuse(c.Values, nnz)
	one := k.One()
	if a.Values == nil {
		fillValue(c.Values, k.Mul(one, one))
	}
	for x, i := range rows {
		lo, hi := a.Indptr[i], a.Indptr[i+1]
		o, e := c.Indptr[x], c.Indptr[x+1]
		copy(c.Indices[o:e], a.Indices[lo:hi])
		if a.Values != nil {
			k.scale(c.Values[o:e], a.Values[lo:hi], one)
		}
	}
	return c
}

// RowRange returns rows [lo, hi) of a as a matrix of hi−lo rows. It shares
// Indices and Values with a (a valued a gives non-nil Values, even when
// empty); only the row offsets are new.
// It will panic if [lo, hi) is not within [0, a.NRows].
func RowRange[T Scalar](a *Matrix[T], lo, hi int64) *Matrix[T] {
	s, e := a.Indptr[lo], a.Indptr[hi]
	ptr := make([]int64, hi-lo+1)
	for i := range ptr {
		ptr[i] = a.Indptr[lo+int64(i)] - s
	}
	out := &Matrix[T]{NRows: hi - lo, NCols: a.NCols, Indptr: ptr, Indices: a.Indices[s:e:e]}
	if a.Values != nil {
		out.Values = a.Values[s:e:e]
	}
	return out
}

// SelectCols returns the entries of A whose columns lie in [lo, hi) as a
// new matrix of A's shape: the column ids are kept (not renumbered), and
// so is the order of the entries within each row. Values are copied when A
// has them. A is not modified and the result shares no memory with it.
// ColRange is the same selection with the columns renumbered.
// It will panic if lo > hi.
func SelectCols[T Scalar](a *Matrix[T], lo, hi int64) *Matrix[T] {
	return selectBlock(a, nil, true, lo, hi, 0, a.NCols)
}

// ColRange returns columns [lo, hi) of A as a new A.NRows×(hi−lo) matrix:
// column j of A becomes column j−lo, and the entries within each row keep
// their order. It is the column twin of RowRange, but copies: values are
// copied when A has them (a pattern stays a pattern), A is not modified
// and the result shares no memory with it. The result's Indices (and
// Values, when A has them) are never nil, even when empty.
// It will panic if lo > hi.
func ColRange[T Scalar](a *Matrix[T], lo, hi int64) *Matrix[T] {
	return selectBlock(a, nil, true, lo, hi, lo, hi-lo)
}

// SelectBlock returns the block A(rows, lo:hi) as a new
// len(rows)×(hi−lo) matrix: row x of the result holds the entries of row
// rows[x] of A whose columns lie in [lo, hi), renumbered from 0 (column j
// becomes j−lo), in A's order. rows may repeat and need not be sorted; an
// empty rows gives an empty matrix. It equals ColRange(SelectRows(A,
// rows), lo, hi) without the intermediate copy, and takes time in
// proportion to len(rows) and the entries of the rows selected. Values,
// ownership and nil-ness are as for ColRange.
// It will panic if lo > hi or an entry of rows lies outside [0, A.NRows).
func SelectBlock[T Scalar](a *Matrix[T], rows []int64, lo, hi int64) *Matrix[T] {
	return selectBlock(a, rows, false, lo, hi, lo, hi-lo)
}

// selectBlock returns the entries of rows (every row of a when all) whose
// columns lie in [lo, hi), their columns less shift, as a matrix of ncols
// columns.
func selectBlock[T Scalar](a *Matrix[T], rows []int64, all bool, lo, hi, shift, ncols int64) *Matrix[T] {
	if lo > hi {
		panic("sparse: column range with lo > hi")
	}
	nr := int64(len(rows))
	row := func(x int64) int64 { return rows[x] }
	if all {
		nr, row = a.NRows, func(x int64) int64 { return x }
	}
	ptr := make([]int64, nr+1)
	for x := range nr {
		i := row(x)
		if i < 0 || i >= a.NRows {
			panic("sparse: selected row out of range")
		}
		n := ptr[x]
		for _, j := range a.Row(i) {
			if j >= lo && j < hi {
				n++
			}
		}
		ptr[x+1] = n
	}
	out := &Matrix[T]{NRows: nr, NCols: ncols, Indptr: ptr, Indices: make([]int64, ptr[nr])}
	if a.Values != nil {
		out.Values = make([]T, ptr[nr])
	}
	for x := range nr {
		i := row(x)
		o := ptr[x]
		for q := a.Indptr[i]; q < a.Indptr[i+1]; q++ {
			if j := a.Indices[q]; j >= lo && j < hi {
				out.Indices[o] = j - shift
				if a.Values != nil {
					out.Values[o] = a.Values[q]
				}
				o++
			}
		}
	}
	return out
}
