package pipe

import "gnnmpi/dense"

// Dropout here is keyed by vertex: the mask of a row depends only on the
// pass's key and the row's global id, never on which rank, chunk or block
// holds the row. So a halo row dropped by its owner is the row every reader
// would have dropped, and graph-parallel, pipelined and single-rank runs
// draw the same masks.
//
// Each element draws 16 random bits from a SplitMix64 stream seeded by
// (key, gid); it is kept when they are at least ⌊rate·65536⌋ and then scaled
// by 1/(1 − rate), so the rate is exact to 1/65536.

// splitmix64 advances *s and returns the next output of SplitMix64.
func splitmix64(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// rowSeed returns the stream state of row gid under key.
func rowSeed(key uint64, gid int64) uint64 {
	s := key ^ uint64(gid)*0xd1b54a32d192ed03
	splitmix64(&s)
	return s
}

// mask draws the keep/drop decisions of one row.
type mask struct {
	s, bits uint64
	k       int // decisions drawn
	thr     uint64
}

func newMask(key uint64, gid int64, rate float32) mask {
	return mask{s: rowSeed(key, gid), thr: uint64(rate * 65536)}
}

// keep draws the next decision.
func (m *mask) keep() bool {
	if m.k%4 == 0 {
		m.bits = splitmix64(&m.s)
	}
	m.k++
	keep := m.bits&0xffff >= m.thr
	m.bits >>= 16
	return keep
}

// dropRows applies inverted dropout at rate to x in place, row i being
// vertex gids[i]. Applied to a gradient with the same key and gids it is the
// backward pass (the same 0 or 1/(1 − rate) factor per element).
// It does nothing when rate is 0.
func dropRows(x *dense.Matrix, gids []int64, rate float32, key uint64) {
	drop(x, gids, rate, key, false)
}

// dropNonzeros is dropRows for sparse inputs (bag-of-words features): only
// the nonzero entries of a row draw, in column order, so the mask depends on
// the row's content, which is the same on every rank holding it. It has no
// backward: inputs get no gradient.
func dropNonzeros(x *dense.Matrix, gids []int64, rate float32, key uint64) {
	drop(x, gids, rate, key, true)
}

// drop is dropRows, or dropNonzeros if nonzeros.
func drop(x *dense.Matrix, gids []int64, rate float32, key uint64, nonzeros bool) {
	if rate == 0 {
		return
	}
	scale := 1 / (1 - rate)
	f := x.Cols
	for i, gid := range gids {
		m := newMask(key, gid, rate)
		row := x.Data[i*f : (i+1)*f]
		for j, v := range row {
			if !nonzeros || v != 0 {
				row[j] = dropped(v, m.keep(), scale)
			}
		}
	}
}

// dropped returns v·scale if keep, else 0.
func dropped(v float32, keep bool, scale float32) float32 {
	if keep {
		return v * scale
	}
	return 0
}
