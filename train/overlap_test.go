package train

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// TestCoresPerRank checks the cores a rank counts: bounded by its
// GOMAXPROCS, its affinity mask and its share of the host, at least 1.
func TestCoresPerRank(t *testing.T) {
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
		assert.Equal(t, tc.want, coresPerRank(tc.procs, tc.affinity, tc.online, tc.local), tc.name)
	}
}

// TestCountCPUList checks the parser of Linux CPU lists.
func TestCountCPUList(t *testing.T) {
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
		n, ok := countCPUList(tc.in)
		assert.Equal(t, tc.isOK, ok, "%q", tc.in)
		if tc.isOK {
			assert.Equal(t, tc.n, n, "%q", tc.in)
		}
	}
}

// TestResolveOverlap checks that the ranks agree: a need of one core
// keeps the overlap on every rank, a need no host meets turns it off on
// every rank, and 0 or an overlap not asked for leaves the settings as
// they are.
func TestResolveOverlap(t *testing.T) {
	const p = 3
	for _, tc := range []struct {
		overlap bool
		cores   int
		want    bool
	}{
		{true, 1, true},
		{true, 1 << 20, false},
		{true, 0, true},
		{false, 1, false},
	} {
		got := make([]bool, p)
		err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
			cfg, _, err := resolveOverlap(c, Config{Overlap: tc.overlap, OverlapCores: tc.cores})
			got[c.Rank()] = cfg.Overlap
			return err
		})
		require.NoError(t, err)
		for r, g := range got {
			assert.Equal(t, tc.want, g, "overlap %t, cores %d, rank %d", tc.overlap, tc.cores, r)
		}
	}
}
