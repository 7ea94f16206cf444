package textfile

import (
	"math"
	"strconv"
)

// ParseInt parses b, all of it, as a decimal int64 with an optional sign.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	switch b[0] {
	case '-':
		neg = true
		b = b[1:]
	case '+':
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false
		}
		if v > (math.MaxInt64-d)/10 {
			return 0, false // overflow
		}
		v = v*10 + d
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// ParseFloat32 parses b, all of it, as a finite float32. Plain integers
// take a fast path; anything else goes through strconv.ParseFloat, which
// rounds correctly.
func ParseFloat32(b []byte) (float32, bool) {
	if n := len(b); n > 0 && n <= 18 {
		i := 0
		if b[0] == '-' || b[0] == '+' {
			i = 1
		}
		if i < n {
			var v int64
			for ; i < n; i++ {
				d := b[i] - '0'
				if d > 9 {
					break
				}
				v = v*10 + int64(d)
			}
			if i == n {
				f := float32(v) // one correctly rounded conversion
				if b[0] == '-' {
					f = -f // keeps the sign of "-0"
				}
				return f, true
			}
		}
	}
	f, err := strconv.ParseFloat(string(b), 32)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return float32(f), true
}

// ParseFloat64 parses b, all of it, as a finite float64.
func ParseFloat64(b []byte) (float64, bool) {
	if v, ok := ParseInt(b); ok && v > -1<<53 && v < 1<<53 {
		return float64(v), true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// Quote returns b quoted for an error message, shortened if long.
func Quote(b []byte) string {
	const max = 48
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}

// isSpace reports whether c separates fields in whitespace-separated text.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' }

// Fields splits b at runs of white space into at most len(dst) fields,
// returning how many it found (which may exceed len(dst); extra fields are
// counted but not stored).
func Fields(b []byte, dst [][]byte) int {
	n := 0
	i := 0
	for {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		if i == len(b) {
			return n
		}
		j := i
		for j < len(b) && !isSpace(b[j]) {
			j++
		}
		if n < len(dst) {
			dst[n] = b[i:j]
		}
		n++
		i = j
	}
}
