package spgemm_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
	"gnnmpi/spgemm/spgemmtest"
)

// ps are the rank counts every variant is tested at (STYLE.md §9 and the
// issue: 1, 2, 3, 4, 6, 8, 9).
var ps = []int{1, 2, 3, 4, 6, 8, 9}

// variant is one distributed algorithm with its parameters.
type variant struct {
	algo   string // "1d", "1.5d", "2d"
	c      int    // 1.5D replication
	pr, pc int    // 2D grid
	staged bool
	uneven bool // random bounds with empty blocks instead of the even split
}

func (v variant) String() string {
	s := v.algo
	switch v.algo {
	case "1.5d":
		s += fmt.Sprintf("/c=%d", v.c)
	case "2d":
		s += fmt.Sprintf("/%dx%d", v.pr, v.pc)
	}
	if v.staged {
		s += "/staged"
	}
	if v.uneven {
		s += "/uneven"
	}
	return s
}

// variants returns every variant to test on p ranks: 1D (even and uneven),
// 1.5D for every c dividing p, 2D on the GridDims grid, its transpose, and
// 1×p, staged and not.
func variants(p int) []variant {
	vs := []variant{{algo: "1d"}, {algo: "1d", uneven: true}}
	for c := 1; c <= p; c++ {
		if p%c == 0 {
			vs = append(vs, variant{algo: "1.5d", c: c}, variant{algo: "1.5d", c: c, staged: true})
		}
	}
	vs = append(vs, variant{algo: "1.5d", c: 1, uneven: true})
	pr, pc := collective.GridDims(p)
	grids := [][2]int{{pr, pc}}
	if pr != pc {
		grids = append(grids, [2]int{pc, pr})
	}
	if pr != 1 {
		grids = append(grids, [2]int{1, p})
	}
	for _, g := range grids {
		vs = append(vs, variant{algo: "2d", pr: g[0], pc: g[1]}, variant{algo: "2d", pr: g[0], pc: g[1], staged: true})
	}
	vs = append(vs, variant{algo: "2d", pr: pr, pc: pc, uneven: true})
	return vs
}

// unevenBounds returns random bounds cutting n into parts blocks, some of
// them empty, the same for the same arguments.
func unevenBounds(n int64, parts int, stream uint64) []int64 {
	r := rng.New(7, stream, uint64(n), uint64(parts))
	b := make([]int64, parts+1)
	for x := 1; x < parts; x++ {
		b[x] = r.Int64N(n + 1)
	}
	b[parts] = n
	for x := 1; x < parts; x++ { // sort the interior
		for y := x; y > 1 && b[y] < b[y-1]; y-- {
			b[y], b[y-1] = b[y-1], b[y]
		}
	}
	return b
}

func bounds(v variant, n int64, parts int, stream uint64) []int64 {
	if v.uneven {
		return unevenBounds(n, parts, stream)
	}
	return spgemm.Bounds(n, parts)
}

// setup holds what a variant needs on one rank: the layouts of A and B and
// the product to run.
type setup[T sparse.Scalar] struct {
	a, b *spgemm.Dist[T]
	mul  func() (*spgemm.Dist[T], error)
	free func() error
}

// prepare distributes a and b for v on c and returns the product to call.
func prepare[T sparse.Scalar, S sparse.Semiring[T]](c collective.Comm, v variant, sr S, a, b *sparse.Matrix[T], o *spgemm.Options) (*setup[T], error) {
	p, r := c.Size(), c.Rank()
	o2 := &spgemm.Options{Staged: v.staged}
	if o != nil {
		o2.Threads = o.Threads
	}
	full := func(n int64) []int64 { return []int64{0, n} }
	switch v.algo {
	case "1d":
		s := &setup[T]{
			a:    spgemm.Distribute(a, bounds(v, a.NRows, p, 1), full(a.NCols), r, 0, 0),
			b:    spgemm.Distribute(b, bounds(v, b.NRows, p, 2), full(b.NCols), r, 0, 0),
			free: func() error { return nil },
		}
		s.mul = func() (*spgemm.Dist[T], error) { return spgemm.Mul1D(c, sr, s.a, s.b, o2) }
		return s, nil
	case "1.5d":
		g, err := collective.NewGrid(c, p/v.c, v.c)
		if err != nil {
			return nil, err
		}
		s := &setup[T]{
			a:    spgemm.Distribute(a, bounds(v, a.NRows, g.PR, 1), full(a.NCols), g.Row, 0, g.Col),
			b:    spgemm.Distribute(b, bounds(v, b.NRows, g.PR, 2), full(b.NCols), g.Row, 0, g.Col),
			free: g.Free,
		}
		s.mul = func() (*spgemm.Dist[T], error) { return spgemm.Mul15D(g, sr, s.a, s.b, o2) }
		return s, nil
	case "2d":
		g, err := collective.NewGrid(c, v.pr, v.pc)
		if err != nil {
			return nil, err
		}
		s := &setup[T]{
			a: spgemm.Distribute(a, bounds(v, a.NRows, g.PR, 1), bounds(v, a.NCols, g.PC, 3), g.Row, g.Col, 0),
			// B's row cuts differ from A's column cuts when uneven.
			b:    spgemm.Distribute(b, bounds(v, b.NRows, g.PR, 2), bounds(v, b.NCols, g.PC, 4), g.Row, g.Col, 0),
			free: g.Free,
		}
		s.mul = func() (*spgemm.Dist[T], error) { return spgemm.Mul2D(g, sr, s.a, s.b, o2) }
		return s, nil
	}
	return nil, fmt.Errorf("unknown algorithm %q", v.algo)
}

