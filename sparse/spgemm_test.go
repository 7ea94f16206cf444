package sparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Helpers kept for mul_test.go, which predates MulSR.

// flops returns the number of scalar products of A·B.
func flops(a, b *CSR) int64 {
	var f int64
	for _, k := range a.Indices {
		f += b.Indptr[k+1] - b.Indptr[k]
	}
	return f
}

// mul computes A·B on one goroutine with the dense accumulator (dense) or
// the hash accumulator for every general row; f is ignored.
func mul(a, b *CSR, f int64, dense bool) *CSR {
	_ = f
	o := &Options{Threads: 1, acc: accHash}
	if dense {
		o.acc = accDense
	}
	c, err := MulSR(PlusTimes[float64]{}, a, b, o)
	if err != nil {
		panic(err)
	}
	return c
}

// valueAt returns vals[p], or 1 for a pattern matrix (nil vals).
func valueAt(vals []float64, p int64) float64 {
	if vals == nil {
		return 1
	}
	return vals[p]
}

// maxTimes is a semiring from outside the package's list, so products over
// it take the generic path: (max, ×) over non-negative int32.
type maxTimes struct{}

func (maxTimes) Zero() int32          { return 0 }
func (maxTimes) One() int32           { return 1 }
func (maxTimes) Add(x, y int32) int32 { return max(x, y) }
func (maxTimes) Mul(x, y int32) int32 { return x * y }

