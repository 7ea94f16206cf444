// Package rng gives seeded, reproducible random streams.
//
// # Overview
//
// Nothing in gnnmpi calls the top-level functions of math/rand/v2. Every
// consumer asks New for a stream identified by a seed and a path of stream
// ids, so that the same seed gives the same numbers on every backend and
// rank count. Work that must agree across ranks (a global shuffle, weight
// initialisation) uses a stream without the rank; per-rank work adds the rank
// to the path.
package rng

import (
	"math/bits"
	"math/rand/v2"
)

// New returns a PCG generator for seed and the stream path. Different paths
// give statistically independent streams; the same seed and path always give
// the same sequence.
func New(seed uint64, stream ...uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, Mix(stream...)))
}

// Mix hashes a stream path into one 64-bit value (SplitMix64 finaliser
// applied after each element).
func Mix(stream ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, s := range stream {
		h ^= s + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h = splitmix(h)
	}
	return h
}

func splitmix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// PCG is the state of math/rand/v2's PCG generator (a 128-bit LCG with the
// DXSM output function) as a plain value: Next gives the numbers of a
// rand.PCG seeded with Seed(Hi, Lo). A loop that keeps a PCG in a local
// variable keeps the state in registers, where rand.PCG's methods load and
// store it through a pointer at every draw.
type PCG struct{ Hi, Lo uint64 }

// The LCG of PCG, s ↦ a·s + c mod 2¹²⁸, and its fourth power s ↦ a⁴·s + c₄
// (c₄ = c·(1 + a + a² + a³)), as 64-bit halves.
const (
	pcgMulHi, pcgMulLo   = 2549297995355413924, 4865540595714422341
	pcgIncHi, pcgIncLo   = 6364136223846793005, 1442695040888963407
	pcgMul4Hi, pcgMul4Lo = 17644330877953211035, 15101941458738108273
	pcgInc4Hi, pcgInc4Lo = 10651792012609195688, 14566485425402579620
)

// Next returns the state after one draw and the number drawn, rand.PCG's
// Uint64.
func (p PCG) Next() (PCG, uint64) {
	p = p.lcg(pcgMulHi, pcgMulLo, pcgIncHi, pcgIncLo)
	return p, p.out()
}

// Fill sets dst to the next len(dst) numbers, those of as many calls of
// Next, and returns the state after them. Four states, four draws apart,
// advance side by side by the LCG's fourth power, so that four 128-bit
// multiplications are in flight where Next waits for each in turn.
func (p PCG) Fill(dst []uint64) PCG {
	i := 0
	if len(dst) >= 8 {
		a := p.lcg(pcgMulHi, pcgMulLo, pcgIncHi, pcgIncLo)
		b := a.lcg(pcgMulHi, pcgMulLo, pcgIncHi, pcgIncLo)
		c := b.lcg(pcgMulHi, pcgMulLo, pcgIncHi, pcgIncLo)
		d := c.lcg(pcgMulHi, pcgMulLo, pcgIncHi, pcgIncLo)
		for {
			q := dst[i : i+4 : i+4]
			q[0], q[1], q[2], q[3] = a.out(), b.out(), c.out(), d.out()
			i += 4
			if i+4 > len(dst) {
				p = d
				break
			}
			a = a.lcg(pcgMul4Hi, pcgMul4Lo, pcgInc4Hi, pcgInc4Lo)
			b = b.lcg(pcgMul4Hi, pcgMul4Lo, pcgInc4Hi, pcgInc4Lo)
			c = c.lcg(pcgMul4Hi, pcgMul4Lo, pcgInc4Hi, pcgInc4Lo)
			d = d.lcg(pcgMul4Hi, pcgMul4Lo, pcgInc4Hi, pcgInc4Lo)
		}
	}
	for ; i < len(dst); i++ {
		p, dst[i] = p.Next()
	}
	return p
}

// lcg returns m·p + c mod 2¹²⁸.
func (p PCG) lcg(mHi, mLo, cHi, cLo uint64) PCG {
	hi, lo := bits.Mul64(p.Lo, mLo)
	hi += p.Hi*mLo + p.Lo*mHi
	lo, carry := bits.Add64(lo, cLo, 0)
	hi, _ = bits.Add64(hi, cHi, carry)
	return PCG{hi, lo}
}

// out is PCG's DXSM output function of the state p.
func (p PCG) out() uint64 {
	const cheapMul = 0xda942042e4dd58b5
	x := p.Hi
	x ^= x >> 32
	x *= cheapMul
	x ^= x >> 48
	x *= p.Lo | 1
	return x
}
