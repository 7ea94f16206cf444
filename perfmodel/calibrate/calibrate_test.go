package calibrate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/metrics"
	"gnnmpi/perfmodel"
)

// Network on in-process ranks: every rank fits the same model from
// samples of every kind, counted under the calibrate phase; one rank is
// refused.
func TestNetwork(t *testing.T) {
	const p = 2
	nets := make([]*perfmodel.Network, p)
	var seen [p][]perfmodel.Kind
	snaps := make([]collective.Snapshot, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		c = collective.WithStats(c, nil)
		r := c.Rank()
		net, err := Network(c, "test", Options{MaxBytes: 1024, MinTime: time.Millisecond, MinReps: 2,
			Progress: func(k perfmodel.Kind) { seen[r] = append(seen[r], k) }})
		nets[r], snaps[r] = net, collective.SnapshotOf(c)
		return err
	})
	require.NoError(t, err)
	require.Equal(t, nets[0], nets[1])
	require.Equal(t, "test", nets[0].Name)
	for r := range p {
		require.Equal(t, perfmodel.Kinds, seen[r])
		require.Equal(t, []string{metrics.PhaseCalibrate}, snaps[r].Phases())
	}
	for _, k := range perfmodel.Kinds {
		require.Positive(t, nets[0].Links[k].Samples, k)
	}

	err = inproc.Run(1, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
		_, err := Network(c, "one", Options{MaxBytes: 64, MinReps: 1})
		return err
	})
	require.ErrorIs(t, err, ErrOneRank)
}