func run(t *testing.T, p int, fn func(c collective.Comm) error) {
	t.Helper()
	require.NoError(t, inproc.Run(p, inproc.Options{Timeout: time.Minute}, fn))
}

// checkProduct runs v on p ranks and checks, on every rank, that the
// gathered product equals the local product exactly and that the
// distributed checksum equals the local one.
func checkProduct[T sparse.Scalar, S sparse.Semiring[T]](t *testing.T, p int, v variant, sr S, a, b *sparse.Matrix[T]) {
	t.Helper()
	want, err := sparse.MulSR(sr, a, b, nil)
	require.NoError(t, err)
	wantSum := spgemm.MatrixChecksum(want)
	run(t, p, func(c collective.Comm) error {
		s, err := prepare(c, v, sr, a, b, nil)
		if err != nil {
			return err
		}
		got, err := s.mul()
		if err != nil {
			return err
		}
		if err := got.Validate(); err != nil {
			return err
		}
		sum, err := spgemm.Checksum(c, got)
		if err != nil {
			return err
		}
		if sum != wantSum {
			return fmt.Errorf("checksum: got: %x want: %x", sum, wantSum)
		}
		full, err := spgemm.Gather(c, got, p-1)
		if err != nil {
			return err
		}
		if c.Rank() == p-1 {
			if err := spgemmtest.Equal(full, want); err != nil {
				return err
			}
		}
		return s.free()
	})
}

// operands are the products every variant is checked on.
type operands struct {
	name string
	a, b *sparse.CSR
}

var (
	rmatOnce sync.Once
	rmatA    *sparse.CSR
	coraOnce sync.Once
	coraA    *sparse.CSR
)

// rmat returns the Graph500 R-MAT graph of scale 8, edge factor 8, as a
// pattern.
func rmat(t *testing.T) *sparse.CSR {
	rmatOnce.Do(func() {
		var err error
		rmatA, err = graph.RMAT(graph.DefaultRMAT(8, 8))
		if err != nil {
			panic(err)
		}
	})
	return rmatA
}

// cora returns the adjacency of the embedded Cora (2708 vertices, 10556
// entries).
func cora(t *testing.T) *sparse.CSR {
	coraOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		d, err := graph.Load(filepath.Join(filepath.Dir(file), "..", "data", "cora"), graph.ReadOptions{NoFeatures: true, NoLabels: true})
		if err != nil {
			panic(err)
		}
		coraA = d.Adj
	})
	return coraA
}

func smallOperands(t *testing.T) []operands {
	sq := spgemmtest.Random(1, 40, 40, 3, false, false)
	ops := []operands{
		{"square A·A", sq, sq},
		{"rectangular 37x23·23x41", spgemmtest.Random(2, 37, 23, 3, false, false), spgemmtest.Random(3, 23, 41, 4, false, true)},
		{"pattern·valued", spgemmtest.Random(4, 30, 20, 3, true, true), spgemmtest.Random(5, 20, 25, 2, false, false)},
		{"valued·pattern", spgemmtest.Random(6, 30, 20, 3, false, false), spgemmtest.Random(7, 20, 25, 2, true, false)},
		{"n<p 5x3·3x4", spgemmtest.Random(8, 5, 3, 2, false, false), spgemmtest.Random(9, 3, 4, 2, false, false)},
		{"empty inner 6x0·0x7", spgemmtest.Random(10, 6, 0, 2, false, false), spgemmtest.Random(11, 0, 7, 2, false, false)},
		{"no rows 0x5·5x5", spgemmtest.Random(12, 0, 5, 2, false, false), spgemmtest.Random(13, 5, 5, 2, false, false)},
	}
	if !testing.Short() {
		ops = append(ops, operands{"rmat scale 8", rmat(t), rmat(t)})
	}
	return ops
}

