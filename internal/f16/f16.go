// Package f16 converts between float32 and the two 16-bit floats, stored
// as uint16 words: IEEE 754 binary16 (half precision: 1 sign bit, 5
// exponent bits (bias 15), 10 fraction bits; FromFloat32, ToFloat32) and
// bfloat16 (float32's top half: 1 sign bit, 8 exponent bits, 7 fraction
// bits; BF16FromFloat32, BF16ToFloat32). Conversion to 16 bits rounds to
// nearest, ties to even, with overflow to ±Inf, gradual underflow to
// subnormals and NaN kept a (quiet) NaN; conversion back is exact.
package f16

import "math"

// FromFloat32 returns the half-precision word nearest to f (ties to even).
func FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	frac := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if frac != 0 {
			return sign | 0x7e00 | uint16(frac>>13) // quiet NaN, payload's top bits
		}
		return sign | 0x7c00
	case exp > 127+15: // beyond the largest half exponent: rounds to Inf
		return sign | 0x7c00
	case exp >= 127-14: // normal half (or rounds up into the next binade)
		e := uint32(exp-127+15) << 10
		h := e | frac>>13
		// Round to nearest even on the 13 dropped bits; a carry out of the
		// fraction bumps the exponent, and out of the top exponent gives
		// Inf, both by plain addition.
		rest := frac & 0x1fff
		if rest > 0x1000 || rest == 0x1000 && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	case exp >= 127-25: // subnormal half (or rounds to the smallest normal)
		m := frac | 0x800000 // the implicit bit
		shift := uint32(127 - 14 - exp + 13)
		h := m >> shift
		rest := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || rest == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	return sign // underflows to ±0
}

// table holds the float32 bits of every half word.
var table = func() *[1 << 16]uint32 {
	var t [1 << 16]uint32
	for h := range t {
		t[h] = toBits(uint16(h))
	}
	return &t
}()

func toBits(h uint16) uint32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return sign | 0x7f800000 | frac<<13
	case exp != 0:
		return sign | (exp-15+127)<<23 | frac<<13
	case frac == 0:
		return sign
	}
	// Subnormal: normalise.
	e := uint32(127 - 14)
	for frac&0x400 == 0 {
		frac <<= 1
		e--
	}
	return sign | e<<23 | (frac&0x3ff)<<13
}

// ToFloat32 returns the value of the half word h (exact).
func ToFloat32(h uint16) float32 { return math.Float32frombits(table[h]) }

// Encode writes the half words of src into dst. It will panic if dst is
// shorter than src.
func Encode(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = FromFloat32(f)
	}
}

// Add adds the values of the half words of src to dst, in float32:
// dst[i] += value(src[i]). It will panic if dst is shorter than src.
func Add(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] += math.Float32frombits(table[h])
	}
}

// Decode writes the values of the half words of src into dst. It will
// panic if dst is shorter than src.
func Decode(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(table[h])
	}
}
