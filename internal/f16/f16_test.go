package f16

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every half word survives the round trip through float32 (NaNs stay NaN).
func TestRoundTripAllWords(t *testing.T) {
	for h := range 1 << 16 {
		f := ToFloat32(uint16(h))
		if f != f {
			require.True(t, math.IsNaN(float64(ToFloat32(FromFloat32(f)))), "word %#x", h)
			continue
		}
		require.Equal(t, uint16(h), FromFloat32(f), "word %#x = %g", h, f)
	}
}

// Known values, including the edges of the range.
func TestKnownValues(t *testing.T) {
	for _, tc := range []struct {
		f float32
		h uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800},
		{65504, 0x7bff},                       // largest half
		{65520, 0x7c00},                       // halfway to 2^16: ties to even = Inf
		{65519, 0x7bff},                       // below the halfway point
		{float32(math.Ldexp(1, -14)), 0x0400}, // smallest normal
		{float32(math.Ldexp(1, -24)), 0x0001}, // smallest subnormal
		{float32(math.Ldexp(1, -25)), 0x0000}, // half of it: ties to even = 0
		{float32(math.Ldexp(1.5, -25)), 0x0001},
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00}, {1e10, 0x7c00},
		{1 + 1.0/2048, 0x3c00}, // tie between 1 and 1+2^-10: even is 1
		{1 + 3.0/2048, 0x3c02}, // tie between 1+2^-10 and 1+2^-9: even is the upper
	} {
		require.Equal(t, tc.h, FromFloat32(tc.f), "%g", tc.f)
	}
	require.True(t, math.IsNaN(float64(ToFloat32(FromFloat32(float32(math.NaN()))))))
}

// FromFloat32 returns the nearest half: no other half word is closer, and
// on a tie the chosen word is even. Checked against float64 arithmetic on
// random float32 values across the whole half range.
func TestNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := float32(math.Ldexp(r.Float64()*2-1, r.IntN(44)-28))
		h := FromFloat32(f)
		got := float64(ToFloat32(h))
		if math.IsInf(got, 0) {
			require.GreaterOrEqual(t, math.Abs(float64(f)), 65520.0, "%g", f)
			continue
		}
		d := math.Abs(got - float64(f))
		for _, nb := range []uint16{h - 1, h + 1} {
			if nb&0x7c00 == 0x7c00 {
				continue
			}
			dn := math.Abs(float64(ToFloat32(nb)) - float64(f))
			// h and nb have the same sign except across zero, where the
			// comparison still holds.
			require.True(t, d < dn || d == dn && h&1 == 0, "%g → %#x (%g) but %#x (%g) is closer", f, h, got, nb, ToFloat32(nb))
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	src := []float32{0.1, -3.5, 1000, 1e-4}
	h := make([]uint16, len(src))
	Encode(h, src)
	back := make([]float32, len(src))
	Decode(back, h)
	for i, f := range src {
		require.Equal(t, FromFloat32(f), h[i])
		require.Equal(t, ToFloat32(h[i]), back[i])
		require.InEpsilon(t, f, back[i], 1e-3)
	}
}

func BenchmarkDecode(b *testing.B) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	b.SetBytes(int64(2 * len(src)))
	for b.Loop() {
		Decode(dst, src)
	}
}
