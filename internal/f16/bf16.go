package f16

import "math"

// BF16FromFloat32 returns the bfloat16 word nearest to f (ties to even):
// the top 16 bits of f's float32 encoding (1 sign bit, 8 exponent bits,
// 7 fraction bits), rounded on the 16 dropped bits. bfloat16 has float32's
// range, so only values within half a unit of the largest finite word
// round to ±Inf; NaN stays a (quiet) NaN.
func BF16FromFloat32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep the sign and the top of the payload, set the quiet bit
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1 // a carry into the exponent (or into Inf) is the right rounding
	return uint16(b >> 16)
}

// BF16ToFloat32 returns the value of the bfloat16 word h (exact).
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// EncodeBF16 writes the bfloat16 words of src into dst. It will panic if
// dst is shorter than src.
func EncodeBF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = BF16FromFloat32(f)
	}
}

// AddBF16 adds the values of the bfloat16 words of src to dst, in
// float32: dst[i] += value(src[i]). It will panic if dst is shorter than
// src.
func AddBF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] += math.Float32frombits(uint32(h) << 16)
	}
}

// DecodeBF16 writes the values of the bfloat16 words of src into dst. It
// will panic if dst is shorter than src.
func DecodeBF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}
