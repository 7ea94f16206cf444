package dense

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// adamRef is Adam's update as model.Adam wrote it before AdamUpdate, one
// element at a time in float32 with the square root taken in float64.
func adamRef(w, g, m, v []float32, wd, b1, b2, eps, step, bc2s float32) {
	for i := range w {
		wi := w[i]
		gi := g[i] + wd*wi
		m[i] = b1*m[i] + (1-b1)*gi
		v[i] = b2*v[i] + (1-b2)*gi*gi
		den := float32(math.Sqrt(float64(v[i])))/bc2s + eps
		w[i] = wi - step*m[i]/den
	}
}

// TestAdamUpdate checks AdamUpdate, with and without the AVX2 kernel,
// against adamRef bit for bit over several steps, on lengths around the
// kernel's 8-element blocks and values spanning tiny, zero and large
// gradients.
func TestAdamUpdate(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 16, 63, 1000} {
		for _, avx := range []bool{false, true} {
			if avx && !hasAVX2Kernel() {
				continue
			}
			rnd := rand.New(rand.NewPCG(uint64(n), 29))
			w := make([]float32, n)
			g := make([]float32, n)
			for i := range w {
				w[i] = float32(rnd.NormFloat64())
			}
			m, v := make([]float32, n), make([]float32, n)
			wr, mr, vr := append([]float32(nil), w...), make([]float32, n), make([]float32, n)
			restore := setAVX2(avx)
			for step := 1; step <= 4; step++ {
				for i := range g {
					switch rnd.IntN(6) {
					case 0:
						g[i] = 0
					case 1:
						g[i] = float32(rnd.NormFloat64() * 1e-30)
					case 2:
						g[i] = float32(rnd.NormFloat64() * 1e6)
					default:
						g[i] = float32(rnd.NormFloat64())
					}
				}
				bc1 := 1 - math.Pow(0.9, float64(step))
				st, bc2s := float32(0.01/bc1), float32(math.Sqrt(1-math.Pow(0.999, float64(step))))
				AdamUpdate(w, g, m, v, 5e-4, 0.9, 0.999, 1e-8, st, bc2s)
				adamRef(wr, g, mr, vr, 5e-4, 0.9, 0.999, 1e-8, st, bc2s)
			}
			restore()
			bits := func(x []float32) []uint32 {
				b := make([]uint32, len(x))
				for i, f := range x {
					b[i] = math.Float32bits(f)
				}
				return b
			}
			assert.Equal(t, bits(wr), bits(w), "n=%d avx=%v: w", n, avx)
			assert.Equal(t, bits(mr), bits(m), "n=%d avx=%v: m", n, avx)
			assert.Equal(t, bits(vr), bits(v), "n=%d avx=%v: v", n, avx)
		}
	}
}

// TestAdamUpdateShort checks that AdamUpdate panics on slices shorter
// than w.
func TestAdamUpdateShort(t *testing.T) {
	w := make([]float32, 4)
	assert.PanicsWithValue(t, "dense: Adam slices shorter than w", func() {
		AdamUpdate(w, w, w, w[:3], 0, 0.9, 0.999, 1e-8, 0.1, 1)
	})
}

// BenchmarkAdamUpdate measures AdamUpdate over 4.3M elements (coauthor-
// physics' SAGE parameters) on one goroutine; GB/s counts the 28 bytes
// an element reads and writes (w, m, v read and written, g read).
func BenchmarkAdamUpdate(b *testing.B) {
	const n = 4_300_000
	w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range w {
		w[i], g[i] = 0.5, 0.25
	}
	for _, avx := range []bool{false, true} {
		if avx && !hasAVX2Kernel() {
			continue
		}
		name := "go"
		if avx {
			name = "avx2"
		}
		b.Run(name, func(b *testing.B) {
			defer setAVX2(avx)()
			for b.Loop() {
				AdamUpdate(w, g, m, v, 5e-4, 0.9, 0.999, 1e-8, 0.01, 0.5)
			}
			b.ReportMetric(28*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