// randomMatrix returns an m×n matrix with about density·m·n entries in
// random order, repeated columns included, and about a quarter of the rows
// empty. Values come from val, or the matrix is a pattern if val is nil.
func randomMatrix[T Scalar](rnd *rand.Rand, m, n int64, density float64, val func(*rand.Rand) T) *Matrix[T] {
	a := &Matrix[T]{NRows: m, NCols: n, Indptr: make([]int64, m+1), Indices: []int64{}}
	if val != nil {
		a.Values = []T{}
	}
	for i := range m {
		if n > 0 && rnd.IntN(4) != 0 {
			cnt := int(density*float64(n)*2*rnd.Float64() + 0.5)
			for range cnt {
				a.Indices = append(a.Indices, rnd.Int64N(n))
				if val != nil {
					a.Values = append(a.Values, val(rnd))
				}
			}
		}
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	return a
}

// Value generators. The floating-point ones give small integers (and for
// MinPlus the odd +Inf), so sums are exact in any order and the reference
// agrees bit for bit up to the sign of zero.
func smallInt[T Number](rnd *rand.Rand) T { return T(rnd.IntN(7) - 3) }
func nonNeg32(rnd *rand.Rand) int32       { return int32(rnd.IntN(5)) }
func randBool(rnd *rand.Rand) bool        { return rnd.IntN(3) != 0 }
func minPlusVal[T Float](rnd *rand.Rand) T {
	if rnd.IntN(20) == 0 {
		return T(math.Inf(1))
	}
	return T(rnd.IntN(9) - 2)
}

// refMul is the reference product: for each output row (row rows[r] of A,
// or row r when rows is nil) a map accumulates the terms in order; only
// columns in the mask row are kept when mask is not nil.
func refMul[T Scalar, S Semiring[T]](sr S, a, b *Matrix[T], rows []int64, mask *Matrix[bool]) *Matrix[T] {
	if rows == nil {
		rows = make([]int64, a.NRows)
		for i := range rows {
			rows[i] = int64(i)
		}
	}
	val := func(v []T, p int64) T {
		if v == nil {
			return sr.One()
		}
		return v[p]
	}
	c := &Matrix[T]{NRows: int64(len(rows)), NCols: b.NCols, Indptr: []int64{0}, Indices: []int64{}, Values: []T{}}
	for i, r := range rows {
		acc := map[int64]T{}
		for p := a.Indptr[r]; p < a.Indptr[r+1]; p++ {
			k := a.Indices[p]
			for q := b.Indptr[k]; q < b.Indptr[k+1]; q++ {
				j := b.Indices[q]
				t := sr.Mul(val(a.Values, p), val(b.Values, q))
				if old, ok := acc[j]; ok {
					acc[j] = sr.Add(old, t)
				} else {
					acc[j] = t
				}
			}
		}
		if mask != nil {
			keep := map[int64]bool{}
			for _, j := range mask.Row(int64(i)) {
				keep[j] = true
			}
			for j := range acc {
				if !keep[j] {
					delete(acc, j)
				}
			}
		}
		cols := make([]int64, 0, len(acc))
		for j := range acc {
			cols = append(cols, j)
		}
		slices.Sort(cols)
		for _, j := range cols {
			c.Indices = append(c.Indices, j)
			c.Values = append(c.Values, acc[j])
		}
		c.Indptr = append(c.Indptr, int64(len(c.Indices)))
	}
	return c
}

func cloneMatrix[T Scalar](a *Matrix[T]) *Matrix[T] {
	return &Matrix[T]{NRows: a.NRows, NCols: a.NCols, Indptr: slices.Clone(a.Indptr),
		Indices: slices.Clone(a.Indices), Values: slices.Clone(a.Values)}
}

// allOptions lists every thread count 1..4 (forced, however small the
// product) with every accumulator choice.
func allOptions() []*Options {
	var os []*Options
	for threads := 1; threads <= 4; threads++ {
		for _, acc := range []accChoice{accAuto, accDense, accHash} {
			os = append(os, &Options{Threads: threads, acc: acc, exact: true})
		}
	}
	return os
}

func optName(o *Options) string {
	return fmt.Sprintf("threads=%d/acc=%s", o.Threads, []string{"auto", "dense", "hash"}[o.acc])
}

// testSemiring checks MulSR, MulRowsSR and MulMaskedSR over sr against the
// reference on random products of many shapes and densities.
func testSemiring[T Scalar, S Semiring[T]](t *testing.T, sr S, gen func(*rand.Rand) T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 1))
	for trial := range 40 {
		// Mostly small shapes; every 8th trial is wide enough for the
		// hash accumulator to be chosen on its own, and 0 dimensions
		// come up now and then.
		m, k, n := rnd.Int64N(14), rnd.Int64N(14), rnd.Int64N(14)
		if trial%8 == 7 {
			m, k, n = 30, 40, 1<<17
		}
		density := []float64{0.05, 0.2, 0.6}[trial%3]
		ga, gb := gen, gen
		if trial%4 == 1 {
			ga = nil // pattern A
		}
		if trial%5 == 2 {
			gb = nil // pattern B
		}
		a := randomMatrix(rnd, m, k, density, ga)
		b := randomMatrix(rnd, k, n, min(density, 20/float64(max(n, 1))), gb)
		if trial%6 == 3 && k > 0 {
			// Single-entry rows of A select rows of B, sorted or not.
			a = randomMatrix(rnd, m, k, 1/float64(k), ga)
			b.SortRows()
		}
		rows := make([]int64, rnd.IntN(10))
		for r := range rows {
			if m == 0 {
				rows = nil
				break
			}
			rows[r] = rnd.Int64N(m) // repeats and any order
		}
		mask := randomMatrix[bool](rnd, m, n, min(density, 40/float64(max(n, 1))), nil)
		a0, b0 := cloneMatrix(a), cloneMatrix(b)

		want := refMul(sr, a, b, nil, nil)
		wantRows := refMul(sr, a, b, rows, nil)
		wantMasked := refMul(sr, a, b, nil, mask)
		for _, o := range allOptions() {
			name := fmt.Sprintf("trial=%d/%dx%dx%d/%s", trial, m, k, n, optName(o))
			c, err := MulSR(sr, a, b, o)
			require.NoError(t, err, name)
			require.NoError(t, c.Validate(), name)
			require.Equal(t, want, c, name)

			c, err = MulRowsSR(sr, rows, a, b, o)
			require.NoError(t, err, name)
			require.Equal(t, wantRows, c, "rows %v: %s", rows, name)

			c, err = MulMaskedSR(sr, mask, a, b, o)
			require.NoError(t, err, name)
			require.Equal(t, wantMasked, c, "masked: %s", name)
		}
		require.Equal(t, a0, a, "A modified")
		require.Equal(t, b0, b, "B modified")
	}
}

