package sampling

import (
	"math/bits"

	"gnnmpi/internal/rng"
)

// pcg is math/rand/v2's PCG generator (a 128-bit LCG with the DXSM
// output function) as a concrete type whose methods inline: the same
// state and the same numbers as rand.PCG seeded alike, without the
// interface call per draw of a rand.Rand. Its float64 is rand.Rand's
// Float64 of those numbers.
type pcg struct{ hi, lo uint64 }

// seed sets the state as rand.PCG's Seed(hi, lo) does.
func (p *pcg) seed(hi, lo uint64) { p.hi, p.lo = hi, lo }

// row seeds p as RowStream(key, h, v)'s generator.
func (p *pcg) row(key uint64, h int, v int64) *pcg {
	p.seed(key, rng.Mix(uint64(h), uint64(v)))
	return p
}

// uint64 returns the next number, rand.PCG's Uint64.
func (p *pcg) uint64() uint64 {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	hi, lo := bits.Mul64(p.lo, mulLo)
	hi += p.hi*mulLo + p.lo*mulHi
	lo, c := bits.Add64(lo, incLo, 0)
	hi, _ = bits.Add64(hi, incHi, c)
	p.lo, p.hi = lo, hi
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	hi *= lo | 1
	return hi
}

// float64 returns a number in [0, 1) from the next number, as
// rand.Rand's Float64 does: its low 53 bits over 2^53.
func (p *pcg) float64() float64 { return float64(p.uint64()<<11>>11) / (1 << 53) }
