package f16

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every bfloat16 word survives the round trip through float32 (NaNs stay
// NaN).
func TestBF16RoundTripAllWords(t *testing.T) {
	for h := range 1 << 16 {
		f := BF16ToFloat32(uint16(h))
		if f != f {
			require.True(t, math.IsNaN(float64(BF16ToFloat32(BF16FromFloat32(f)))), "word %#x", h)
			continue
		}
		require.Equal(t, uint16(h), BF16FromFloat32(f), "word %#x = %g", h, f)
	}
}

// Known values: exact ones, the ties (to even) and the edges of the range.
func TestBF16KnownValues(t *testing.T) {
	maxBF16 := math.Float32frombits(0x7f7f0000) // largest finite bfloat16
	for _, tc := range []struct {
		name string
		f    float32
		h    uint16
	}{
		{"zero", 0, 0},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"one", 1, 0x3f80},
		{"minus two", -2, 0xc000},
		{"tie, even below", math.Float32frombits(0x3f808000), 0x3f80}, // 1 + 2⁻⁸: between 1 and 1+2⁻⁷, even is 1
		{"tie, even above", math.Float32frombits(0x3f818000), 0x3f82}, // between 1+2⁻⁷ and 1+2⁻⁶: even is the upper
		{"above the tie", math.Float32frombits(0x3f808001), 0x3f81},
		{"below the tie", math.Float32frombits(0x3f807fff), 0x3f80},
		{"largest finite", maxBF16, 0x7f7f},
		{"rounds to Inf", math.MaxFloat32, 0x7f80},
		{"Inf", float32(math.Inf(1)), 0x7f80},
		{"minus Inf", float32(math.Inf(-1)), 0xff80},
		{"smallest subnormal float32", math.Float32frombits(1), 0}, // far below half a bfloat16 unit
		{"smallest bfloat16 subnormal", math.Float32frombits(0x00010000), 0x0001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.h, BF16FromFloat32(tc.f), "got: %#x want: %#x", BF16FromFloat32(tc.f), tc.h)
		})
	}
	require.True(t, math.IsNaN(float64(BF16ToFloat32(BF16FromFloat32(float32(math.NaN()))))))
	// A signalling NaN whose payload lies only in the dropped bits must not
	// become Inf.
	require.True(t, math.IsNaN(float64(BF16ToFloat32(BF16FromFloat32(math.Float32frombits(0x7f800001))))))
}

// BF16FromFloat32 returns the nearest word: neither neighbour is closer,
// and on a tie the chosen word is even. Checked in float64 on random
// finite float32 values of every magnitude.
func TestBF16Nearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		f := math.Float32frombits(r.Uint32() & 0x7f7fffff) // finite, below the largest bfloat16
		if r.IntN(2) == 1 {
			f = -f
		}
		h := BF16FromFloat32(f)
		got := float64(BF16ToFloat32(h))
		if math.IsInf(got, 0) {
			// Rounds to Inf only from half a unit above the largest finite
			// word, 2¹²⁸ − 2¹¹⁹ (that word is 2¹²⁸ − 2¹²⁰).
			require.GreaterOrEqual(t, math.Abs(float64(f)), math.Ldexp(1, 128)-math.Ldexp(1, 119), "%g", f)
			continue
		}
		d := math.Abs(got - float64(f))
		for _, nb := range []uint16{h - 1, h + 1} {
			v := float64(BF16ToFloat32(nb))
			if math.IsNaN(v) || math.IsInf(v, 0) || (nb^h)&0x8000 != 0 {
				continue
			}
			dn := math.Abs(v - float64(f))
			require.LessOrEqual(t, d, dn, "%g → %#x (%g), neighbour %#x (%g) is closer", f, h, got, nb, v)
			if d == dn {
				require.Zero(t, h&1, "%g: tie not rounded to even", f)
			}
		}
	}
}

// EncodeBF16 and DecodeBF16 agree with the scalar conversions.
func TestBF16Slices(t *testing.T) {
	src := []float32{0, 1, -1.5, 3.14159, 1e-30, 6e37, float32(math.Inf(-1))}
	words := make([]uint16, len(src))
	EncodeBF16(words, src)
	back := make([]float32, len(src))
	DecodeBF16(back, words)
	for i, f := range src {
		require.Equal(t, BF16FromFloat32(f), words[i])
		require.Equal(t, BF16ToFloat32(words[i]), back[i])
	}
}

// Add and AddBF16 add the decoded words to float32 sums: the same as
// decoding and adding.
func TestAdd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		encode func([]uint16, []float32)
		decode func([]float32, []uint16)
		add    func([]float32, []uint16)
	}{
		{"bf16", EncodeBF16, DecodeBF16, AddBF16},
		{"f16", Encode, Decode, Add},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			const n = 257
			vals, acc := make([]float32, n), make([]float32, n)
			for i := range vals {
				vals[i], acc[i] = float32(r.NormFloat64()*100), float32(r.NormFloat64())
			}
			words := make([]uint16, n)
			tc.encode(words, vals)
			dec := make([]float32, n)
			tc.decode(dec, words)
			want := make([]float32, n)
			for i := range want {
				want[i] = acc[i] + dec[i]
			}
			tc.add(acc, words)
			require.Equal(t, want, acc)
		})
	}
}
