package dense

import "math"

// AdamUpdate applies one Adam update to the weights w in place, with their
// gradients g and first and second moments m and v (updated in place), in
// one pass over the four slices: for each i, with g′ = g[i] + wd·w[i],
//
//	m[i] ← b1·m[i] + (1−b1)·g′,  v[i] ← b2·v[i] + ((1−b2)·g′)·g′,
//	w[i] ← w[i] − (step·m[i]) / (√v[i]/bc2s + eps),
//
// every operation in float32 and rounded in that order (no fused
// multiply-add; √ correctly rounded), so that the AVX2 kernel on amd64
// and the Go loop elsewhere (and for the last len % 8 elements) give the
// same bits. step and bc2s are the step's bias corrections, LR/(1−b1ᵗ) and
// √(1−b2ᵗ). g is only read.
// It will panic if g, m or v is shorter than w.
func AdamUpdate(w, g, m, v []float32, wd, b1, b2, eps, step, bc2s float32) {
	n := len(w)
	if len(g) < n || len(m) < n || len(v) < n {
		panic("dense: Adam slices shorter than w")
	}
	c1, c2 := 1-b1, 1-b2
	k := 0
	if useAVX2 && n >= 8 {
		k = n &^ 7
		coef := [8]float32{wd, b1, c1, b2, c2, bc2s, eps, step}
		adamAVX2(&w[0], &g[0], &m[0], &v[0], k, &coef)
	}
	g, m, v = g[:n], m[:n], v[:n]
	for i := k; i < n; i++ {
		wi := w[i]
		gi := g[i] + wd*wi
		mi := b1*m[i] + c1*gi
		vi := b2*v[i] + c2*gi*gi
		m[i], v[i] = mi, vi
		den := float32(math.Sqrt(float64(vi)))/bc2s + eps
		w[i] = wi - step*mi/den
	}
}
