package collective_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// Agree returns nil everywhere when no rank fails; otherwise the lowest
// failing rank keeps its error and every other rank gets one that names it,
// carries its message and wraps ErrAborted.
func TestAgree(t *testing.T) {
	for _, failing := range [][]int{nil, {2}, {1, 3}} {
		errs := make([]error, 4)
		mine := make([]error, 4)
		for _, r := range failing {
			mine[r] = fmt.Errorf("part %d is damaged", r)
		}
		err := inproc.Run(4, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
			errs[c.Rank()] = collective.Agree(c, mine[c.Rank()])
			return nil
		})
		require.NoError(t, err)
		if failing == nil {
			for r := range 4 {
				require.NoError(t, errs[r])
			}
			continue
		}
		root := failing[0]
		for r := range 4 {
			if r == root {
				require.Same(t, mine[r], errs[r])
				continue
			}
			require.ErrorIs(t, errs[r], collective.ErrAborted, "rank %d", r)
			require.ErrorContains(t, errs[r], fmt.Sprintf("rank %d failed: part %d is damaged", root, root))
			require.False(t, errors.Is(errs[r], mine[r]) && mine[r] != nil, "rank %d reports the lowest failure", r)
		}
	}
}