func TestMulSRSemirings(t *testing.T) {
	t.Run("PlusTimes/float64", func(t *testing.T) { testSemiring(t, PlusTimes[float64]{}, smallInt[float64], 1) })
	t.Run("PlusTimes/float32", func(t *testing.T) { testSemiring(t, PlusTimes[float32]{}, smallInt[float32], 2) })
	t.Run("PlusTimes/int64", func(t *testing.T) { testSemiring(t, PlusTimes[int64]{}, smallInt[int64], 3) })
	t.Run("MinPlus/float64", func(t *testing.T) { testSemiring(t, MinPlus[float64]{}, minPlusVal[float64], 4) })
	t.Run("MinPlus/float32", func(t *testing.T) { testSemiring(t, MinPlus[float32]{}, minPlusVal[float32], 5) })
	t.Run("OrAnd", func(t *testing.T) { testSemiring(t, OrAnd{}, randBool, 6) })
	t.Run("generic/maxTimes", func(t *testing.T) { testSemiring(t, maxTimes{}, nonNeg32, 7) })
}

// TestSemiringIdentities checks Zero and One against Add and Mul, and the
// accumulators' starting value, for the package's semirings and through the
// generic adapter.
func TestSemiringIdentities(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, x := range []float64{-2.5, negZero, 0, 3, math.Inf(1)} {
		for _, k := range []kernel[float64]{PlusTimes[float64]{}, genericKernel[float64, PlusTimes[float64]]{}} {
			assert.Equal(t, x, k.Add(k.Zero(), x))
			assert.Equal(t, x, k.Mul(k.One(), x))
			assert.Equal(t, x, k.Add(k.ident(), x))
		}
		// The package's kernels start from -0, which keeps a sum of -0.
		assert.Equal(t, math.Float64bits(x), math.Float64bits(x+PlusTimes[float64]{}.ident()), "ident + %v", x)
		mp := MinPlus[float64]{}
		assert.Equal(t, x, mp.Add(mp.Zero(), x))
		assert.Equal(t, x, mp.Mul(mp.One(), x))
		assert.Equal(t, math.Float64bits(x), math.Float64bits(mp.Add(mp.ident(), x)))
	}
	assert.True(t, math.Signbit(float64(PlusTimes[float64]{}.ident())))
	assert.True(t, math.Signbit(float64(PlusTimes[float32]{}.ident())))
	for _, x := range []bool{false, true} {
		assert.Equal(t, x, OrAnd{}.Add(OrAnd{}.Zero(), x))
		assert.Equal(t, x, OrAnd{}.Mul(OrAnd{}.One(), x))
	}
}

// TestMulSRKernel checks that the semirings of the package take their
// specialised loops and others the generic adapter.
func TestMulSRKernel(t *testing.T) {
	assert.IsType(t, PlusTimes[float64]{}, kernelOf[float64](PlusTimes[float64]{}))
	assert.IsType(t, PlusTimes[float32]{}, kernelOf[float32](PlusTimes[float32]{}))
	assert.IsType(t, MinPlus[float64]{}, kernelOf[float64](MinPlus[float64]{}))
	assert.IsType(t, OrAnd{}, kernelOf[bool](OrAnd{}))
	assert.IsType(t, genericKernel[int32, maxTimes]{}, kernelOf[int32](maxTimes{}))
}

// TestMulSRDeterministic checks that products with inexact values are the
// same bit for bit whatever the number of threads and the accumulator.
func TestMulSRDeterministic(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 12))
	unif := func(rnd *rand.Rand) float64 { return rnd.Float64()*4 - 2 }
	for _, n := range []int64{50, 1 << 17} {
		a := randomMatrix(rnd, 200, 300, 0.05, unif)
		b := randomMatrix(rnd, 300, n, min(0.05, 30/float64(n)), unif)
		var want []uint64
		for _, o := range allOptions() {
			c, err := MulSR(PlusTimes[float64]{}, a, b, o)
			require.NoError(t, err)
			bits := make([]uint64, len(c.Values))
			for x, v := range c.Values {
				bits[x] = math.Float64bits(v)
			}
			if want == nil {
				want = bits
				continue
			}
			require.Equal(t, want, bits, "n=%d %s", n, optName(o))
		}
	}
}

