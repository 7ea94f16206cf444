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

func TestGridDims(t *testing.T) {
	for _, tc := range []struct{ p, pr, pc int }{
		{1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {4, 2, 2}, {6, 2, 3}, {8, 2, 4},
		{9, 3, 3}, {12, 3, 4}, {16, 4, 4}, {7, 1, 7}, {18, 3, 6},
	} {
		pr, pc := collective.GridDims(tc.p)
		require.Equal(t, [2]int{tc.pr, tc.pc}, [2]int{pr, pc}, "p=%d", tc.p)
	}
}

// Every rank finds itself at (r/pc, r%pc); the row communicator holds the
// row's ranks ranked by column and the column communicator the column's
// ranks ranked by row, which an allgather of world ranks shows.
func TestGrid(t *testing.T) {
	for _, dims := range [][2]int{{1, 1}, {1, 3}, {3, 1}, {2, 2}, {2, 3}, {3, 2}, {3, 3}} {
		pr, pc := dims[0], dims[1]
		t.Run(fmt.Sprintf("%dx%d", pr, pc), func(t *testing.T) {
			err := inproc.Run(pr*pc, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
				g, err := collective.NewGrid(c, pr, pc)
				if err != nil {
					return err
				}
				r := c.Rank()
				if g.Row != r/pc || g.Col != r%pc || g.RowComm.Rank() != g.Col || g.ColComm.Rank() != g.Row ||
					g.RowComm.Size() != pc || g.ColComm.Size() != pr {
					return fmt.Errorf("rank %d: at (%d,%d), row comm %d/%d, col comm %d/%d", r, g.Row, g.Col,
						g.RowComm.Rank(), g.RowComm.Size(), g.ColComm.Rank(), g.ColComm.Size())
				}
				row, _, err := collective.AllgatherSlice(g.RowComm, []int64{int64(r)})
				if err != nil {
					return err
				}
				for j, w := range row {
					if w != int64(g.Row*pc+j) {
						return fmt.Errorf("rank %d: row members %v", r, row)
					}
				}
				col, _, err := collective.AllgatherSlice(g.ColComm, []int64{int64(r)})
				if err != nil {
					return err
				}
				for i, w := range col {
					if w != int64(i*pc+g.Col) {
						return fmt.Errorf("rank %d: column members %v", r, col)
					}
				}
				return g.Free()
			})
			require.NoError(t, err)
		})
	}
}

func TestGridBadDims(t *testing.T) {
	err := inproc.Run(6, inproc.Options{Timeout: 10 * time.Second}, func(c collective.Comm) error {
		_, err := collective.NewGrid(c, 2, 2)
		if !errors.Is(err, collective.ErrGrid) {
			return fmt.Errorf("got: %v want: ErrGrid", err)
		}
		return nil
	})
	require.NoError(t, err)
}