// Every variant at every p gives the local product, on small random
// matrices (empty rows and columns, unsorted rows, rectangular, A ≠ B,
// fewer rows than ranks, empty dimensions) and a small R-MAT graph.
func TestMulMatchesLocal(t *testing.T) {
	for _, p := range ps {
		for _, v := range variants(p) {
			t.Run(fmt.Sprintf("p=%d/%v", p, v), func(t *testing.T) {
				for _, op := range smallOperands(t) {
					t.Run(op.name, func(t *testing.T) {
						checkProduct(t, p, v, sparse.PlusTimes[float64]{}, op.a, op.b)
					})
				}
			})
		}
	}
}

// A real graph: Cora's A·A, each algorithm at p = 4 and 9 (skipped with
// -short).
func TestMulCora(t *testing.T) {
	if testing.Short() {
		t.Skip("Cora A·A: skipped with -short")
	}
	a := cora(t)
	for _, p := range []int{4, 9} {
		pr, pc := collective.GridDims(p)
		for _, v := range []variant{{algo: "1d"}, {algo: "1.5d", c: pr}, {algo: "2d", pr: pr, pc: pc}} {
			t.Run(fmt.Sprintf("p=%d/%v", p, v), func(t *testing.T) {
				checkProduct(t, p, v, sparse.PlusTimes[float64]{}, a, a)
			})
		}
	}
}

// maxTimes is a semiring from outside package sparse: (max, ×) over
// non-negative int32.
type maxTimes struct{}

func (maxTimes) Zero() int32          { return 0 }
func (maxTimes) One() int32           { return 1 }
func (maxTimes) Add(x, y int32) int32 { return max(x, y) }
func (maxTimes) Mul(x, y int32) int32 { return x * y }

// Every semiring and element type, with the variants that sum partial
// products (1.5D, staged 2D) and those that do not.
func TestMulSemirings(t *testing.T) {
	a := spgemmtest.Random(21, 33, 29, 4, false, false)
	b := spgemmtest.Random(22, 29, 31, 3, false, false)
	pb := spgemmtest.Random(23, 29, 31, 3, true, false)
	vs := []variant{{algo: "1d"}, {algo: "1.5d", c: 2}, {algo: "1.5d", c: 3, staged: true}, {algo: "2d", pr: 2, pc: 3}, {algo: "2d", pr: 2, pc: 3, staged: true}}
	for _, p := range []int{6} {
		for _, v := range vs {
			t.Run(v.String(), func(t *testing.T) {
				t.Run("plus-times/float32", func(t *testing.T) {
					f := func(x float64) float32 { return float32(x) }
					checkProduct(t, p, v, sparse.PlusTimes[float32]{}, spgemmtest.Convert(a, f), spgemmtest.Convert(b, f))
				})
				t.Run("plus-times/int64", func(t *testing.T) {
					f := func(x float64) int64 { return int64(x) - 2 } // negative values and zeros
					checkProduct(t, p, v, sparse.PlusTimes[int64]{}, spgemmtest.Convert(a, f), spgemmtest.Convert(b, f))
				})
				t.Run("min-plus/float64", func(t *testing.T) {
					checkProduct(t, p, v, sparse.MinPlus[float64]{}, a, b)
				})
				t.Run("min-plus/pattern", func(t *testing.T) {
					checkProduct(t, p, v, sparse.MinPlus[float64]{}, a, pb)
				})
				t.Run("or-and", func(t *testing.T) {
					f := func(x float64) bool { return x != 2 } // some false entries
					checkProduct(t, p, v, sparse.OrAnd{}, spgemmtest.Convert(a, f), spgemmtest.Convert(b, f))
				})
				t.Run("max-times/int32", func(t *testing.T) {
					f := func(x float64) int32 { return int32(x) }
					checkProduct(t, p, v, maxTimes{}, spgemmtest.Convert(a, f), spgemmtest.Convert(b, f))
				})
			})
		}
	}
}

// 1D and (unstaged) 2D add the terms of every entry in the order of the
// local product, so with arbitrary floating-point values and sorted rows
// of A the result is bit for bit the local one.
func TestBitIdentical(t *testing.T) {
	r := rng.New(5)
	a := spgemmtest.Random(31, 60, 50, 6, false, true)
	b := spgemmtest.Random(32, 50, 70, 6, false, false)
	for _, m := range []*sparse.CSR{a, b} {
		for q := range m.Values {
			m.Values[q] = r.NormFloat64() * math.Pow(10, float64(r.IntN(12)-6))
		}
	}
	for _, p := range []int{4, 6, 9} {
		pr, pc := collective.GridDims(p)
		for _, v := range []variant{{algo: "1d"}, {algo: "2d", pr: pr, pc: pc}, {algo: "2d", pr: pr, pc: pc, uneven: true}} {
			t.Run(fmt.Sprintf("p=%d/%v", p, v), func(t *testing.T) {
				checkProduct(t, p, v, sparse.PlusTimes[float64]{}, a, b)
			})
		}
	}
}

