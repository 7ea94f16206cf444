package spgemm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		parts int
		want  []int64
	}{
		{10, 4, []int64{0, 3, 6, 8, 10}}, // 10 = 3+3+2+2: the first 10 mod 4 blocks are longer
		{3, 5, []int64{0, 1, 2, 3, 3, 3}},
		{0, 2, []int64{0, 0, 0}},
		{7, 1, []int64{0, 7}},
	} {
		require.Equal(t, tc.want, Bounds(tc.n, tc.parts), "n=%d parts=%d", tc.n, tc.parts)
	}
}

func TestStages(t *testing.T) {
	for _, tc := range []struct {
		a, b []int64
		want [][2]int64
	}{
		{[]int64{0, 5, 10}, []int64{0, 5, 10}, [][2]int64{{0, 5}, {5, 10}}},
		// 10 over 3 (4,3,3) and over 2 (5,5).
		{[]int64{0, 4, 7, 10}, []int64{0, 5, 10}, [][2]int64{{0, 4}, {4, 5}, {5, 7}, {7, 10}}},
		// Empty blocks and an empty dimension.
		{[]int64{0, 0, 3, 3}, []int64{0, 2, 2, 3}, [][2]int64{{0, 2}, {2, 3}}},
		{[]int64{0, 0}, []int64{0, 0, 0}, nil},
	} {
		require.Equal(t, tc.want, Stages(tc.a, tc.b), "%v %v", tc.a, tc.b)
	}
}

// mat builds a matrix from dense rows, 0 meaning absent.
func mat(rows [][]float64, ncols int64) *sparse.CSR {
	a := &sparse.CSR{NRows: int64(len(rows)), NCols: ncols, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}}
	for _, r := range rows {
		for j, v := range r {
			if v != 0 {
				a.Indices = append(a.Indices, int64(j))
				a.Values = append(a.Values, v)
			}
		}
		a.Indptr = append(a.Indptr, int64(len(a.Indices)))
	}
	return a
}

func TestSliceConcat(t *testing.T) {
	a := mat([][]float64{{1, 0, 2, 3}, {0, 0, 0, 0}, {4, 5, 0, 6}}, 4)
	require.Equal(t, mat([][]float64{{0, 0, 0, 0}, {4, 5, 0, 6}}, 4), sparse.RowRange(a, 1, 3))
	left, right := sparse.ColRange(a, 0, 1), sparse.ColRange(a, 1, 4)
	require.Equal(t, mat([][]float64{{1}, {0}, {4}}, 1), left)
	require.Equal(t, mat([][]float64{{0, 2, 3}, {0, 0, 0}, {5, 0, 6}}, 3), right)
	require.Equal(t, a, hconcat([]*sparse.CSR{left, right}, []int64{0, 1}, 3, 4, true))
	require.Equal(t, a, sparse.VStack([]*sparse.CSR{sparse.RowRange(a, 0, 1), sparse.RowRange(a, 1, 1), sparse.RowRange(a, 1, 3)}, 4, true))
}

func TestSum(t *testing.T) {
	a := mat([][]float64{{1, 0, 2}, {0, 0, 0}, {3, 0, 0}}, 3)
	b := mat([][]float64{{0, 4, 5}, {6, 0, 0}, {0, 0, 0}}, 3)
	c := mat([][]float64{{7, 0, 0}, {0, 0, 0}, {0, 0, 8}}, 3)
	for _, threads := range []int{1, 4} {
		got := sum(sparse.PlusTimes[float64]{}, []*sparse.CSR{a, b, c}, threads)
		require.Equal(t, mat([][]float64{{8, 4, 7}, {6, 0, 0}, {3, 0, 8}}, 3), got)
		// min-plus keeps the union and the minimum.
		got = sum(sparse.MinPlus[float64]{}, []*sparse.CSR{a, b, c}, threads)
		require.Equal(t, mat([][]float64{{1, 4, 2}, {6, 0, 0}, {3, 0, 8}}, 3), got)
	}
	// A pattern operand counts as One; a cancelling sum keeps its entry.
	p := &sparse.CSR{NRows: 1, NCols: 3, Indptr: []int64{0, 2}, Indices: []int64{0, 2}}
	n := mat([][]float64{{-1, 0, 0}}, 3)
	got := sum(sparse.PlusTimes[float64]{}, []*sparse.CSR{p, n}, 1)
	require.Equal(t, []int64{0, 2}, got.Indices)
	require.Equal(t, []float64{0, 1}, got.Values)
}

// The sum runs its rows on several goroutines once the work is large
// enough; the result does not depend on it.
func TestSumThreads(t *testing.T) {
	const m = 1 << 12
	a := &sparse.CSR{NRows: m, NCols: 64, Indptr: []int64{0}}
	b := &sparse.CSR{NRows: m, NCols: 64, Indptr: []int64{0}}
	for i := range m {
		for j := int64(i % 3); j < 64; j += 3 {
			a.Indices = append(a.Indices, j)
			a.Values = append(a.Values, float64(i))
		}
		for j := int64(i % 2); j < 64; j += 2 {
			b.Indices = append(b.Indices, j)
			b.Values = append(b.Values, 1)
		}
		a.Indptr = append(a.Indptr, int64(len(a.Indices)))
		b.Indptr = append(b.Indptr, int64(len(b.Indices)))
	}
	one := sum(sparse.PlusTimes[float64]{}, []*sparse.CSR{a, b}, 1)
	for _, th := range []int{2, 3, 8} {
		t.Run(fmt.Sprint(th), func(t *testing.T) {
			require.Equal(t, one, sum(sparse.PlusTimes[float64]{}, []*sparse.CSR{a, b}, th))
		})
	}
}

// distinctSorted gives the sorted distinct values whichever way it takes:
// a sort for few values of a wide range, a bitset for many of a narrow
// one (the bitset's words straddled, values at both ends of the range).
func TestDistinctSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		name string
		m, n int64
	}{
		{"empty", 0, 100},
		{"few of many: sort", 50, 1 << 30},
		{"many of few: bitset", 5000, 300},
		{"one word", 40, 64},
		{"many of more: sort", 2000, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := make([]int64, tc.m)
			for i := range xs {
				xs[i] = r.Int64N(tc.n)
			}
			if tc.m > 2 {
				xs[0], xs[1] = 0, tc.n-1
			}
			orig := slices.Clone(xs)
			want := slices.Compact(slices.Sorted(slices.Values(xs)))
			got := distinctSorted(xs, tc.n)
			require.Equal(t, len(want), len(got))
			if len(want) > 0 {
				require.Equal(t, want, got)
			}
			require.Equal(t, orig, xs, "input modified")
		})
	}
}
