package spgemm_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
	"gnnmpi/spgemm/spgemmtest"
)

// streamLayout is one layout of a streamed product.
type streamLayout struct {
	algo   string // "1.5d", "2d" (A in 2D blocks) or "2d-rowheld" (A whole per grid row)
	pr, pc int
	uneven bool
	fetch  bool // Stream.Degrees set: 1.5D stages may fetch rows
}

func (l streamLayout) String() string {
	s := fmt.Sprintf("%s/%dx%d", l.algo, l.pr, l.pc)
	if l.uneven {
		s += "/uneven"
	}
	if l.fetch {
		s += "/fetch"
	}
	return s
}

// entryKey is a global position of C.
type entryKey struct{ i, j int64 }

// streamPieces runs the streamed product of layout l on the in-process
// ranks with the given chunk work and returns the sum of all the ranks'
// chunks, entry by entry, and the number of chunks. It checks on the way
// that a chunk's rows are ascending and appear once per stage, that its
// entries stay within the work bound unless it is a single row, and that
// StageDone follows every stage on every rank.
func streamPieces(t *testing.T, l streamLayout, a, b *sparse.Matrix[int64], work, piece int64) (map[entryKey]int64, int) {
	t.Helper()
	p := l.pr * l.pc
	got := map[entryKey]int64{}
	chunks := 0
	var mu sync.Mutex
	sr := sparse.PlusTimes[int64]{}
	v := variant{uneven: l.uneven}
	full := func(n int64) []int64 { return []int64{0, n} }
	run(t, p, func(c collective.Comm) error {
		g, err := collective.NewGrid(c, l.pr, l.pc)
		if err != nil {
			return err
		}
		var ad, bd *spgemm.Dist[int64]
		switch l.algo {
		case "1.5d":
			ad = spgemm.Distribute(a, bounds(v, a.NRows, g.PR, 1), full(a.NCols), g.Row, 0, g.Col)
			bd = spgemm.Distribute(b, bounds(v, b.NRows, g.PR, 2), full(b.NCols), g.Row, 0, g.Col)
		case "2d":
			ad = spgemm.Distribute(a, bounds(v, a.NRows, g.PR, 1), bounds(v, a.NCols, g.PC, 3), g.Row, g.Col, 0)
			bd = spgemm.Distribute(b, bounds(v, b.NRows, g.PR, 2), bounds(v, b.NCols, g.PC, 4), g.Row, g.Col, 0)
		case "2d-rowheld":
			ad = spgemm.Distribute(a, bounds(v, a.NRows, g.PR, 1), full(a.NCols), g.Row, 0, g.Col)
			bd = spgemm.Distribute(b, bounds(v, b.NRows, g.PR, 2), bounds(v, b.NCols, g.PC, 4), g.Row, g.Col, 0)
		}
		mine := map[entryKey]int64{}
		n := 0
		seen := map[[2]int64]bool{}
		open := -1 // the stage whose chunks are coming, −1 between stages
		s := &spgemm.Stream[int64]{ChunkWork: work, PieceEntries: piece}
		if l.fetch {
			s.Degrees = degrees(b)
		}
		limit := work
		if limit < 1 {
			limit = spgemm.DefaultChunkWork
		}
		s.Chunk = func(stage int, rows []int64, cm *sparse.Matrix[int64]) error {
			if open != -1 && open != stage {
				return fmt.Errorf("chunk of stage %d inside stage %d", stage, open)
			}
			open = stage
			n++
			if cm.NRows != int64(len(rows)) || cm.NCols != bd.Local.NCols {
				return fmt.Errorf("chunk is %d×%d for %d rows, want %d columns", cm.NRows, cm.NCols, len(rows), bd.Local.NCols)
			}
			if len(rows) > 1 && cm.NNZ()+int64(len(rows)) > limit {
				return fmt.Errorf("chunk of %d rows holds %d entries, over the work %d", len(rows), cm.NNZ(), limit)
			}
			for x, r := range rows {
				if x > 0 && r <= rows[x-1] {
					return fmt.Errorf("chunk rows %v not ascending", rows)
				}
				// With one piece per stage a row comes once per stage;
				// with several, once per piece it has entries in.
				if seen[[2]int64{int64(stage), r}] && piece == 0 {
					return fmt.Errorf("row %d twice in stage %d", r, stage)
				}
				seen[[2]int64{int64(stage), r}] = true
				for q := cm.Indptr[x]; q < cm.Indptr[x+1]; q++ {
					mine[entryKey{ad.RowOff() + r, bd.ColOff() + cm.Indices[q]}] += cm.Values[q]
				}
			}
			return nil
		}
		stages := 0
		s.StageDone = func(stage int) error {
			if open != -1 && open != stage {
				return fmt.Errorf("stage %d done after chunks of stage %d", stage, open)
			}
			open = -1
			stages++
			return nil
		}
		if l.algo == "1.5d" {
			err = spgemm.Mul15DStream(g, sr, ad, bd, s)
		} else {
			err = spgemm.Mul2DStream(g, sr, ad, bd, s)
		}
		if err != nil {
			return err
		}
		if l.algo == "1.5d" {
			if want := (g.PR - g.Col + g.PC - 1) / g.PC; stages != want {
				return fmt.Errorf("%d stages done, want %d", stages, want)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for k, x := range mine {
			got[k] += x
		}
		chunks += n
		return g.Free()
	})
	return got, chunks
}

// The chunks of a streamed product add up to the product, for general
// operands (rows spanning several stages) and selection matrices, in every
// layout, with chunks that respect the work bound.
func TestStreamSumsToProduct(t *testing.T) {
	toInt := func(x float64) int64 { return int64(math.Round(4 * x)) }
	sq := spgemmtest.Convert(spgemmtest.Random(1, 60, 60, 4, false, false), toInt)
	rect := spgemmtest.Convert(spgemmtest.Random(2, 45, 60, 3, false, false), toInt)
	// Q: one entry per row, as the samplers' frontiers.
	q := &sparse.Matrix[int64]{NRows: 50, NCols: 60, Indptr: make([]int64, 51), Indices: make([]int64, 50)}
	for x := range q.Indices {
		q.Indices[x] = int64(x*37) % 60
		q.Indptr[x+1] = int64(x + 1)
	}
	cases := []struct {
		name string
		a, b *sparse.Matrix[int64]
	}{{"square", sq, sq}, {"rect", rect, sq}, {"select", q, sq}}
	var layouts []streamLayout
	for _, pc := range [][2]int{{1, 1}, {2, 1}, {4, 1}, {2, 2}, {3, 2}, {4, 2}, {3, 3}} {
		for _, fetch := range []bool{false, true} {
			layouts = append(layouts, streamLayout{algo: "1.5d", pr: pc[0], pc: pc[1], fetch: fetch},
				streamLayout{algo: "1.5d", pr: pc[0], pc: pc[1], uneven: true, fetch: fetch})
		}
	}
	for _, pc := range [][2]int{{1, 1}, {2, 2}, {2, 3}, {3, 3}} {
		for _, algo := range []string{"2d", "2d-rowheld"} {
			layouts = append(layouts, streamLayout{algo: algo, pr: pc[0], pc: pc[1]}, streamLayout{algo: algo, pr: pc[0], pc: pc[1], uneven: true})
		}
	}
	for _, tc := range cases {
		want, err := sparse.MulSR(sparse.PlusTimes[int64]{}, tc.a, tc.b, nil)
		require.NoError(t, err)
		wantMap := map[entryKey]int64{}
		for i := range want.NRows {
			for q := want.Indptr[i]; q < want.Indptr[i+1]; q++ {
				wantMap[entryKey{i, want.Indices[q]}] = want.Values[q]
			}
		}
		for _, l := range layouts {
			for _, wp := range [][2]int64{{5, 0}, {40, 0}, {0, 0}, {40, 7}, {0, 1}} {
				work, piece := wp[0], wp[1]
				t.Run(fmt.Sprintf("%s/%s/work=%d/piece=%d", tc.name, l, work, piece), func(t *testing.T) {
					got, chunks := streamPieces(t, l, tc.a, tc.b, work, piece)
					require.Equal(t, wantMap, got)
					if work == 5 && want.NNZ() > 0 {
						require.Greater(t, chunks, l.pr*l.pc, "a small work bound cuts many chunks")
					}
					// A fetched stage arrives as one piece.
					if piece == 1 && want.NNZ() > 0 && !l.fetch {
						require.Greater(t, chunks, l.pr*l.pc, "one-entry pieces cut many chunks")
					}
				})
			}
		}
	}
}

// A selection's rows come whole, each in one chunk of one rank, equal to
// the rows of the unstreamed Mul15D's product.
func TestMul15DStreamSelectionRowsWhole(t *testing.T) {
	a := spgemmtest.Convert(spgemmtest.Random(3, 80, 80, 5, false, true), func(x float64) float64 { return x })
	q := &sparse.Matrix[float64]{NRows: 30, NCols: 80, Indptr: make([]int64, 31), Indices: make([]int64, 30)}
	for x := range q.Indices {
		q.Indices[x] = int64(x*53+7) % 80
		q.Indptr[x+1] = int64(x + 1)
	}
	want := sparse.SelectRowsSR(sparse.PlusTimes[float64]{}, a, q.Indices, nil)
	for _, pc := range [][2]int{{1, 1}, {3, 1}, {2, 2}, {4, 2}} {
		t.Run(fmt.Sprintf("%dx%d", pc[0], pc[1]), func(t *testing.T) {
			rowsGot := make([]*sparse.Matrix[float64], q.NRows)
			var mu sync.Mutex
			run(t, pc[0]*pc[1], func(c collective.Comm) error {
				g, err := collective.NewGrid(c, pc[0], pc[1])
				if err != nil {
					return err
				}
				qb := unevenBounds(q.NRows, g.PR, 9)
				qd := spgemm.Distribute(q, qb, []int64{0, 80}, g.Row, 0, g.Col)
				ad := spgemm.Distribute(a, unevenBounds(80, g.PR, 10), []int64{0, 80}, g.Row, 0, g.Col)
				s := &spgemm.Stream[float64]{ChunkWork: 9, Chunk: func(_ int, rows []int64, cm *sparse.Matrix[float64]) error {
					mu.Lock()
					defer mu.Unlock()
					for x, r := range rows {
						gr := qd.RowOff() + r
						if rowsGot[gr] != nil {
							return fmt.Errorf("row %d twice", gr)
						}
						rowsGot[gr] = spgemmSelect(cm, int64(x))
					}
					return nil
				}}
				if err := spgemm.Mul15DStream(g, sparse.PlusTimes[float64]{}, qd, ad, s); err != nil {
					return err
				}
				return g.Free()
			})
			for r := range q.NRows {
				require.NotNil(t, rowsGot[r], "row %d", r)
				require.NoError(t, spgemmtest.Equal(rowsGot[r], spgemmSelect(want, r)), "row %d", r)
			}
		})
	}
}

// degrees returns the entries of every row of b.
func degrees[T sparse.Scalar](b *sparse.Matrix[T]) []int32 {
	d := make([]int32, b.NRows)
	for r := range d {
		d[r] = int32(b.Degree(int64(r)))
	}
	return d
}

// spgemmSelect returns row r of a as a 1×n matrix.
func spgemmSelect(a *sparse.Matrix[float64], r int64) *sparse.Matrix[float64] {
	return sparse.SelectRows(a, []int64{r})
}

// Bad layouts are errors, not panics.
func TestStreamLayoutErrors(t *testing.T) {
	a := spgemmtest.Random(4, 10, 10, 2, false, true)
	run(t, 4, func(c collective.Comm) error {
		g, err := collective.NewGrid(c, 2, 2)
		if err != nil {
			return err
		}
		s := &spgemm.Stream[float64]{Chunk: func(int, []int64, *sparse.Matrix[float64]) error { return nil }}
		d2 := spgemm.Distribute2D(g, a)
		if err := spgemm.Mul15DStream(g, sparse.PlusTimes[float64]{}, d2, d2, s); err == nil {
			return fmt.Errorf("Mul15DStream took a 2D layout")
		}
		d15 := spgemm.Distribute15D(g, a)
		if err := spgemm.Mul2DStream(g, sparse.PlusTimes[float64]{}, d2, d15, s); err == nil {
			return fmt.Errorf("Mul2DStream took a 1.5D B")
		}
		return g.Free()
	})
}

// With Stream.Select set, a selection A (a pattern, one entry or none per
// row) hands over the rows of the piece it selects instead of the product:
// over every layout, with row fetching or broadcasts, the rows Select and
// Chunk receive together are the product's, and a piece with an unsorted
// row (not a selection's copy) still comes to Chunk.
func TestStreamSelect(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const n = 60
	b := &sparse.Matrix[bool]{NRows: n, NCols: n, Indptr: make([]int64, n+1)}
	for i := range int64(n) {
		for j := range int64(n) {
			if r.IntN(6) == 0 {
				b.Indices = append(b.Indices, j)
			}
		}
		b.Indptr[i+1] = int64(len(b.Indices))
	}
	unsorted := &sparse.Matrix[bool]{NRows: n, NCols: n, Indptr: b.Indptr, Indices: slices.Clone(b.Indices)}
	rev := int64(-1) // the first row with two entries, reversed
	for i := range int64(n) {
		if row := unsorted.Indices[b.Indptr[i]:b.Indptr[i+1]]; len(row) > 1 {
			slices.Reverse(row)
			rev = i
			break
		}
	}
	require.NotEqual(t, int64(-1), rev)
	const m = 80
	a := &sparse.Matrix[bool]{NRows: m, NCols: n, Indptr: make([]int64, m+1)}
	for i := range m {
		if i%7 != 3 { // some rows select nothing
			a.Indices = append(a.Indices, r.Int64N(n))
		}
		a.Indptr[i+1] = int64(len(a.Indices))
	}
	a.Indices[0] = rev // selected
	// DistinctB (B's rows promised sorted and distinct) sends every chunk
	// to Select, with the same rows; the promise is trusted, not checked
	// (a broken one sends the unsorted row to Select too).
	for _, tc := range []struct {
		bm       *sparse.Matrix[bool]
		distinct bool
	}{{b, false}, {unsorted, false}, {b, true}, {unsorted, true}} {
		bm := tc.bm
		want, err := sparse.MulSR(sparse.OrAnd{}, a, bm, nil)
		require.NoError(t, err)
		for _, l := range []streamLayout{{algo: "1.5d", pr: 1, pc: 1}, {algo: "1.5d", pr: 2, pc: 1}, {algo: "1.5d", pr: 2, pc: 1, fetch: true}, {algo: "1.5d", pr: 2, pc: 2}} {
			name := fmt.Sprintf("%v/sorted=%v/distinct=%v", l, bm == b, tc.distinct)
			var mu sync.Mutex
			got := map[int64][]int64{}
			var selected, chunked int
			put := func(rows []int64, row func(x int) []int64, off int64) error {
				mu.Lock()
				defer mu.Unlock()
				for x, rr := range rows {
					if _, ok := got[off+rr]; ok {
						return fmt.Errorf("row %d twice", off+rr)
					}
					got[off+rr] = slices.Clone(row(x))
				}
				return nil
			}
			run(t, l.pr*l.pc, func(c collective.Comm) error {
				g, err := collective.NewGrid(c, l.pr, l.pc)
				if err != nil {
					return err
				}
				ad := spgemm.Distribute(a, spgemm.Bounds(m, g.PR), []int64{0, n}, g.Row, 0, g.Col)
				bd := spgemm.Distribute(bm, spgemm.Bounds(n, g.PR), []int64{0, n}, g.Row, 0, g.Col)
				s := &spgemm.Stream[bool]{ChunkWork: 40, Reuse: true, DistinctB: tc.distinct}
				if l.fetch {
					s.Degrees = degrees(bm)
				}
				s.Chunk = func(_ int, rows []int64, cm *sparse.Matrix[bool]) error {
					mu.Lock()
					chunked++
					mu.Unlock()
					return put(rows, func(x int) []int64 { return cm.Indices[cm.Indptr[x]:cm.Indptr[x+1]] }, ad.RowOff())
				}
				s.Select = func(_ int, rows []int64, piece *sparse.Matrix[bool], brows []int64) error {
					mu.Lock()
					selected++
					mu.Unlock()
					if len(brows) != len(rows) {
						return fmt.Errorf("%d rows of the piece for %d rows", len(brows), len(rows))
					}
					return put(rows, func(x int) []int64 { return piece.Indices[piece.Indptr[brows[x]]:piece.Indptr[brows[x]+1]] }, ad.RowOff())
				}
				return spgemm.Mul15DStream(g, sparse.OrAnd{}, ad, bd, s)
			})
			for i := range int64(m) {
				if tc.distinct && bm == unsorted {
					break // the broken promise's rows are as the piece has them
				}
				w := want.Indices[want.Indptr[i]:want.Indptr[i+1]]
				if len(w) == 0 {
					require.Empty(t, got[i], "%s: row %d", name, i)
					continue
				}
				require.Equal(t, w, got[i], "%s: row %d", name, i)
			}
			require.Positive(t, selected, "%s: no chunk came to Select", name)
			if bm == unsorted && !tc.distinct {
				require.Positive(t, chunked, "%s: the unsorted row's chunk went to Select", name)
			}
			if tc.distinct {
				require.Zero(t, chunked, "%s: a chunk of a distinct B was not a selection", name)
			}
		}
	}
}
