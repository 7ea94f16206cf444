package sampling

import (
	"math"
	"math/bits"
)

// Dart throwing: the row-wise selection step of matrix-based sampling
// (Tripathy, Yelick and Buluç, MLSys 2024). With P = Q·A, row i of P holds
// the candidates of the i-th frontier vertex, and a sampler draws among
// them with darts.draw (see uniformPicker).

// darts holds the scratch space of weighted sampling without replacement by
// dart throwing; the zero value is ready to use and reused across rows.
type darts struct {
	taken  []uint64  // bit k of taken: position k already drawn; all clear between calls
	idx    []int     // candidate positions after the last rebuild
	prefix []float64 // prefix[t] = Σ weights of idx[:t+1]
	out    []int
}

// draw returns, in ascending order, the positions of s distinct entries
// among n with weights w (nil: all ones) drawn without replacement: each
// draw picks a remaining candidate with probability proportional to its
// weight (successive sampling, as numpy's choice(replace=False, p=w)).
// Entries of weight 0 are never drawn. When there are at most s candidates,
// or s < 0, all of them are returned and r is not used.
//
// A draw throws a dart u = r.float64()·total and takes the candidate t whose
// prefix-sum interval [prefix[t−1], prefix[t]) contains u (binary search;
// for unit weights t = ⌊u⌋). A dart that lands on a taken candidate is
// rejected and thrown again, which keeps the distribution exact. Once the
// taken candidates hold more than half of the current total, the prefix
// sums are rebuilt over the remaining candidates, so that a dart is accepted
// with probability above one half whatever the weights.
//
// The returned slice is reused by the next call.
// It will panic if a weight is negative, NaN or infinite.
func (d *darts) draw(n int, w []float64, s int, r *pcg) []int {
	d.out = d.out[:0]
	candidates := n
	if w != nil {
		candidates = 0
		for _, x := range w {
			if !(x >= 0) || math.IsInf(x, 1) {
				panic("sampling: negative, NaN or infinite weight")
			}
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

	words := (n + 63) >> 6
	if len(d.taken) < words {
		d.taken = make([]uint64, words)
	}
	taken := d.taken[:words]
	switch {
	case w == nil && n >= 2*s:
		d.out = drawUnit(d.out, n, s, taken, r)
	case w == nil:
		d.drawUnitRebuild(n, s, taken, r)
	default:
		d.drawWeighted(n, w, s, taken, r)
	}
	if n <= scanFactor*len(d.out) {
		// In order by a scan of the marks, which it clears.
		out := d.out[:0]
		for i, x := range taken {
			for x != 0 {
				out = append(out, i<<6|bits.TrailingZeros64(x))
				x &= x - 1
			}
			taken[i] = 0
		}
		d.out = out
		return out
	}
	for _, pos := range d.out {
		taken[pos>>6] = 0
	}
	sortSmall(d.out)
	return d.out
}

// drawUnit appends to out s distinct positions among n of unit weight
// with n ≥ 2s, marking them in taken: as drawWeighted, whose rebuild
// never comes when the s − 1 first draws are less than half of n.
func drawUnit(out []int, n, s int, taken []uint64, r *pcg) []int {
	total := float64(n)
	for len(out) < s {
		t := int(r.float64() * total)
		if uint(t) >= uint(n) {
			continue // rounding put the dart at the end
		}
		x, b := taken[t>>6], uint64(1)<<(t&63)
		if x&b != 0 {
			continue
		}
		taken[t>>6] = x | b
		out = append(out, t)
	}
	return out
}

// drawUnitRebuild appends to d.out s distinct positions among n of unit
// weight, marking them in taken: drawWeighted with nil weights, without
// its tests of the weights, when the draws may come to half of n and
// rebuild (n < 2s). The counts are whole, so comparing them as integers
// is comparing them as drawWeighted's float64.
func (d *darts) drawUnitRebuild(n, s int, taken []uint64, r *pcg) {
	out := d.out
	total, mass := n, 0
	for len(out) < s { // the identity: candidate t is position t
		t := int(r.float64() * float64(total))
		if uint(t) >= uint(n) {
			continue // rounding put the dart at the end
		}
		x, b := taken[t>>6], uint64(1)<<(t&63)
		if x&b != 0 {
			continue
		}
		taken[t>>6] = x | b
		out = append(out, t)
		if mass++; 2*mass > total && len(out) < s {
			break
		}
	}
	for len(out) < s { // the candidates left at each rebuild
		d.out = out
		total, mass = int(d.rebuild(n, nil, taken)), 0
		idx := d.idx
		for len(out) < s {
			t := int(r.float64() * float64(total))
			if uint(t) >= uint(len(idx)) {
				continue
			}
			pos := idx[t]
			x, b := taken[pos>>6], uint64(1)<<(pos&63)
			if x&b != 0 {
				continue
			}
			taken[pos>>6] = x | b
			out = append(out, pos)
			if mass++; 2*mass > total && len(out) < s {
				break
			}
		}
	}
	d.out = out
}

// drawWeighted appends to d.out the s draws of draw with weights w (nil:
// all ones), marking them in taken.
func (d *darts) drawWeighted(n int, w []float64, s int, taken []uint64, r *pcg) {
	// Unit weights start from the identity: candidate t is position t and
	// the prefix sums need not be stored.
	identity := w == nil
	var total float64
	if identity {
		total = float64(n)
	} else {
		total = d.rebuild(n, w, taken)
	}
	var mass float64 // weight of the candidates taken since the last rebuild
	for len(d.out) < s {
		u := r.float64() * total
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
			continue // rounding put the dart at the end
		}
		if taken[pos>>6]&(1<<(pos&63)) != 0 {
			continue
		}
		taken[pos>>6] |= 1 << (pos & 63)
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
}

// scanFactor bounds the candidates per draw up to which draw puts its
// draws in order by a scan of its marks (a word of 64 at a time) rather
// than a sort of the draws.
const scanFactor = 64

// rebuild makes idx the positions not yet taken of positive weight and, for
// non-nil w, prefix their prefix sums. It returns their total weight.
func (d *darts) rebuild(n int, w []float64, taken []uint64) float64 {
	d.idx = d.idx[:0]
	d.prefix = d.prefix[:0]
	if w == nil {
		// The clear bits of taken, a word at a time.
		for i, x := range taken[:(n+63)>>6] {
			free := ^x
			if rest := n - i<<6; rest < 64 {
				free &= 1<<rest - 1
			}
			for free != 0 {
				d.idx = append(d.idx, i<<6|bits.TrailingZeros64(free))
				free &= free - 1
			}
		}
		return float64(len(d.idx))
	}
	var total float64
	for k := range n {
		if taken[k>>6]&(1<<(k&63)) != 0 {
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

// upper returns the first t with prefix[t] > u, or len(prefix).
func upper(prefix []float64, u float64) int {
	lo, hi := 0, len(prefix)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if prefix[m] > u {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}