// Threads per rank do not change the result.
func TestThreads(t *testing.T) {
	a := rmat(t)
	want, err := sparse.Mul(a, a)
	require.NoError(t, err)
	for _, v := range []variant{{algo: "1d"}, {algo: "1.5d", c: 2}, {algo: "2d", pr: 2, pc: 2, staged: true}} {
		t.Run(v.String(), func(t *testing.T) {
			run(t, 4, func(c collective.Comm) error {
				s, err := prepare(c, v, sparse.PlusTimes[float64]{}, a, a, &spgemm.Options{Threads: 3})
				if err != nil {
					return err
				}
				got, err := s.mul()
				if err != nil {
					return err
				}
				full, err := spgemm.Gather(c, got, 0)
				if err != nil || c.Rank() != 0 {
					return err
				}
				return spgemmtest.Equal(full, want)
			})
		})
	}
}

// Operands that do not conform fail on every rank with sparse.ErrShape, and
// a block in the wrong layout with ErrLayout, before communicating.
func TestErrors(t *testing.T) {
	a := spgemmtest.Random(1, 10, 8, 2, false, false)
	b := spgemmtest.Random(2, 9, 8, 2, false, false)
	run(t, 4, func(c collective.Comm) error {
		sr := sparse.PlusTimes[float64]{}
		da, db := spgemm.Distribute1D(c, a), spgemm.Distribute1D(c, b)
		if _, err := spgemm.Mul1D(c, sr, da, db, nil); !errors.Is(err, sparse.ErrShape) {
			return fmt.Errorf("Mul1D: got: %v want: ErrShape", err)
		}
		g, err := collective.NewGrid(c, 2, 2)
		if err != nil {
			return err
		}
		if _, err := spgemm.Mul2D(g, sr, da, da, nil); !errors.Is(err, spgemm.ErrLayout) {
			return fmt.Errorf("Mul2D on 1D blocks: got: %v want: ErrLayout", err)
		}
		if _, err := spgemm.Mul15D(g, sr, da, da, nil); !errors.Is(err, spgemm.ErrLayout) {
			return fmt.Errorf("Mul15D on 1D blocks: got: %v want: ErrLayout", err)
		}
		d2 := spgemm.Distribute2D(g, a)
		if _, err := spgemm.Mul1D(c, sr, d2, d2, nil); !errors.Is(err, spgemm.ErrLayout) {
			return fmt.Errorf("Mul1D on 2D blocks: got: %v want: ErrLayout", err)
		}
		return g.Free()
	})
}

// BcastMatrix gives every rank the root's matrix, and Gather of any layout,
// replicated ones included, gives it back.
func TestBcastGather(t *testing.T) {
	// Sorted rows: Gather returns each row's pieces in column-block order.
	for _, a := range []*sparse.CSR{spgemmtest.Random(3, 23, 17, 3, false, true), spgemmtest.Random(4, 5, 9, 3, true, true)} {
		for _, p := range []int{1, 3, 4, 6} {
			t.Run(fmt.Sprintf("p=%d/pattern=%v", p, a.Values == nil), func(t *testing.T) {
				run(t, p, func(c collective.Comm) error {
					var mine *sparse.CSR
					if c.Rank() == p-1 {
						mine = a
					}
					got, err := spgemm.BcastMatrix(c, mine, p-1)
					if err != nil {
						return err
					}
					if err := spgemmtest.Equal(got, a); err != nil {
						return fmt.Errorf("BcastMatrix: %w", err)
					}
					pr, pc := collective.GridDims(p)
					g, err := collective.NewGrid(c, pr, pc)
					if err != nil {
						return err
					}
					for _, x := range []struct {
						name string
						d    *spgemm.Dist[float64]
					}{{"1d", spgemm.Distribute1D(c, got)}, {"1.5d", spgemm.Distribute15D(g, got)}, {"2d", spgemm.Distribute2D(g, got)}} {
						name, d := x.name, x.d
						if err := d.Validate(); err != nil {
							return fmt.Errorf("%s: %w", name, err)
						}
						full, err := spgemm.Gather(c, d, 0)
						if err != nil {
							return fmt.Errorf("%s: %w", name, err)
						}
						if c.Rank() == 0 {
							if err := spgemmtest.Equal(full, a); err != nil {
								return fmt.Errorf("Gather %s: %w", name, err)
							}
						}
					}
					return g.Free()
				})
			})
		}
	}
}
