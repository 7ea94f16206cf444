package spgemm

import "gnnmpi/internal/enum"

// Algo names a product of `gnnmpi spgemm` (BenchOptions.Algo).
type Algo string

// The products Bench runs.
const (
	AlgoLocal Algo = "local" // rank 0 multiplies alone
	Algo1D    Algo = "1d"    // Mul1D
	Algo15D   Algo = "1.5d"  // Mul15D on a Pr×Pc grid, Pc = C replicas
	Algo2D    Algo = "2d"    // Mul2D (SUMMA) on a Pr×Pc grid
)

// Algos lists the products in the order help texts name them.
var Algos = []Algo{AlgoLocal, Algo1D, Algo15D, Algo2D}

// ParseAlgo returns the product named s.
func ParseAlgo(s string) (Algo, error) { return enum.Parse("spgemm", "algorithm", s, Algos...) }

// String returns the product's name.
func (a Algo) String() string { return string(a) }

// Set sets a to the product named s (flag.Value).
func (a *Algo) Set(s string) error { return enum.Set(a, ParseAlgo, s) }

// Semiring names the semiring of a product: the sparse package's
// PlusTimes, MinPlus (pattern entries weigh 1) or OrAnd.
type Semiring string

// The semirings of `gnnmpi spgemm`.
const (
	SemiringPlusTimes Semiring = "plus-times"
	SemiringMinPlus   Semiring = "min-plus"
	SemiringOrAnd     Semiring = "or-and"
)

// Semirings lists the semirings in the order help texts name them.
var Semirings = []Semiring{SemiringPlusTimes, SemiringMinPlus, SemiringOrAnd}

// ParseSemiring returns the semiring named s.
func ParseSemiring(s string) (Semiring, error) {
	return enum.Parse("spgemm", "semiring", s, Semirings...)
}

// String returns the semiring's name.
func (r Semiring) String() string { return string(r) }

// Set sets r to the semiring named s (flag.Value).
func (r *Semiring) Set(s string) error { return enum.Set(r, ParseSemiring, s) }
