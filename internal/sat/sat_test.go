package sat

import (
	"math"
	"testing"
)

func TestSaturates(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"mul", Mul(3, 7), 21},
		{"mul by zero", Mul(0, math.MaxInt64), 0},
		{"mul overflows", Mul(1<<32, 1<<32), math.MaxInt64},
		{"mul at the limit", Mul(math.MaxInt64, 1), math.MaxInt64},
		{"add", Add(3, 7), 10},
		{"add overflows", Add(math.MaxInt64, 1), math.MaxInt64},
		{"add at the limit", Add(math.MaxInt64-1, 1), math.MaxInt64},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}
