package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selectFixture is a 4×5 matrix whose row 0 is unsorted with column 3
// repeated and whose row 1 is empty.
func selectFixture() *CSR {
	return &CSR{
		NRows: 4, NCols: 5,
		Indptr:  []int64{0, 3, 3, 5, 6},
		Indices: []int64{3, 1, 3, 0, 4, 2},
		Values:  []float64{1, 2, 4, 8, 16, 32},
	}
}

func TestSelectRows(t *testing.T) {
	a := selectFixture()
	for _, tc := range []struct {
		name string
		rows []int64
		want *CSR
	}{
		{"reorder-repeat", []int64{2, 0, 2}, &CSR{
			NRows: 3, NCols: 5,
			Indptr:  []int64{0, 2, 5, 7},
			Indices: []int64{0, 4, 3, 1, 3, 0, 4},
			Values:  []float64{8, 16, 1, 2, 4, 8, 16},
		}},
		{"empty-row", []int64{1, 3}, &CSR{NRows: 2, NCols: 5, Indptr: []int64{0, 0, 1}, Indices: []int64{2}, Values: []float64{32}}},
		{"none", nil, &CSR{NRows: 0, NCols: 5, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SelectRows(a, tc.rows)
			assert.Equal(t, tc.want, got)
			require.NoError(t, got.Validate())

			// A pattern stays a pattern.
			pat := *a
			pat.Values = nil
			want := *tc.want
			want.Values = nil
			assert.Equal(t, &want, SelectRows(&pat, tc.rows))
		})
	}

	// The result shares no memory with A, which is not modified.
	got := SelectRows(a, []int64{0})
	got.Indices[0], got.Values[0] = 9, 9
	assert.Equal(t, selectFixture(), a)

	for _, rows := range [][]int64{{-1}, {0, 4}} {
		assert.Panics(t, func() { SelectRows(a, rows) }, "rows %v", rows)
		assert.Panics(t, func() { SelectRowsSR(PlusTimes[float64]{}, a, rows, nil) }, "rows %v", rows)
	}
}

func TestSelectRowsSR(t *testing.T) {
	a := selectFixture()
	// Row 0 comes out sorted, the two entries of column 3 added.
	got := SelectRowsSR(PlusTimes[float64]{}, a, []int64{2, 0, 1}, nil)
	assert.Equal(t, &CSR{
		NRows: 3, NCols: 5,
		Indptr:  []int64{0, 2, 4, 4},
		Indices: []int64{0, 4, 1, 3},
		Values:  []float64{8, 16, 2, 5},
	}, got)

	// On a pattern the repeats merge into their count under (+, ×), and
	// into true under (or, and).
	pat := *a
	pat.Values = nil
	got = SelectRowsSR(PlusTimes[float64]{}, &pat, []int64{0}, nil)
	assert.Equal(t, []int64{1, 3}, got.Indices)
	assert.Equal(t, []float64{1, 2}, got.Values)
	b := &Matrix[bool]{NRows: 4, NCols: 5, Indptr: a.Indptr, Indices: a.Indices}
	gb := SelectRowsSR(OrAnd{}, b, []int64{0, 3}, &Options{Threads: 1})
	assert.Equal(t, []int64{0, 2, 3}, gb.Indptr)
	assert.Equal(t, []int64{1, 3, 2}, gb.Indices)
	assert.Equal(t, []bool{true, true, true}, gb.Values)

	// On rows sorted and distinct the product is the copy, with or
	// without the SortedB promise and on any number of threads.
	rnd := rand.New(rand.NewPCG(3, 4))
	const n = 300
	r := &CSR{NRows: n, NCols: n, Indptr: make([]int64, n+1)}
	for i := range int64(n) {
		for j := range int64(n) {
			if rnd.IntN(20) == 0 {
				r.Indices = append(r.Indices, j)
				r.Values = append(r.Values, rnd.NormFloat64())
			}
		}
		r.Indptr[i+1] = int64(len(r.Indices))
	}
	rows := make([]int64, 500)
	for i := range rows {
		rows[i] = rnd.Int64N(n)
	}
	want := SelectRows(r, rows)
	for _, o := range []*Options{nil, {Threads: 1}, {Threads: 4, exact: true}, {Threads: 1, SortedB: true}, {Threads: 3, SortedB: true, exact: true}} {
		assert.Equal(t, want, SelectRowsSR(PlusTimes[float64]{}, r, rows, o), "options %+v", o)
	}
}

