// Package sat is saturating arithmetic on non-negative int64 counts: sizes
// and byte counts that a configuration can make arbitrarily large (a
// model of --hidden 1e8), which must compare as too large rather than wrap
// around to small or negative values.
package sat

import "math"

// Mul returns a·b for a, b ≥ 0, or math.MaxInt64 if it overflows.
func Mul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// Add returns a+b for a, b ≥ 0, or math.MaxInt64 if it overflows.
func Add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
