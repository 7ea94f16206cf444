package cores

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPerRank checks the cores a rank counts: bounded by its
// GOMAXPROCS, its affinity mask and its share of the host, at least 1.
func TestPerRank(t *testing.T) {
	for _, tc := range []struct {
		name                           string
		procs, affinity, online, local int
		want                           int
	}{
		{"one rank, whole host", 16, 16, 16, 1, 16},
		{"unbound ranks share the host", 16, 16, 16, 8, 2},
		{"bound to two cores each", 2, 2, 16, 8, 2},
		{"bound to one core each", 1, 1, 16, 8, 1},
		{"GOMAXPROCS lower", 1, 16, 16, 2, 1},
		{"more ranks than cores", 2, 2, 2, 4, 1},
		{"two ranks on two cores", 2, 2, 2, 2, 1},
		{"no local count", 4, 4, 4, 0, 4},
	} {
		assert.Equal(t, tc.want, PerRank(tc.procs, tc.affinity, tc.online, tc.local), tc.name)
	}
}

// TestCountList checks the parser of Linux CPU lists.
func TestCountList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		isOK bool
	}{
		{"0", 1, true},
		{"0-3", 4, true},
		{"0-3,6,8-9", 7, true},
		{"", 0, false},
		{"3-1", 0, false},
		{"a-b", 0, false},
		{"-1", 0, false},
		{"0-", 0, false},
	} {
		n, ok := CountList(tc.in)
		assert.Equal(t, tc.isOK, ok, "%q", tc.in)
		if tc.isOK {
			assert.Equal(t, tc.n, n, "%q", tc.in)
		}
	}
}

// TestMine checks that this process counts at least one core and no more
// than its GOMAXPROCS.
func TestMine(t *testing.T) {
	for _, local := range []int{0, 1, 2, 1 << 20} {
		n := Mine(local)
		assert.GreaterOrEqual(t, n, 1, "local %d", local)
		assert.LessOrEqual(t, n, max(runtime.GOMAXPROCS(0), 1), "local %d", local)
	}
	assert.GreaterOrEqual(t, Online(), 1)
}
