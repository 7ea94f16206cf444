package sparse

import "math"

// Semiring is the algebra of a sparse product: C(i,j) = ⊕_k A(i,k) ⊗ B(k,j),
// with Add for ⊕ and Mul for ⊗, after CombBLAS's Semirings.h.
//
// Add must be associative and commutative with identity Zero, and Mul
// associative with identity One; Zero need not annihilate, because the
// products of this package never form a term for an absent entry. Entries of
// a pattern matrix (nil Values) take the value One.
//
// For the semirings of this package (PlusTimes, MinPlus, OrAnd) the
// products run loops specialised to each, with Add and Mul inlined, as fast
// as hand-written ones (see BenchmarkSemiringAxpy). Other semirings work
// too, but Go compiles generic code once per GC shape, so their Add and Mul
// are called through a dictionary: an indirect call per scalar product,
// several times slower.
type Semiring[T Scalar] interface {
	// Zero returns the identity of Add.
	Zero() T
	// One returns the identity of Mul.
	One() T
	// Add returns x ⊕ y.
	Add(x, y T) T
	// Mul returns x ⊗ y.
	Mul(x, y T) T
}

// PlusTimes is the ordinary (+, ×) semiring over T, with Zero 0 and One 1.
// Products round each x×y to T before adding it (no fused multiply-add), so
// results are the same on every platform.
type PlusTimes[T Number] struct{}

// Zero returns 0.
func (PlusTimes[T]) Zero() T { return 0 }

// One returns 1.
func (PlusTimes[T]) One() T { return 1 }

// Add returns x + y.
func (PlusTimes[T]) Add(x, y T) T { return x + y }

// Mul returns x × y.
func (PlusTimes[T]) Mul(x, y T) T { return x * y }

// MinPlus is the tropical (min, +) semiring over T, the algebra of shortest
// paths: Zero is +Inf (no path) and One is 0 (the empty path). Add is the
// built-in min, so a NaN operand gives NaN.
//
// An absent entry stands for +Inf, not 0, and a pattern matrix (nil Values)
// has every entry 0; give explicit weights (1 for hop counts) where that is
// not meant.
type MinPlus[T Float] struct{}

// Zero returns +Inf.
func (MinPlus[T]) Zero() T { return T(math.Inf(1)) }

// One returns 0.
func (MinPlus[T]) One() T { return 0 }

// Add returns min(x, y).
func (MinPlus[T]) Add(x, y T) T { return min(x, y) }

// Mul returns x + y.
func (MinPlus[T]) Mul(x, y T) T { return x + y }

// OrAnd is the Boolean (∨, ∧) semiring, with Zero false and One true:
// C(i,j) is true when some k has A(i,k) and B(k,j) both true. Its products
// hold an entry (possibly false) wherever a term exists, like the other
// semirings; with pattern or all-true inputs every entry is true.
type OrAnd struct{}

// Zero returns false.
func (OrAnd) Zero() bool { return false }

// One returns true.
func (OrAnd) One() bool { return true }

// Add returns x ∨ y.
func (OrAnd) Add(x, y bool) bool { return x || y }

// Mul returns x ∧ y.
func (OrAnd) Mul(x, y bool) bool { return x && y }

// kernel holds the loops of a product that depend on the semiring. The
// semirings of this package implement it with their operations inlined;
// genericKernel adapts any other Semiring. Its methods are called once per
// stored entry of A, so the indirect call is amortised over a row of B.
type kernel[T Scalar] interface {
	Semiring[T]
	// ident returns the value accumulators start from: ident ⊕ x == x for
	// every x, bit for bit for the package's semirings (for floating-point
	// PlusTimes it is -0, since +0 + -0 is +0), and Zero for others.
	ident() T
	// axpy sets y[ind[q]] = y[ind[q]] ⊕ (a ⊗ x[q]) for every q, in order
	// of q. len(x) >= len(ind).
	axpy(y []T, ind []int64, x []T, a T)
	// axpyMark is axpy that also sets mark[ind[q]] = 1.
	axpyMark(y []T, mark []uint8, ind []int64, x []T, a T)
	// scale sets dst[q] = a ⊗ x[q] for every q. len(x) >= len(dst).
	scale(dst, x []T, a T)
}

