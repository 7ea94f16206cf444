package sparse

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromCOO(t *testing.T) {
	for _, tc := range []struct {
		name         string
		nrows, ncols int64
		rows, cols   []int64
		vals         []float64
		want         *CSR
	}{
		{
			name: "empty",
			want: &CSR{Indptr: []int64{0}, Indices: []int64{}},
		},
		{
			name:  "empty rows",
			nrows: 3, ncols: 2,
			want: &CSR{NRows: 3, NCols: 2, Indptr: []int64{0, 0, 0, 0}, Indices: []int64{}},
		},
		{
			// Within a row the input order is kept (stable), duplicates too.
			name:  "pattern stable",
			nrows: 3, ncols: 4,
			rows: []int64{2, 0, 2, 0, 2},
			cols: []int64{3, 1, 0, 1, 2},
			want: &CSR{NRows: 3, NCols: 4,
				Indptr:  []int64{0, 2, 2, 5},
				Indices: []int64{1, 1, 3, 0, 2}},
		},
		{
			name:  "weighted",
			nrows: 2, ncols: 3,
			rows: []int64{1, 0, 1},
			cols: []int64{2, 0, 1},
			vals: []float64{0.5, -1, 2},
			want: &CSR{NRows: 2, NCols: 3,
				Indptr:  []int64{0, 1, 3},
				Indices: []int64{0, 2, 1},
				Values:  []float64{-1, 0.5, 2}},
		},
		{
			name:  "weighted empty keeps non-nil values",
			nrows: 1, ncols: 1,
			rows: []int64{}, cols: []int64{}, vals: []float64{},
			want: &CSR{NRows: 1, NCols: 1, Indptr: []int64{0, 0}, Indices: []int64{}, Values: []float64{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, cols, vals := slices.Clone(tc.rows), slices.Clone(tc.cols), slices.Clone(tc.vals)
			got, err := FromCOO(tc.nrows, tc.ncols, rows, cols, vals)
			require.NoError(t, err)
			require.NoError(t, got.Validate())
			assert.Equal(t, tc.want, got)
			// Inputs are never modified.
			assert.Equal(t, tc.rows, rows)
			assert.Equal(t, tc.cols, cols)
			assert.Equal(t, tc.vals, vals)
		})
	}
}

func TestFromCOOErrors(t *testing.T) {
	for _, tc := range []struct {
		name         string
		nrows, ncols int64
		rows, cols   []int64
		vals         []float64
	}{
		{name: "negative rows", nrows: -1, ncols: 1},
		{name: "negative cols", nrows: 1, ncols: -1},
		{name: "length mismatch", nrows: 2, ncols: 2, rows: []int64{0, 1}, cols: []int64{0}},
		{name: "values mismatch", nrows: 2, ncols: 2, rows: []int64{0}, cols: []int64{0}, vals: []float64{1, 2}},
		{name: "row too large", nrows: 2, ncols: 2, rows: []int64{2}, cols: []int64{0}},
		{name: "negative row", nrows: 2, ncols: 2, rows: []int64{-1}, cols: []int64{0}},
		{name: "col too large", nrows: 2, ncols: 2, rows: []int64{0}, cols: []int64{2}},
		{name: "negative col", nrows: 2, ncols: 2, rows: []int64{0}, cols: []int64{-5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromCOO(tc.nrows, tc.ncols, tc.rows, tc.cols, tc.vals)
			assert.Error(t, err)
			assert.Nil(t, got)
		})
	}
}

// TestFromCOORandom checks FromCOO against a direct construction on random
// inputs: every row holds exactly its entries in input order.
func TestFromCOORandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 50; trial++ {
		m, n := rnd.Int64N(20)+1, rnd.Int64N(20)+1
		nnz := rnd.IntN(100)
		rows, cols, vals := make([]int64, nnz), make([]int64, nnz), make([]float64, nnz)
		for k := range rows {
			rows[k], cols[k], vals[k] = rnd.Int64N(m), rnd.Int64N(n), float64(k)
		}
		a, err := FromCOO(m, n, rows, cols, vals)
		require.NoError(t, err)
		require.NoError(t, a.Validate())
		for i := int64(0); i < m; i++ {
			var wantCols []int64
			var wantVals []float64
			for k := range rows {
				if rows[k] == i {
					wantCols = append(wantCols, cols[k])
					wantVals = append(wantVals, vals[k])
				}
			}
			gotCols := a.Row(i)
			gotVals := a.Values[a.Indptr[i]:a.Indptr[i+1]]
			if len(wantCols) == 0 {
				assert.Empty(t, gotCols)
				continue
			}
			assert.Equal(t, wantCols, gotCols, "row %d", i)
			assert.Equal(t, wantVals, gotVals, "row %d", i)
		}
	}
}

func TestSortRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    *CSR
		want *CSR
	}{
		{
			name: "pattern",
			a:    &CSR{NRows: 2, NCols: 5, Indptr: []int64{0, 3, 5}, Indices: []int64{4, 0, 2, 1, 1}},
			want: &CSR{NRows: 2, NCols: 5, Indptr: []int64{0, 3, 5}, Indices: []int64{0, 2, 4, 1, 1}},
		},
		{
			// Values follow their columns; equal columns keep input order.
			name: "weighted stable",
			a: &CSR{NRows: 2, NCols: 5, Indptr: []int64{0, 4, 5},
				Indices: []int64{3, 1, 3, 0, 2}, Values: []float64{1, 2, 3, 4, 5}},
			want: &CSR{NRows: 2, NCols: 5, Indptr: []int64{0, 4, 5},
				Indices: []int64{0, 1, 3, 3, 2}, Values: []float64{4, 2, 1, 3, 5}},
		},
		{
			name: "empty",
			a:    &CSR{NRows: 0, NCols: 0, Indptr: []int64{0}},
			want: &CSR{NRows: 0, NCols: 0, Indptr: []int64{0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := &CSR{NRows: tc.a.NRows, NCols: tc.a.NCols, Indptr: slices.Clone(tc.a.Indptr),
				Indices: slices.Clone(tc.a.Indices), Values: slices.Clone(tc.a.Values)}
			got := SortedRows(tc.a)
			assert.Equal(t, tc.want, got)
			assert.True(t, got.RowsSorted())
			assert.Equal(t, orig, tc.a, "SortedRows modified its input")

			tc.a.SortRows()
			assert.Equal(t, tc.want, tc.a)
		})
	}
}

// TestSortRowsLong exercises the long-row path (more than 16 entries).
func TestSortRowsLong(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	const n = 200
	ind := make([]int64, n)
	val := make([]float64, n)
	for k := range ind {
		ind[k] = rnd.Int64N(50)
		val[k] = float64(ind[k])*1000 + float64(k) // encodes column and input position
	}
	a := &CSR{NRows: 1, NCols: 50, Indptr: []int64{0, n}, Indices: ind, Values: val}
	assert.False(t, a.RowsSorted())
	a.SortRows()
	require.True(t, a.RowsSorted())
	for k := range a.Indices {
		assert.Equal(t, float64(a.Indices[k]), float64(int64(a.Values[k]/1000)), "value moved away from its column")
		if k > 0 && a.Indices[k] == a.Indices[k-1] {
			assert.Less(t, a.Values[k-1], a.Values[k], "equal columns reordered")
		}
	}
}