// SelectRowsSRTo makes SelectRowsSR's matrix, bit for bit, into a
// reused dst of any capacity: with SortedB by copying the rows, without
// it by the product (which also merges an unsorted row's repeats).
func TestSelectRowsSRTo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	const n = 200
	// Rows sorted and distinct (some empty), with values that a careless
	// copy would change: −0, NaN, ±Inf.
	r := &CSR{NRows: n, NCols: n, Indptr: make([]int64, n+1)}
	special := []float64{math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1)}
	for i := range int64(n) {
		for j := range int64(n) {
			if rnd.IntN(15) == 0 {
				r.Indices = append(r.Indices, j)
				v := rnd.NormFloat64()
				if rnd.IntN(10) == 0 {
					v = special[rnd.IntN(len(special))]
				}
				r.Values = append(r.Values, v)
			}
		}
		r.Indptr[i+1] = int64(len(r.Indices))
	}
	pat := &CSR{NRows: n, NCols: n, Indptr: r.Indptr, Indices: r.Indices}
	boolPat := &Matrix[bool]{NRows: n, NCols: n, Indptr: r.Indptr, Indices: r.Indices}
	rowSets := [][]int64{nil, {3}, {5, 5, 0, 199}}
	many := make([]int64, 400)
	for i := range many {
		many[i] = rnd.Int64N(n)
	}
	rowSets = append(rowSets, many)
	for _, sorted := range []bool{false, true} {
		o := &Options{Threads: 1, SortedB: sorted}
		var dst, pdst *CSR // reused across the row sets: growing and shrinking
		var bdst *Matrix[bool]
		for x, rows := range rowSets {
			name := fmt.Sprintf("sorted=%v/rows %d", sorted, x)
			// NaN != NaN: compare the values' bits.
			dst = SelectRowsSRTo(dst, PlusTimes[float64]{}, r, rows, o)
			assertSameBits(t, SelectRowsSR(PlusTimes[float64]{}, r, rows, o), dst, name+" plus-times")
			mp := SelectRowsSRTo(nil, MinPlus[float64]{}, r, rows, o)
			assertSameBits(t, SelectRowsSR(MinPlus[float64]{}, r, rows, o), mp, name+" min-plus")
			pdst = SelectRowsSRTo(pdst, PlusTimes[float64]{}, pat, rows, o)
			assert.Equal(t, SelectRowsSR(PlusTimes[float64]{}, pat, rows, o), pdst, name+" pattern")
			bdst = SelectRowsSRTo(bdst, OrAnd{}, boolPat, rows, o)
			assert.Equal(t, SelectRowsSR(OrAnd{}, boolPat, rows, o), bdst, name+" or-and")
		}
	}
	// Without SortedB an unsorted row is sorted and its repeats merged,
	// as SelectRowsSR does (its test checks the values).
	fx := selectFixture()
	got := SelectRowsSRTo(&CSR{Indptr: make([]int64, 10)}, PlusTimes[float64]{}, fx, []int64{0, 2}, nil)
	assert.Equal(t, SelectRowsSR(PlusTimes[float64]{}, fx, []int64{0, 2}, nil), got)
	assert.Panics(t, func() { SelectRowsSRTo(nil, OrAnd{}, boolPat, []int64{n}, &Options{SortedB: true}) }, "row out of range")
}

// assertSameBits asserts that a and b have the same shape, indices and
// values bit for bit.
func assertSameBits(t *testing.T, want, got *CSR, msg string) {
	t.Helper()
	require.Equal(t, want.NRows, got.NRows, msg)
	require.Equal(t, want.NCols, got.NCols, msg)
	require.Equal(t, want.Indptr, got.Indptr, msg)
	require.Equal(t, want.Indices, got.Indices, msg)
	require.Len(t, got.Values, len(want.Values), msg)
	for q := range want.Values {
		require.Equal(t, math.Float64bits(want.Values[q]), math.Float64bits(got.Values[q]), "%s: value %d", msg, q)
	}
}

func TestFromDense(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rows, cols int
		data       []float32
		want       *Matrix[float32]
	}{
		{"empty", 0, 3, nil, &Matrix[float32]{NCols: 3, Indptr: []int64{0}, Indices: []int64{}, Values: []float32{}}},
		{"zero row", 3, 3, []float32{0, 2, 0, 0, 0, 0, -1, 0, 3},
			&Matrix[float32]{NRows: 3, NCols: 3, Indptr: []int64{0, 1, 1, 3}, Indices: []int64{1, 0, 2}, Values: []float32{2, -1, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FromDense(tc.rows, tc.cols, tc.data)
			require.NoError(t, got.Validate())
			require.Equal(t, tc.want, got)
		})
	}
	require.Panics(t, func() { FromDense(2, 2, []float32{1}) })
}