// TestMulSRSignedZero checks that a sum of -0 terms stays -0: accumulators
// start from -0, the identity of floating-point addition.
func TestMulSRSignedZero(t *testing.T) {
	a := &CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 2, 3}, Indices: []int64{0, 1, 0}, Values: []float64{-1, 2}}
	a.Values = append(a.Values, -3)
	b := &CSR{NRows: 2, NCols: 1, Indptr: []int64{0, 1, 2}, Indices: []int64{0, 0}, Values: []float64{0, math.Copysign(0, -1)}}
	// Row 0: (-1)·0 + 2·(-0) = -0 + -0; row 1: (-3)·0 = -0, a selection.
	for _, o := range allOptions() {
		c, err := MulSR(PlusTimes[float64]{}, a, b, o)
		require.NoError(t, err)
		require.Len(t, c.Values, 2)
		for i, v := range c.Values {
			assert.True(t, v == 0 && math.Signbit(v), "C(%d,0) = %v, want -0: %s", i, v, optName(o))
		}
	}
}

func TestMulSRCases(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name    string
		sr      Semiring[float64]
		a, b    *CSR
		want    *CSR
		wantErr bool
	}{
		{
			name: "0x0",
			sr:   PlusTimes[float64]{},
			a:    &CSR{Indptr: []int64{0}},
			b:    &CSR{Indptr: []int64{0}},
			want: &CSR{Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}},
		},
		{
			name: "0 rows",
			sr:   PlusTimes[float64]{},
			a:    &CSR{NCols: 2, Indptr: []int64{0}},
			b:    &CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 1, 1}, Indices: []int64{2}},
			want: &CSR{NCols: 3, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}},
		},
		{
			name: "0 columns",
			sr:   PlusTimes[float64]{},
			a:    &CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 3}, Indices: []int64{0, 1, 0}},
			b:    &CSR{NRows: 2, NCols: 0, Indptr: []int64{0, 0, 0}},
			want: &CSR{NRows: 2, Indptr: []int64{0, 0, 0}, Indices: []int64{}, Values: []float64{}},
		},
		{
			name:    "shape",
			sr:      PlusTimes[float64]{},
			a:       &CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 0}},
			b:       &CSR{NRows: 3, NCols: 1, Indptr: []int64{0, 0, 0, 0}},
			wantErr: true,
		},
		{
			// Shortest paths of two hops: 0→1 (1) →2 (2) and 0→2 (5) →2 (0).
			// Absent entries are +Inf; a +Inf entry gives a +Inf term.
			name: "min-plus two hops",
			sr:   MinPlus[float64]{},
			a: &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 3, 4},
				Indices: []int64{1, 2, 2, 0}, Values: []float64{1, 5, 2, inf}},
			b: &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 1, 2, 3},
				Indices: []int64{0, 2, 2}, Values: []float64{7, 2, 0}},
			want: &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 1, 2, 3},
				Indices: []int64{2, 2, 0}, Values: []float64{3, 2, inf}},
		},
		{
			// A pattern matrix holds One, which is 0 for min-plus.
			name: "min-plus pattern",
			sr:   MinPlus[float64]{},
			a:    &CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 2}, Indices: []int64{1, 0}},
			b:    &CSR{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 2}, Indices: []int64{1, 1}, Values: []float64{4, 3}},
			want: &CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 1}, Indices: []int64{1}, Values: []float64{3}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range allOptions() {
				got, err := MulSR(tc.sr, tc.a, tc.b, o)
				if tc.wantErr {
					assert.ErrorIs(t, err, ErrShape)
					assert.Nil(t, got)
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, tc.want, got, optName(o))
			}
		})
	}
}