var (
	_ kernel[float64] = PlusTimes[float64]{}
	_ kernel[float32] = PlusTimes[float32]{}
	_ kernel[float64] = MinPlus[float64]{}
	_ kernel[bool]    = OrAnd{}
)

// kernelOf returns the kernel of sr: sr itself for the semirings of this
// package.
func kernelOf[T Scalar, S Semiring[T]](sr S) kernel[T] {
	if k, ok := any(sr).(kernel[T]); ok {
		return k
	}
	return genericKernel[T, S]{sr}
}

func (PlusTimes[T]) ident() T {
	var z T
	return -z // -0 for floating point, 0 for integers
}

func (PlusTimes[T]) axpy(y []T, ind []int64, x []T, a T) {
	x = x[:len(ind)]
	for q, j := range ind {
		// The conversion rounds the product, forbidding fusion.
		y[j] += T(a * x[q])
	}
}

func (PlusTimes[T]) axpyMark(y []T, mark []uint8, ind []int64, x []T, a T) {
	x = x[:len(ind)]
	for q, j := range ind {
		y[j] += T(a * x[q])
		mark[j] = 1
	}
}

func (PlusTimes[T]) scale(dst, x []T, a T) {
	x = x[:len(dst)]
	for q := range dst {
		dst[q] = a * x[q]
	}
}

func (s MinPlus[T]) ident() T { return s.Zero() }

func (MinPlus[T]) axpy(y []T, ind []int64, x []T, a T) {
	x = x[:len(ind)]
	for q, j := range ind {
		y[j] = min(y[j], T(a+x[q]))
	}
}

func (MinPlus[T]) axpyMark(y []T, mark []uint8, ind []int64, x []T, a T) {
	x = x[:len(ind)]
	for q, j := range ind {
		y[j] = min(y[j], T(a+x[q]))
		mark[j] = 1
	}
}

func (MinPlus[T]) scale(dst, x []T, a T) {
	x = x[:len(dst)]
	for q := range dst {
		dst[q] = a + x[q]
	}
}

func (OrAnd) ident() bool { return false }

func (OrAnd) axpy(y []bool, ind []int64, x []bool, a bool) {
	if !a {
		return // y ∨ false == y
	}
	x = x[:len(ind)]
	for q, j := range ind {
		if x[q] {
			y[j] = true
		}
	}
}

func (OrAnd) axpyMark(y []bool, mark []uint8, ind []int64, x []bool, a bool) {
	if !a {
		for _, j := range ind {
			mark[j] = 1
		}
		return
	}
	x = x[:len(ind)]
	for q, j := range ind {
		y[j] = y[j] || x[q]
		mark[j] = 1
	}
}

func (OrAnd) scale(dst, x []bool, a bool) {
	if !a {
		clear(dst)
		return
	}
	copy(dst, x)
}

// genericKernel is the kernel of a semiring from outside this package.
type genericKernel[T Scalar, S Semiring[T]] struct{ sr S }

func (g genericKernel[T, S]) Zero() T      { return g.sr.Zero() }
func (g genericKernel[T, S]) One() T       { return g.sr.One() }
func (g genericKernel[T, S]) Add(x, y T) T { return g.sr.Add(x, y) }
func (g genericKernel[T, S]) Mul(x, y T) T { return g.sr.Mul(x, y) }
func (g genericKernel[T, S]) ident() T     { return g.sr.Zero() }
func (g genericKernel[T, S]) scale(dst, x []T, a T) {
	x = x[:len(dst)]
	for q := range dst {
		dst[q] = g.sr.Mul(a, x[q])
	}
}

func (g genericKernel[T, S]) axpyMark(y []T, mark []uint8, ind []int64, x []T, a T) {
	for _, j := range ind {
		mark[j] = 1
	}
	g.axpy(y, ind, x, a)
}

func (g genericKernel[T, S]) axpy(y []T, ind []int64, x []T, a T) {
	x = x[:len(ind)]
	for q, j := range ind {
		y[j] = g.sr.Add(y[j], g.sr.Mul(a, x[q]))
	}
}
