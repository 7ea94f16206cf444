package graph

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// AskOrigIDs maps new ids to original ids from the parts held by other
// ranks, whatever the replication, with repeats and empty run parts.
func TestAskOrigIDs(t *testing.T) {
	// The relabelling of a 10-vertex graph: new id v was vertex orig[v].
	orig := []int64{7, 2, 9, 0, 4, 1, 8, 3, 6, 5}
	for _, tc := range []struct {
		name   string
		bounds []int64 // run parts
		rc     int
	}{
		{"one rank", []int64{0, 10}, 1},
		{"two parts", []int64{0, 4, 10}, 1},
		{"three parts, one empty", []int64{0, 6, 6, 10}, 1},
		{"two parts, replication 2", []int64{0, 3, 10}, 2},
		{"one part, replication 3", []int64{0, 10}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := (len(tc.bounds) - 1) * tc.rc
			err := inproc.Run(p, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
				q := c.Rank() / tc.rc
				lo, hi := tc.bounds[q], tc.bounds[q+1]
				part := &Part{Lo: lo, Hi: hi, OrigIDs: orig[lo:hi]}
				// Every rank asks for a different rotation of all ids, and
				// for its rank id twice.
				var ids []int64
				for k := range int64(10) {
					ids = append(ids, (k+int64(c.Rank()))%10)
				}
				ids = append(ids, int64(c.Rank())%10)
				got, err := part.AskOrigIDs(c, tc.bounds, tc.rc, ids)
				if err != nil {
					return err
				}
				for i, v := range ids {
					if got[i] != orig[v] {
						return fmt.Errorf("rank %d: new id %d: got: %d want: %d", c.Rank(), v, got[i], orig[v])
					}
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
	t.Run("wrong run layout", func(t *testing.T) {
		err := inproc.Run(2, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
			_, err := (&Part{}).AskOrigIDs(c, []int64{0, 4, 10}, 2, nil)
			return err
		})
		require.ErrorContains(t, err, "2 run parts with replication 2 for 2 ranks")
	})
}
