package f16

import "testing"

// BenchmarkEncodeBF16 and BenchmarkDecodeBF16 convert 1M values (4 MB of
// float32), the unit of a gradient bucket.
func BenchmarkEncodeBF16(b *testing.B) {
	src := make([]float32, 1<<20)
	for i := range src {
		src[i] = float32(i) * 1e-3
	}
	dst := make([]uint16, len(src))
	b.SetBytes(int64(len(src)) * 4)
	for b.Loop() {
		EncodeBF16(dst, src)
	}
}

func BenchmarkDecodeBF16(b *testing.B) {
	src := make([]uint16, 1<<20)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	b.SetBytes(int64(len(src)) * 4)
	for b.Loop() {
		DecodeBF16(dst, src)
	}
}
