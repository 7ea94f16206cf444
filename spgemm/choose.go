package spgemm

import (
	"gnnmpi/collective"
	"gnnmpi/sparse"
)

// Volume15D is the predicted traffic of Mul15D(A, B) on p ranks with
// replication factor C: the bytes one rank sends, averaged over the ranks,
// in the broadcasts of B's blocks and in the reduction of the partial
// products (see the package documentation for the exact volumes).
type Volume15D struct {
	C      int
	Bcast  float64
	Reduce float64
}

// Total returns the predicted bytes sent per rank.
func (v Volume15D) Total() float64 { return v.Bcast + v.Reduce }

// Predict15D predicts the traffic of Mul15D(A, B) with every replication
// factor c dividing p, in increasing c. The broadcast volume is exact. The
// reduction volume is estimated from up to sample rows of A (every
// ⌈m/sample⌉-th row; all rows make it exact): for each, the entries of its
// partial products, one per replica (the terms over the rows of B in that
// replica's stages), of which all but the row's own replica's travel.
// Values take valSize bytes (8 for float64; 0 for a pattern B, whose
// partial products are still valued: pass the size of the product's
// element type).
//
// Replication trades the broadcasts, which fall as 1/c, for a reduction of
// partial products, which grows with c: a product whose output is small
// against B (the sampler's Q·A when its rows reach most of B) gains from
// c > 1, while for A·A of a power-law graph, whose partial products are
// several times larger than B, c = 1 sends least.
func Predict15D[T sparse.Scalar](a, b *sparse.Matrix[T], p, valSize, sample int) []Volume15D {
	m, k := a.NRows, a.NCols
	bVal := int64(valSize)
	if b.Values == nil {
		bVal = 0
	}
	step := int64(1)
	if sample > 0 && m > int64(sample) {
		step = (m + int64(sample) - 1) / int64(sample)
	}
	seen := make([]int32, b.NCols) // seen[j] = the mark of the last (row, replica) touching j
	mark := int32(0)
	var out []Volume15D
	for c := 1; c <= p; c++ {
		if p%c != 0 {
			continue
		}
		q := p / c
		rb := Bounds(k, q) // B's row blocks, stage j held by grid row j
		// Broadcasts: stage j's block goes from its owner to the q−1 other
		// ranks of a grid column.
		var bcast float64
		for j := range q {
			lo, hi := rb[j], rb[j+1]
			bytes := 8*(hi-lo) + (8+bVal)*(b.Indptr[hi]-b.Indptr[lo])
			bcast += float64(int64(q-1) * bytes)
		}
		// Reduction: each row of block i is reduced by replica sub(r) of
		// its grid row; the other c−1 replicas send it their partial row.
		var reduce float64
		if c > 1 {
			ab := Bounds(m, q)
			var sampled, entries, rowsSent float64
			for r := int64(0); r < m; r += step {
				i := collective.BlockOf(ab, r)
				sub := Bounds(ab[i+1]-ab[i], c)
				own := collective.BlockOf(sub, r-ab[i])
				sampled++
				for rep := range c {
					if rep == own {
						continue
					}
					mark++
					var n int64
					for _, t := range a.Indices[a.Indptr[r]:a.Indptr[r+1]] {
						if collective.BlockOf(rb, t)%c != rep {
							continue
						}
						for _, j := range b.Indices[b.Indptr[t]:b.Indptr[t+1]] {
							if seen[j] != mark {
								seen[j] = mark
								n++
							}
						}
					}
					entries += float64(n)
					rowsSent++
				}
				if mark > 1<<30 {
					clear(seen)
					mark = 0
				}
			}
			scale := float64(m) / sampled
			reduce = scale * (8*rowsSent + float64(8+valSize)*entries)
		}
		out = append(out, Volume15D{C: c, Bcast: bcast / float64(p), Reduce: reduce / float64(p)})
	}
	return out
}

// Choose15D returns the replication factor c dividing p with the least
// predicted traffic per rank (Predict15D from up to 4096 rows), the
// smallest on a tie, and the predictions.
func Choose15D[T sparse.Scalar](a, b *sparse.Matrix[T], p, valSize int) (int, []Volume15D) {
	vs := Predict15D(a, b, p, valSize, 4096)
	best := vs[0]
	for _, v := range vs[1:] {
		if v.Total() < best.Total() {
			best = v
		}
	}
	return best.C, vs
}
