package train

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

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