func TestMulSROrAnd(t *testing.T) {
	// Row 0 reaches column 0 only through false entries: stored, false.
	a := &Matrix[bool]{NRows: 2, NCols: 2, Indptr: []int64{0, 2, 3}, Indices: []int64{0, 1, 1}, Values: []bool{false, true, true}}
	b := &Matrix[bool]{NRows: 2, NCols: 2, Indptr: []int64{0, 1, 3}, Indices: []int64{0, 1, 0}, Values: []bool{true, true, false}}
	want := &Matrix[bool]{NRows: 2, NCols: 2, Indptr: []int64{0, 2, 4}, Indices: []int64{0, 1, 0, 1}, Values: []bool{false, true, false, true}}
	for _, o := range allOptions() {
		got, err := MulSR(OrAnd{}, a, b, o)
		require.NoError(t, err)
		assert.Equal(t, want, got, optName(o))
	}
}

func TestMulRowsSR(t *testing.T) {
	a := &CSR{NRows: 3, NCols: 2, Indptr: []int64{0, 1, 1, 3}, Indices: []int64{1, 0, 1}, Values: []float64{2, 3, 4}}
	b := &CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 2, 3}, Indices: []int64{2, 0, 1}, Values: []float64{1, 5, 7}}
	for _, tc := range []struct {
		name string
		rows []int64
		want *CSR
	}{
		{name: "nil", rows: nil, want: &CSR{NCols: 3, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}}},
		{name: "empty", rows: []int64{}, want: &CSR{NCols: 3, Indptr: []int64{0}, Indices: []int64{}, Values: []float64{}}},
		{
			// Row 2 of A·B is 3·(5,0,1) + 4·(0,7,0) = (15, 28, 3); row 0
			// is 2·(0,7,0); row 1 is empty.
			name: "repeated unsorted",
			rows: []int64{2, 1, 0, 2},
			want: &CSR{NRows: 4, NCols: 3, Indptr: []int64{0, 3, 3, 4, 7},
				Indices: []int64{0, 1, 2, 1, 0, 1, 2}, Values: []float64{15, 28, 3, 14, 15, 28, 3}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, o := range allOptions() {
				got, err := MulRowsSR(PlusTimes[float64]{}, tc.rows, a, b, o)
				require.NoError(t, err)
				assert.Equal(t, tc.want, got, optName(o))
			}
		})
	}
	assert.PanicsWithValue(t, "sparse: row index out of range", func() {
		_, _ = MulRowsSR(PlusTimes[float64]{}, []int64{0, 3}, a, b, nil)
	})
	assert.PanicsWithValue(t, "sparse: row index out of range", func() {
		_, _ = MulRowsSR(PlusTimes[float64]{}, []int64{-1}, a, b, nil)
	})
	_, err := MulRowsSR(PlusTimes[float64]{}, []int64{0}, a, a, nil)
	assert.ErrorIs(t, err, ErrShape)
}

func TestMulMaskedSRShape(t *testing.T) {
	a := &CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}}
	b := &CSR{NRows: 3, NCols: 4, Indptr: []int64{0, 0, 0, 0}}
	for _, mask := range []*Matrix[bool]{
		{NRows: 2, NCols: 3, Indptr: []int64{0, 0, 0}},
		{NRows: 3, NCols: 4, Indptr: []int64{0, 0, 0, 0}},
	} {
		c, err := MulMaskedSR(PlusTimes[float64]{}, mask, a, b, nil)
		assert.ErrorIs(t, err, ErrShape)
		assert.Nil(t, c)
	}
	_, err := MulMaskedSR(PlusTimes[float64]{}, a, a, a, nil)
	assert.ErrorIs(t, err, ErrShape)
}

