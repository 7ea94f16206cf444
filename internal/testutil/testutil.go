// Package testutil holds helpers shared by tests: finite-difference gradient
// checks, tolerance comparisons and reading a run's output files.
//
// # Overview
//
// GradCheck compares an analytic gradient with central differences of a
// scalar function of float32 parameters, perturbing the parameters in place
// and restoring them afterwards. Close reports whether two float32 slices
// agree to a relative tolerance. ReadDir reads a directory's files.
// LockedBuffer is an output several goroutines may share. The
// package imports only the standard library, so any package's tests may use
// it.
package testutil

import (
	"bytes"
	"math"
	"sync"
	"testing"
)

// Mismatch is a gradient entry that failed CheckGrad: Got is the analytic
// value, Want the finite difference.
type Mismatch struct {
	Index     int
	Got, Want float64
}

// CheckGrad checks that g is the gradient of f with respect to w and returns
// the entries that disagree, in index order (nil when all pass).
//
// For every i it forms central differences D(h) = (f(w+h) − f(w−h))/(2h)
// along w[i], with the perturbed values rounded to float32 and h taken from
// the values actually stored, for h = eps and eps/2, and combines them by
// Richardson extrapolation, num = (4·D(eps/2) − D(eps))/3, which cancels the
// O(eps²) truncation error; w[i] is restored afterwards. Entry i passes when
//
//	|num − g[i]| ≤ tol · max(|num|, |g[i]|, floor),  floor = 1e-2 · max_k max(|num_k|, |g[k]|),
//
// so tol is a relative tolerance, and entries much smaller than the largest
// one are judged on the scale of the whole gradient (float32 rounding in f
// makes their relative error meaningless).
//
// Piecewise smooth functions (ReLU, LeakyReLU) have kinks that a perturbation
// may cross. When D(eps) and D(eps/2) themselves differ by more than the
// tolerance, the entry is in such a region, and it also passes if g[i] agrees
// with one of three estimates with smaller steps: central differences at
// eps/4 and eps/8 (Richardson extrapolated), for a kink between eps/4 and
// eps, or the forward or backward differences at eps/4 and eps/8 (likewise
// extrapolated, 2·D±(eps/8) − D±(eps/4)), for a kink on the other side. A
// wrong gradient of a smooth f still fails, since its central differences
// agree with each other.
//
// f must be a pure function of w (and whatever else the caller holds
// fixed), ideally accumulated in float64. It will panic if len(w) != len(g).
func CheckGrad(f func() float64, w, g []float32, eps, tol float64) []Mismatch {
	if len(w) != len(g) {
		panic("testutil: len(w) != len(g)")
	}
	num := make([]float64, len(w))
	spread := make([]float64, len(w))
	at := func(i int, h float64) (float64, float64) {
		orig := w[i]
		v := float32(float64(orig) + h)
		w[i] = v
		y := f()
		w[i] = orig
		return y, float64(v) - float64(orig)
	}
	for i := range w {
		diff := func(h float64) float64 {
			fp, hp := at(i, h)
			fm, hm := at(i, -h)
			return (fp - fm) / (hp - hm)
		}
		d1, d2 := diff(eps), diff(eps/2)
		num[i] = (4*d2 - d1) / 3
		spread[i] = math.Abs(d1 - d2)
	}
	scale := 0.0
	for i := range num {
		scale = math.Max(scale, math.Max(math.Abs(num[i]), math.Abs(float64(g[i]))))
	}
	floor := 1e-2 * scale
	within := func(want, got float64) bool {
		return math.Abs(want-got) <= tol*math.Max(floor, math.Max(math.Abs(want), math.Abs(got)))
	}
	var bad []Mismatch
	for i := range num {
		got := float64(g[i])
		if within(num[i], got) {
			continue
		}
		if spread[i] > tol*math.Max(floor, math.Abs(num[i])) && nearKink(f, at, i, eps, got, within) {
			continue
		}
		bad = append(bad, Mismatch{Index: i, Got: got, Want: num[i]})
	}
	return bad
}

// nearKink reports whether got matches one of the small-step estimates of
// the derivative along w[i] that CheckGrad falls back to near a kink.
func nearKink(f func() float64, at func(int, float64) (float64, float64), i int, eps, got float64, within func(want, got float64) bool) bool {
	f0 := f()
	var fp, fm, hp, hm [2]float64
	for k, h := range []float64{eps / 4, eps / 8} {
		fp[k], hp[k] = at(i, h)
		fm[k], hm[k] = at(i, -h)
	}
	central := func(k int) float64 { return (fp[k] - fm[k]) / (hp[k] - hm[k]) }
	forward := func(k int) float64 { return (fp[k] - f0) / hp[k] }
	backward := func(k int) float64 { return (f0 - fm[k]) / -hm[k] }
	return within((4*central(1)-central(0))/3, got) ||
		within(2*forward(1)-forward(0), got) ||
		within(2*backward(1)-backward(0), got)
}

// GradCheck runs CheckGrad and reports each mismatch with t.Errorf, naming
// the gradient by name. It returns whether all entries passed.
func GradCheck(t testing.TB, name string, f func() float64, w, g []float32, eps, tol float64) bool {
	t.Helper()
	bad := CheckGrad(f, w, g, eps, tol)
	for _, m := range bad {
		t.Errorf("%s[%d]: got: %g want: %g (central difference, eps %g)", name, m.Index, m.Got, m.Want, eps)
	}
	return len(bad) == 0
}

// Close reports whether got and want have the same length and every entry
// satisfies |got−want| ≤ tol·max(1, |want|).
func Close(got, want []float32, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		d := math.Abs(float64(got[i]) - float64(want[i]))
		if !(d <= tol*math.Max(1, math.Abs(float64(want[i])))) {
			return false
		}
	}
	return true
}

// LockedBuffer is a bytes.Buffer that several goroutines may write and
// read: in-process ranks writing one output, or a rank left behind by a
// failed job writing while a test reads.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