func TestRowRange(t *testing.T) {
	a := &Matrix[float64]{NRows: 3, NCols: 4, Indptr: []int64{0, 2, 2, 5}, Indices: []int64{0, 3, 1, 2, 3}, Values: []float64{1, 2, 3, 4, 5}}
	r := RowRange(a, 1, 3)
	require.Equal(t, int64(2), r.NRows)
	require.Equal(t, []int64{0, 0, 3}, r.Indptr)
	require.Equal(t, []int64{1, 2, 3}, r.Indices)
	require.Equal(t, []float64{3, 4, 5}, r.Values)
	require.NoError(t, r.Validate())
	e := RowRange(a, 1, 2)
	require.NotNil(t, e.Values, "a valued matrix's empty range keeps non-nil values")
	require.Empty(t, e.Indices)
}

func TestSelectCols(t *testing.T) {
	a := selectFixture()
	for _, tc := range []struct {
		name   string
		lo, hi int64
		want   *CSR
	}{
		// Row 0 keeps its order (3, 1, 3) and the repeat; ids stay global.
		{"middle", 1, 4, &CSR{NRows: 4, NCols: 5, Indptr: []int64{0, 3, 3, 3, 4}, Indices: []int64{3, 1, 3, 2}, Values: []float64{1, 2, 4, 32}}},
		{"all", 0, 5, a},
		{"none", 2, 2, &CSR{NRows: 4, NCols: 5, Indptr: []int64{0, 0, 0, 0, 0}, Indices: []int64{}, Values: []float64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SelectCols(a, tc.lo, tc.hi)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, selectFixture(), a, "input unchanged")
		})
	}
	p := &Matrix[float32]{NRows: 1, NCols: 3, Indptr: []int64{0, 2}, Indices: []int64{0, 2}}
	assert.Equal(t, &Matrix[float32]{NRows: 1, NCols: 3, Indptr: []int64{0, 1}, Indices: []int64{2}}, SelectCols(p, 1, 3), "a pattern stays a pattern")
	assert.Panics(t, func() { SelectCols(a, 3, 2) })
}

// ColRange renumbers the columns kept from 0 and narrows the matrix to
// them; SelectBlock does the same on chosen rows. The fixture's rows are
// 0: (3,1) (1,2) (3,4); 1: empty; 2: (0,8) (4,16); 3: (2,32).
func TestColRangeSelectBlock(t *testing.T) {
	a := selectFixture()
	for _, tc := range []struct {
		name   string
		rows   []int64 // nil: ColRange, every row
		lo, hi int64
		want   *CSR
	}{
		{"middle", nil, 1, 4, &CSR{NRows: 4, NCols: 3, Indptr: []int64{0, 3, 3, 3, 4}, Indices: []int64{2, 0, 2, 1}, Values: []float64{1, 2, 4, 32}}},
		{"all", nil, 0, 5, a},
		{"last column", nil, 4, 5, &CSR{NRows: 4, NCols: 1, Indptr: []int64{0, 0, 0, 1, 1}, Indices: []int64{0}, Values: []float64{16}}},
		{"none", nil, 2, 2, &CSR{NRows: 4, NCols: 0, Indptr: []int64{0, 0, 0, 0, 0}, Indices: []int64{}, Values: []float64{}}},
		// Row 3 twice, row 0 keeps its order and repeat.
		{"rows repeated", []int64{3, 0, 3}, 2, 5, &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 1, 3, 4}, Indices: []int64{0, 1, 1, 0}, Values: []float64{32, 1, 4, 32}}},
		{"empty row kept", []int64{1, 2}, 0, 1, &CSR{NRows: 2, NCols: 1, Indptr: []int64{0, 0, 1}, Indices: []int64{0}, Values: []float64{8}}},
		{"no rows", []int64{}, 0, 5, &CSR{NRows: 0, NCols: 5, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *CSR
			if tc.rows == nil {
				got = ColRange(a, tc.lo, tc.hi)
			} else {
				got = SelectBlock(a, tc.rows, tc.lo, tc.hi)
				assert.Equal(t, ColRange(SelectRows(a, tc.rows), tc.lo, tc.hi), got, "SelectBlock is ColRange of SelectRows")
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, selectFixture(), a, "input unchanged")
		})
	}
	p := &Matrix[float32]{NRows: 1, NCols: 3, Indptr: []int64{0, 2}, Indices: []int64{0, 2}}
	assert.Equal(t, &Matrix[float32]{NRows: 1, NCols: 2, Indptr: []int64{0, 1}, Indices: []int64{1}}, ColRange(p, 1, 3), "a pattern stays a pattern")
	assert.Panics(t, func() { ColRange(a, 3, 2) })
	assert.Panics(t, func() { SelectBlock(a, []int64{0}, 3, 2) })
	assert.Panics(t, func() { SelectBlock(a, []int64{4}, 0, 1) })
	assert.Panics(t, func() { SelectBlock(a, []int64{-1}, 0, 1) })
}