// TestMulSRHashGrowth runs the symbolic hash set past its initial size
// (hashInitMax), so that it doubles, on a row whose B is too wide for the
// dense accumulator.
func TestMulSRHashGrowth(t *testing.T) {
	rnd := rand.New(rand.NewPCG(9, 10))
	const k, n = 400, 1 << 26 // beyond maxDenseCols
	a := &CSR{NRows: 2, NCols: k, Indptr: []int64{0, k, k + 3}}
	for p := range int64(k + 3) {
		a.Indices = append(a.Indices, p%k)
		a.Values = append(a.Values, float64(p%5))
	}
	b := randomMatrix(rnd, k, n, 60.0/n, smallInt[float64])
	require.Greater(t, flops(a, b), int64(2*hashInitMax))
	want := refMul(PlusTimes[float64]{}, a, b, nil, nil)
	require.Greater(t, want.NNZ(), int64(hashInitMax))
	for _, threads := range []int{1, 2} {
		c, err := MulSR(PlusTimes[float64]{}, a, b, &Options{Threads: threads, exact: true})
		require.NoError(t, err)
		assert.Equal(t, want, c)
	}
}

// TestMulSRPanic checks that a panic on a worker goroutine reaches the
// caller.
func TestMulSRPanic(t *testing.T) {
	a := &CSR{NRows: 4, NCols: 1, Indptr: []int64{0, 2, 2, 2, 4}, Indices: []int64{0, 0, 0, 0}}
	b := &CSR{NRows: 1, NCols: 2, Indptr: []int64{0, 2}, Indices: []int64{0, 1 << 40}} // out of range
	for threads := 1; threads <= 4; threads++ {
		// Only the dense accumulator indexes by column.
		o := &Options{Threads: threads, acc: accDense, exact: true}
		assert.Panics(t, func() { _, _ = MulSR(PlusTimes[float64]{}, a, b, o) }, optName(o))
	}
}

// TestMulSRSelectionCost checks that a product of few rows with a wide B
// allocates nothing in proportion to B's width: the sampler's selection
// Q·A costs O(output).
func TestMulSRSelectionCost(t *testing.T) {
	const n = 1 << 40
	// Row 1 of B is sorted (a selection copies it), row 2 is not (hashed).
	b := &CSR{NRows: 3, NCols: n, Indptr: []int64{0, 0, 3, 6},
		Indices: []int64{3, 7, n - 1, n - 1, 7, 3}, Values: []float64{1, 2, 3, 4, 5, 6}}
	id := &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 1, 2, 3}, Indices: []int64{0, 1, 2}}
	for _, rows := range [][]int64{{1, 1}, {2, 0}, {1, 2}} {
		var c *CSR
		allocs := testing.AllocsPerRun(5, func() {
			var err error
			c, err = MulRowsSR(PlusTimes[float64]{}, rows, id, b, nil)
			require.NoError(t, err)
		})
		assert.Equal(t, refMul(PlusTimes[float64]{}, id, b, rows, nil), c)
		// The matrix, its slices, the product's bookkeeping and a small
		// hash table.
		assert.Less(t, allocs, 20.0)
	}
}

func TestRadixSort(t *testing.T) {
	rnd := rand.New(rand.NewPCG(13, 14))
	for _, nbits := range []int{0, 1, 7, 8, 9, 16, 17, 40, 63} {
		for _, n := range []int{1, 2, 65, 300, 5000} {
			s := make([]int64, n)
			for x := range s {
				switch {
				case nbits == 63:
					s[x] = rnd.Int64()
				case nbits > 0:
					s[x] = rnd.Int64N(int64(1) << nbits)
				}
			}
			want := slices.Clone(s)
			slices.Sort(want)
			radixSort(s, make([]int64, n), nbits)
			require.Equal(t, want, s, "nbits=%d n=%d", nbits, n)
		}
	}
}

// BenchmarkSemiringAxpy compares the inner loop of PlusTimes[float64], a
// hand-written loop, and the same semiring through the generic adapter (an
// indirect call per scalar product).
func BenchmarkSemiringAxpy(b *testing.B) {
	const n = 1 << 14
	rnd := rand.New(rand.NewPCG(1, 2))
	y := make([]float64, n)
	x := make([]float64, n)
	ind := make([]int64, n)
	for q := range ind {
		ind[q] = rnd.Int64N(n)
		x[q] = rnd.Float64()
	}
	hand := func(y []float64, ind []int64, x []float64, a float64) {
		x = x[:len(ind)]
		for q, j := range ind {
			y[j] += a * x[q]
		}
	}
	for _, bc := range []struct {
		name string
		f    func(y []float64, ind []int64, x []float64, a float64)
	}{
		{"hand", hand},
		{"PlusTimes", PlusTimes[float64]{}.axpy},
		{"generic", genericKernel[float64, PlusTimes[float64]]{}.axpy},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.f(y, ind, x, 1.5)
			}
			b.ReportMetric(2*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MFLOP/s")
		})
	}
}

