package collective_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// RankZero runs its function on rank 0 alone; rank 0's error reaches every
// rank (rank 0 its own, the others ErrAborted), and the broadcast of the
// status is one int32 to each other rank.
func TestRankZero(t *testing.T) {
	errBad := errors.New("bad input")
	for _, tc := range []struct {
		name string
		p    int
		fail bool
	}{
		{"p1", 1, false},
		{"p1-fail", 1, true},
		{"p3", 3, false},
		{"p4-fail", 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := make([]error, tc.p)
			calls := make([]int, tc.p)
			sent := make([]int64, tc.p)
			err := inproc.Run(tc.p, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
				st := collective.NewStats()
				errs[c.Rank()] = collective.RankZero(collective.WithStats(c, st), func() error {
					calls[c.Rank()]++
					if tc.fail {
						return errBad
					}
					return nil
				})
				sent[c.Rank()] = st.Snapshot().Total().SentBytes
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, 1, calls[0])
			for r := 1; r < tc.p; r++ {
				require.Zero(t, calls[r], "rank %d ran fn", r)
			}
			for r := range tc.p {
				switch {
				case !tc.fail:
					require.NoError(t, errs[r], "rank %d", r)
				case r == 0:
					require.Same(t, errBad, errs[r])
				default:
					require.ErrorIs(t, errs[r], collective.ErrAborted, "rank %d", r)
				}
			}
			// Bcast of one int32: (p−1)·4 bytes sent by the root.
			require.Equal(t, int64(4*(tc.p-1)), sent[0])
		})
	}
}
