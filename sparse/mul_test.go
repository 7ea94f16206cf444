package sparse

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randomCSR returns an m×n matrix with about density·m·n entries in random
// order, repeats included, and some empty rows. vals selects values in
// [-2, 2) or a pattern matrix.
func randomCSR(rnd *rand.Rand, m, n int64, density float64, vals bool) *CSR {
	var rows, cols []int64
	var v []float64
	if vals {
		v = []float64{}
	}
	for i := range m {
		if rnd.IntN(4) == 0 { // about a quarter of the rows stay empty
			continue
		}
		for range n {
			if rnd.Float64() >= density {
				continue
			}
			// Draw the column independently so that repeats occur.
			rows = append(rows, i)
			cols = append(cols, rnd.Int64N(n))
			if vals {
				v = append(v, rnd.Float64()*4-2)
			}
		}
	}
	a, err := FromCOO(m, n, rows, cols, v)
	if err != nil {
		panic(err)
	}
	return a
}

// toDense expands a into a row-major m×n slice, summing repeats and
// treating nil Values as ones.
func toDense(a *CSR) []float64 {
	d := make([]float64, a.NRows*a.NCols)
	for i := range a.NRows {
		for p := a.Indptr[i]; p < a.Indptr[i+1]; p++ {
			d[i*a.NCols+a.Indices[p]] += valueAt(a.Values, p)
		}
	}
	return d
}

// denseMul is the reference product of row-major m×k and k×n matrices.
func denseMul(x, y []float64, m, k, n int64) []float64 {
	z := make([]float64, m*n)
	for i := range m {
		for l := range k {
			if v := x[i*k+l]; v != 0 {
				for j := range n {
					z[i*n+j] += v * y[l*n+j]
				}
			}
		}
	}
	return z
}

// reachable returns the structural pattern of A·B: (i,j) is set when some k
// has A(i,k) and B(k,j) stored, whatever the values.
func reachable(a, b *CSR) []bool {
	r := make([]bool, a.NRows*b.NCols)
	for i := range a.NRows {
		for _, k := range a.Row(i) {
			for _, j := range b.Row(k) {
				r[i*b.NCols+j] = true
			}
		}
	}
	return r
}

func cloneCSR(a *CSR) *CSR {
	return &CSR{NRows: a.NRows, NCols: a.NCols, Indptr: slices.Clone(a.Indptr),
		Indices: slices.Clone(a.Indices), Values: slices.Clone(a.Values)}
}

// checkProduct compares c with the dense reference product of a and b:
// same values (to rounding), one entry exactly where a product term exists,
// rows sorted and distinct.
func checkProduct(t *testing.T, a, b, c *CSR) {
	t.Helper()
	require.NoError(t, c.Validate())
	require.Equal(t, a.NRows, c.NRows)
	require.Equal(t, b.NCols, c.NCols)
	require.NotNil(t, c.Values)
	want := denseMul(toDense(a), toDense(b), a.NRows, a.NCols, b.NCols)
	got := toDense(c)
	for x := range want {
		// Terms are bounded by 2·2 and there are fewer than 100 of them.
		assert.InDelta(t, want[x], got[x], 1e-12, "C(%d,%d)", int64(x)/c.NCols, int64(x)%c.NCols)
	}
	reach := reachable(a, b)
	var nnz int
	for _, r := range reach {
		if r {
			nnz++
		}
	}
	assert.Equal(t, int64(nnz), c.NNZ(), "one entry per reachable (i,j)")
	for i := range c.NRows {
		row := c.Row(i)
		for p := 1; p < len(row); p++ {
			require.Less(t, row[p-1], row[p], "row %d not sorted and distinct", i)
		}
		for _, j := range row {
			require.True(t, reach[i*c.NCols+j], "C(%d,%d) stored but unreachable", i, j)
		}
	}
}

func TestMulRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	for trial := range 60 {
		m, k, n := rnd.Int64N(12)+1, rnd.Int64N(12)+1, rnd.Int64N(12)+1
		density := []float64{0.05, 0.2, 0.6}[trial%3]
		a := randomCSR(rnd, m, k, density, trial%4 != 0)
		b := randomCSR(rnd, k, n, density, trial%5 != 0)
		a0, b0 := cloneCSR(a), cloneCSR(b)
		for _, dense := range []bool{true, false} {
			t.Run(fmt.Sprintf("trial=%d/dense=%v", trial, dense), func(t *testing.T) {
				c := mul(a, b, flops(a, b), dense)
				checkProduct(t, a, b, c)
				assert.Equal(t, a0, a, "A modified")
				assert.Equal(t, b0, b, "B modified")
			})
		}
		// Both accumulators give bit-identical results.
		assert.Equal(t, mul(a, b, flops(a, b), true), mul(a, b, flops(a, b), false))
		c, err := Mul(a, b)
		require.NoError(t, err)
		assert.Equal(t, mul(a, b, flops(a, b), true), c)
	}
}

func TestMulCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b *CSR
		want *CSR
	}{
		{
			name: "empty",
			a:    &CSR{NRows: 0, NCols: 0, Indptr: []int64{0}},
			b:    &CSR{NRows: 0, NCols: 0, Indptr: []int64{0}},
			want: &CSR{NRows: 0, NCols: 0, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}},
		},
		{
			name: "inner dimension zero",
			a:    &CSR{NRows: 2, NCols: 0, Indptr: []int64{0, 0, 0}},
			b:    &CSR{NRows: 0, NCols: 3, Indptr: []int64{0}},
			want: &CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}, Indices: []int64{}, Values: []float64{}},
		},
		{
			// Pattern times pattern counts paths: 0→{1,2}, 1→{2}, 2→{0,2}.
			name: "pattern counts paths",
			a:    &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 3, 5}, Indices: []int64{1, 2, 2, 2, 0}},
			b:    &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 3, 5}, Indices: []int64{1, 2, 2, 2, 0}},
			want: &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 4, 7},
				Indices: []int64{0, 2, 0, 2, 0, 1, 2}, Values: []float64{1, 2, 1, 1, 1, 1, 2}},
		},
		{
			// Selection: row 0 picks row 2 of B, row 1 picks row 0 scaled by 3,
			// row 2 is empty.
			name: "selection",
			a: &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 1, 2, 2},
				Indices: []int64{2, 0}, Values: []float64{1, 3}},
			b: &CSR{NRows: 3, NCols: 4, Indptr: []int64{0, 2, 2, 4},
				Indices: []int64{3, 1, 0, 2}, Values: []float64{1, 2, 5, 6}},
			want: &CSR{NRows: 3, NCols: 4, Indptr: []int64{0, 2, 4, 4},
				Indices: []int64{0, 2, 1, 3}, Values: []float64{5, 6, 6, 3}},
		},
		{
			// Cancellation leaves an explicit zero: the entry is structural.
			name: "cancellation",
			a:    &CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 2}, Indices: []int64{0, 1}, Values: []float64{1, -1}},
			b:    &CSR{NRows: 2, NCols: 1, Indptr: []int64{0, 1, 2}, Indices: []int64{0, 0}},
			want: &CSR{NRows: 1, NCols: 1, Indptr: []int64{0, 1}, Indices: []int64{0}, Values: []float64{0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, dense := range []bool{true, false} {
				got := mul(tc.a, tc.b, flops(tc.a, tc.b), dense)
				assert.Equal(t, tc.want, got, "dense=%v", dense)
			}
			got, err := Mul(tc.a, tc.b)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMulShape(t *testing.T) {
	a := &CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}}
	b := &CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}}
	c, err := Mul(a, b)
	assert.ErrorIs(t, err, ErrShape)
	assert.Nil(t, c)
}

// TestMulHashGrowth runs the hash accumulator over rows of very different
// sizes, so that its table grows and is then used partly.
func TestMulHashGrowth(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	const n = 300
	var rows, cols []int64
	for i := range int64(6) {
		deg := []int{1, 200, 2, 0, 150, 3}[i]
		for range deg {
			rows = append(rows, i)
			cols = append(cols, rnd.Int64N(n))
		}
	}
	a, err := FromCOO(6, n, rows, cols, nil)
	require.NoError(t, err)
	b := randomCSR(rnd, n, n, 0.05, true)
	checkProduct(t, a, b, mul(a, b, flops(a, b), false))
	assert.Equal(t, mul(a, b, flops(a, b), true), mul(a, b, flops(a, b), false))
}

// BenchmarkMul measures A·A for a random n×n matrix with d entries per row,
// and the selection product Q·A that samplers use, where Q picks r rows.
func BenchmarkMul(b *testing.B) {
	for _, bc := range []struct {
		n int64
		d int
	}{{1e4, 8}, {1e5, 16}} {
		rnd := rand.New(rand.NewPCG(1, uint64(bc.n)))
		a := uniformCSR(rnd, bc.n, bc.d)
		b.Run(fmt.Sprintf("AA/n=%.0e/d=%d", float64(bc.n), bc.d), func(b *testing.B) {
			if bc.n > 1e4 && testing.Short() {
				b.Skip("large")
			}
			f := flops(a, a)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Mul(a, a); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(f)*float64(b.N)/b.Elapsed().Seconds(), "flops/s")
		})
		b.Run(fmt.Sprintf("QA/n=%.0e/d=%d/r=4096", float64(bc.n), bc.d), func(b *testing.B) {
			q := &CSR{NRows: 4096, NCols: bc.n, Indptr: make([]int64, 4097), Indices: make([]int64, 4096)}
			for i := range q.Indices {
				q.Indptr[i+1] = int64(i + 1)
				q.Indices[i] = rnd.Int64N(bc.n)
			}
			f := flops(q, a)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Mul(q, a); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(f)*float64(b.N)/b.Elapsed().Seconds(), "flops/s")
		})
	}
}

// uniformCSR returns an n×n pattern matrix with d distinct sorted random
// columns per row.
func uniformCSR(rnd *rand.Rand, n int64, d int) *CSR {
	a := &CSR{NRows: n, NCols: n, Indptr: make([]int64, n+1)}
	for i := range n {
		row := make([]int64, 0, d)
		for len(row) < d {
			j := rnd.Int64N(n)
			if !slices.Contains(row, j) {
				row = append(row, j)
			}
		}
		slices.Sort(row)
		a.Indices = append(a.Indices, row...)
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	return a
}