// With SortedB a selection row copies its row of B unchecked: on a B with
// sorted distinct rows the product is the same as without the promise.
func TestMulSRSortedB(t *testing.T) {
	rnd := rand.New(rand.NewPCG(41, 42))
	var br, bc []int64
	var bv []float64
	for i := range int64(300) {
		for _, j := range rnd.Perm(200)[:rnd.IntN(12)] { // distinct columns
			br, bc, bv = append(br, i), append(bc, int64(j)), append(bv, rnd.Float64())
		}
	}
	b, err := FromCOO(300, 200, br, bc, bv)
	require.NoError(t, err)
	b.SortRows()
	var rows, cols []int64
	for i := range int64(150) {
		rows, cols = append(rows, i), append(cols, rnd.Int64N(300))
		if i%5 == 0 { // a few rows that are not selections
			rows, cols = append(rows, i), append(cols, rnd.Int64N(300))
		}
	}
	a, err := FromCOO(150, 300, rows, cols, nil)
	require.NoError(t, err)
	want, err := MulSR(PlusTimes[float64]{}, a, b, nil)
	require.NoError(t, err)
	got, err := MulSR(PlusTimes[float64]{}, a, b, &Options{SortedB: true, Threads: 2})
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// MulSRTo gives MulSR's product whatever dst holds: nothing, arrays too
// short, or longer arrays full of garbage from an earlier product, which it
// reuses.
func TestMulSRTo(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 12))
	var prev *Matrix[float64] // an earlier product, reused as dst
	for _, tc := range []struct {
		name    string
		m, k, n int64
		density float64
	}{
		{"first, into nil", 30, 40, 50, 0.1},
		{"larger, into a short dst", 60, 40, 80, 0.2},
		{"smaller, into a long dst", 20, 10, 30, 0.1},
		{"empty rows", 25, 30, 20, 0.02},
		{"no rows", 0, 30, 20, 0.1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := randomMatrix(rnd, tc.m, tc.k, tc.density, smallInt[float64])
			b := randomMatrix(rnd, tc.k, tc.n, tc.density, smallInt[float64])
			for _, o := range allOptions() {
				want, err := MulSR(PlusTimes[float64]{}, a, b, o)
				require.NoError(t, err)
				if prev != nil {
					for i := range prev.Indices[:cap(prev.Indices)] {
						prev.Indices[:cap(prev.Indices)][i] = -7 // garbage the product must overwrite
					}
				}
				got, err := MulSRTo(prev, PlusTimes[float64]{}, a, b, o)
				require.NoError(t, err)
				if prev != nil {
					require.Same(t, prev, got, "%s: the result is dst", optName(o))
				}
				// nil and empty arrays alike: an empty product's arrays
				// are empty either way.
				assert.Equal(t, [2]int64{want.NRows, want.NCols}, [2]int64{got.NRows, got.NCols}, optName(o))
				assert.Equal(t, want.Indptr, got.Indptr, optName(o))
				assert.True(t, slices.Equal(want.Indices, got.Indices), "%s: indices got: %v want: %v", optName(o), got.Indices, want.Indices)
				assert.True(t, slices.Equal(want.Values, got.Values), "%s: values got: %v want: %v", optName(o), got.Values, want.Values)
				prev = got
			}
		})
	}
	_, err := MulSRTo(prev, PlusTimes[float64]{}, randomMatrix(rnd, 3, 4, 0.5, smallInt[float64]), randomMatrix(rnd, 5, 3, 0.5, smallInt[float64]), nil)
	require.ErrorIs(t, err, ErrShape)
}
