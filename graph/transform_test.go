package graph

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

// csr builds a matrix from rows of columns, and values when vals is not nil
// (laid out like the columns).
func csr(ncols int64, rows [][]int64, vals [][]float64) *sparse.CSR {
	a := &sparse.CSR{NRows: int64(len(rows)), NCols: ncols, Indptr: []int64{0}, Indices: []int64{}}
	if vals != nil {
		a.Values = []float64{}
	}
	for i, r := range rows {
		a.Indices = append(a.Indices, r...)
		if vals != nil {
			a.Values = append(a.Values, vals[i]...)
		}
		a.Indptr = append(a.Indptr, int64(len(a.Indices)))
	}
	return a
}

func cloneCSR(a *sparse.CSR) *sparse.CSR {
	return &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: slices.Clone(a.Indptr),
		Indices: slices.Clone(a.Indices), Values: slices.Clone(a.Values)}
}

func TestTransforms(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func(*sparse.CSR) *sparse.CSR
		in   *sparse.CSR
		want *sparse.CSR
	}{
		{
			name: "Dedupe pattern", f: Dedupe,
			in:   csr(4, [][]int64{{3, 1, 3, 1, 0}, {}, {2}}, nil),
			want: csr(4, [][]int64{{0, 1, 3}, {}, {2}}, nil),
		},
		{
			name: "Dedupe weighted sums", f: Dedupe,
			in:   csr(4, [][]int64{{3, 1, 3}, {2, 2}}, [][]float64{{1, 2, 4}, {0.5, 0.25}}),
			want: csr(4, [][]int64{{1, 3}, {2}}, [][]float64{{2, 5}, {0.75}}),
		},
		{
			name: "Symmetrize pattern", f: Symmetrize,
			in:   csr(3, [][]int64{{1, 1}, {}, {0, 2}}, nil),
			want: csr(3, [][]int64{{1, 2}, {0}, {0, 2}}, nil),
		},
		{
			// Both directions present: the larger value; duplicates summed first.
			name: "Symmetrize weighted", f: Symmetrize,
			in:   csr(3, [][]int64{{1, 2}, {0, 0}, {}}, [][]float64{{5, 3}, {1, 1}, {}}),
			want: csr(3, [][]int64{{1, 2}, {0}, {0}}, [][]float64{{5, 3}, {5}, {3}}),
		},
		{
			name: "Symmetrize empty", f: Symmetrize,
			in:   csr(0, nil, nil),
			want: csr(0, nil, nil),
		},
		{
			name: "DropSelfLoops", f: DropSelfLoops,
			in:   csr(3, [][]int64{{0, 2, 0}, {1}, {1, 0}}, [][]float64{{1, 2, 3}, {4}, {5, 6}}),
			want: csr(3, [][]int64{{2}, {}, {1, 0}}, [][]float64{{2}, {}, {5, 6}}),
		},
		{
			name: "DropSelfLoops rectangular", f: DropSelfLoops,
			in:   csr(1, [][]int64{{0}, {0}}, nil),
			want: csr(1, [][]int64{{}, {0}}, nil),
		},
		{
			name: "AddSelfLoops pattern", f: AddSelfLoops,
			in:   csr(3, [][]int64{{1, 2}, {0, 2}, {}}, nil),
			want: csr(3, [][]int64{{0, 1, 2}, {0, 1, 2}, {2}}, nil),
		},
		{
			// An existing diagonal keeps its (first) value; others get 1.
			name: "AddSelfLoops weighted", f: AddSelfLoops,
			in:   csr(3, [][]int64{{0, 2, 0}, {0}, {0, 1}}, [][]float64{{7, 2, 9}, {3}, {4, 5}}),
			want: csr(3, [][]int64{{0, 2}, {0, 1}, {0, 1, 2}}, [][]float64{{7, 2}, {3, 1}, {4, 5, 1}}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := cloneCSR(tc.in)
			got := tc.f(tc.in)
			require.NoError(t, got.Validate())
			assert.Equal(t, tc.want, got)
			assert.Equal(t, orig, tc.in, "input modified")
		})
	}
}

func TestTransformPanics(t *testing.T) {
	rect := csr(3, [][]int64{{0}, {2}}, nil)
	assert.PanicsWithValue(t, "graph: Symmetrize of a non-square matrix", func() { Symmetrize(rect) })
	assert.PanicsWithValue(t, "graph: AddSelfLoops of a non-square matrix", func() { AddSelfLoops(rect) })
}

// TestTransformsRandom checks the defining properties of the transforms on
// random matrices against a dense reference.
func TestTransformsRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	for trial := range 30 {
		n := rnd.Int64N(12) + 1
		nnz := rnd.IntN(40)
		rows, cols := make([]int64, nnz), make([]int64, nnz)
		for k := range rows {
			rows[k], cols[k] = rnd.Int64N(n), rnd.Int64N(n)
		}
		a, err := sparse.FromCOO(n, n, rows, cols, nil)
		require.NoError(t, err)
		dense := make([]bool, n*n)
		for k := range rows {
			dense[rows[k]*n+cols[k]] = true
		}

		s := Symmetrize(a)
		require.NoError(t, s.Validate())
		d := Dedupe(a)
		l := AddSelfLoops(s)
		nl := DropSelfLoops(l)
		for i := int64(0); i < n; i++ {
			require.True(t, isStrictlySorted(s.Row(i)), "trial %d", trial)
			require.True(t, isStrictlySorted(d.Row(i)), "trial %d", trial)
			require.True(t, isStrictlySorted(l.Row(i)), "trial %d", trial)
			for j := int64(0); j < n; j++ {
				assert.Equal(t, dense[i*n+j] || dense[j*n+i], slices.Contains(s.Row(i), j), "Symmetrize (%d,%d)", i, j)
				assert.Equal(t, dense[i*n+j], slices.Contains(d.Row(i), j), "Dedupe (%d,%d)", i, j)
				assert.Equal(t, i == j || dense[i*n+j] || dense[j*n+i], slices.Contains(l.Row(i), j), "AddSelfLoops (%d,%d)", i, j)
				assert.Equal(t, i != j && (dense[i*n+j] || dense[j*n+i]), slices.Contains(nl.Row(i), j), "DropSelfLoops (%d,%d)", i, j)
			}
		}
		// Symmetrize is idempotent.
		assert.Equal(t, s, Symmetrize(s))
	}
}

func isStrictlySorted(s []int64) bool {
	for k := 1; k < len(s); k++ {
		if s[k-1] >= s[k] {
			return false
		}
	}
	return true
}

// TestTransformsCora checks that Cora is already symmetric, loop-free and
// deduplicated (../shared/data/README.md).
func TestTransformsCora(t *testing.T) {
	d := loadCora(t)
	s := Symmetrize(d.Adj)
	assert.Equal(t, int64(10556), s.NNZ())
	assert.Equal(t, d.Adj, s)
	assert.Equal(t, d.Adj, Dedupe(d.Adj))
	assert.Equal(t, d.Adj, DropSelfLoops(d.Adj))
	l := AddSelfLoops(d.Adj)
	assert.Equal(t, int64(10556+2708), l.NNZ())
	assert.Equal(t, d.Adj, DropSelfLoops(l))
}
