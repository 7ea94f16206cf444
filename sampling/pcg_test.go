package sampling

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/rng"
)

// testPCG is rng.New(seed, stream...)'s generator as a pcg.
func testPCG(seed uint64, stream ...uint64) *pcg {
	return &pcg{hi: seed, lo: rng.Mix(stream...)}
}

// pcg gives the numbers and the floats of math/rand/v2's PCG seeded
// alike, and row the generator of RowStream.
func TestPCGMatchesRandPCG(t *testing.T) {
	for _, seed := range [][2]uint64{{0, 0}, {1, 2}, {math.MaxUint64, 7}, {0x9e3779b97f4a7c15, math.MaxUint64}} {
		var p pcg
		p.seed(seed[0], seed[1])
		q := rand.NewPCG(seed[0], seed[1])
		for range 1000 {
			require.Equal(t, q.Uint64(), p.uint64(), "seed %v", seed)
		}
		p.seed(seed[0], seed[1])
		r := rand.New(rand.NewPCG(seed[0], seed[1]))
		for range 1000 {
			require.Equal(t, r.Float64(), p.float64(), "seed %v", seed)
		}
	}
	for _, v := range []int64{-1, 0, 5, 1 << 40} {
		var p pcg
		p.row(42, 1, v)
		r := RowStream(42, 1, v)
		for range 100 {
			require.Equal(t, r.Float64(), p.float64(), "v %d", v)
		}
	}
}

// draw returns what it returned before its bit marks and its generator
// without an interface (oldDarts, over rand.Rand): the same positions
// from the same streams, for unit and general weights, every n from 0 to
// 300 and fanouts that make it keep all, scan its marks, sort its draws
// and rebuild.
func TestDrawMatchesReference(t *testing.T) {
	var d darts
	var ref oldDarts
	for n := range 300 {
		for _, s := range []int{-1, 0, 1, 2, 5, 10, 15, 25, n / 2, n - 1, n} {
			for _, weighted := range []bool{false, true} {
				var w []float64
				if weighted {
					wr := rng.New(9, uint64(n))
					w = make([]float64, n)
					for k := range w {
						if wr.IntN(4) > 0 {
							w[k] = wr.Float64() * 10
						}
					}
				}
				for trial := range 4 {
					p := testPCG(3, uint64(n), uint64(s+1), uint64(trial))
					r := rand.New(rand.NewPCG(3, rng.Mix(uint64(n), uint64(s+1), uint64(trial))))
					want := slices.Clone(ref.draw(n, w, s, r))
					require.Equal(t, want, d.draw(n, w, s, p), "n=%d s=%d weighted=%v", n, s, weighted)
					require.Equal(t, r.Uint64(), p.uint64(), "n=%d s=%d: draws used", n, s)
				}
			}
		}
	}
	for _, x := range d.taken {
		require.Zero(t, x, "marks left set")
	}
}

// oldDarts is darts as it was before its bit marks (draw over a
// rand.Rand, a bool per position), the reference of
// TestDrawMatchesReference.
type oldDarts struct {
	taken  []bool
	idx    []int
	prefix []float64
	out    []int
}

func (d *oldDarts) draw(n int, w []float64, s int, r *rand.Rand) []int {
	d.out = d.out[:0]
	candidates := n
	if w != nil {
		candidates = 0
		for _, x := range w {
			if x > 0 {
				candidates++
			}
		}
	}
	if s < 0 || candidates <= s {
		for k := range n {
			if w == nil || w[k] > 0 {
				d.out = append(d.out, k)
			}
		}
		return d.out
	}
	if s == 0 {
		return d.out
	}
	if len(d.taken) < n {
		d.taken = make([]bool, n)
	}
	taken := d.taken[:n]
	identity := w == nil
	var total float64
	if identity {
		total = float64(n)
	} else {
		total = d.rebuild(n, w, taken)
	}
	var mass float64
	for len(d.out) < s {
		u := r.Float64() * total
		var t int
		if w == nil {
			t = int(u)
		} else {
			t = upper(d.prefix, u)
		}
		var pos int
		switch {
		case identity && t < n:
			pos = t
		case !identity && t < len(d.idx):
			pos = d.idx[t]
		default:
			continue
		}
		if taken[pos] {
			continue
		}
		taken[pos] = true
		d.out = append(d.out, pos)
		if w == nil {
			mass++
		} else {
			mass += w[pos]
		}
		if 2*mass > total && len(d.out) < s {
			identity = false
			total = d.rebuild(n, w, taken)
			mass = 0
		}
	}
	for _, pos := range d.out {
		taken[pos] = false
	}
	slices.Sort(d.out)
	return d.out
}

func (d *oldDarts) rebuild(n int, w []float64, taken []bool) float64 {
	d.idx = d.idx[:0]
	d.prefix = d.prefix[:0]
	var total float64
	for k := range n {
		if taken[k] {
			continue
		}
		if w == nil {
			d.idx = append(d.idx, k)
			total++
			continue
		}
		if w[k] > 0 {
			total += w[k]
			d.idx = append(d.idx, k)
			d.prefix = append(d.prefix, total)
		}
	}
	return total
}

// prefetchRow is a hint: on rows of any length, past its 512 bytes too,
// and on nothing, it neither faults nor changes what it is given.
func TestPrefetchRow(t *testing.T) {
	prefetchRow(nil, 0)
	for _, n := range []int{1, 7, 8, 9, 64, 65, 1000} {
		row := make([]int64, n)
		for i := range row {
			row[i] = int64(3 * i)
		}
		want := slices.Clone(row)
		prefetchRow(&row[0], n)
		require.Equal(t, want, row, "n=%d", n)
	}
}

// sortSmall sorts as slices.Sort does, by each of its methods (sweeps up
// to sweepSort, insertion up to smallSort, slices.Sort beyond), with
// repeated values and already sorted or reversed input.
func TestSortSmall(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 5))
	for n := range 2*smallSort + 3 {
		for trial := range 6 {
			x := make([]int64, n)
			for i := range x {
				x[i] = r.Int64N(int64(n/2 + 1)) // repeats
			}
			switch trial {
			case 1:
				slices.Sort(x)
			case 2:
				slices.Sort(x)
				slices.Reverse(x)
			}
			want := slices.Clone(x)
			slices.Sort(want)
			y := make([]int, n)
			for i, v := range x {
				y[i] = int(v)
			}
			sortSmall(x)
			sortSmall(y)
			require.Equal(t, want, x, "n=%d trial %d", n, trial)
			for i, v := range want {
				require.Equal(t, int(v), y[i], "n=%d trial %d", n, trial)
			}
		}
	}
}
