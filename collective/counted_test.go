package collective_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// A duplicate (Dup) counts into its parent's Stats under a phase of its
// own: it starts as the parent's, changes independently of it, and is
// shared by the communicators split from the duplicate, as the parent's is
// by the parent's splits. A communicator that does not count has no phase.
func TestDupPhaseLanes(t *testing.T) {
	err := inproc.Run(2, inproc.Options{Timeout: time.Minute}, func(raw collective.Comm) error {
		s := collective.NewStats()
		c := collective.WithStats(raw, s)
		defer collective.SetPhase(c, "parent")()
		d, err := collective.Dup(c)
		if err != nil {
			return err
		}
		assert.Equal(t, "parent", collective.PhaseOf(d), "a duplicate starts with its parent's phase")
		assert.Equal(t, c.Size(), d.Size())
		assert.Equal(t, c.Rank(), d.Rank())
		restore := collective.SetPhase(d, "dup")
		assert.Equal(t, "parent", collective.PhaseOf(c))
		assert.Equal(t, "parent", s.Phase(), "Stats' own phase is the parent's")
		sub, err := d.Split(0, d.Rank())
		if err != nil {
			return err
		}
		assert.Equal(t, "dup", collective.PhaseOf(sub), "splits of the duplicate share its phase")
		psub, err := c.Split(0, c.Rank())
		if err != nil {
			return err
		}
		defer collective.SetPhase(psub, "parent-sub")()
		assert.Equal(t, "parent-sub", collective.PhaseOf(c), "splits of the parent share its phase")
		assert.Equal(t, "dup", collective.PhaseOf(d))

		before := s.Snapshot()
		x := []float64{1, 2, 3}
		if err := collective.AllreduceSlice(sub, x, collective.Sum); err != nil {
			return err
		}
		if err := collective.AllreduceSlice(c, x, collective.Sum); err != nil {
			return err
		}
		delta := s.Snapshot().Sub(before)
		assert.Equal(t, int64(1), delta["dup"]["allreduce"].Calls)
		assert.Equal(t, int64(1), delta["parent-sub"]["allreduce"].Calls)
		restore()
		assert.Equal(t, "parent", collective.PhaseOf(sub), "restored to the phase the duplicate started with")
		assert.Equal(t, "", collective.PhaseOf(raw), "no accounting, no phase")
		return nil
	})
	require.NoError(t, err)
}

// Record counts a call made outside a counted communicator exactly as the
// same call through it, under the phase of the communicator's lane (a
// duplicate's own), and does nothing on a communicator that does not count.
func TestRecordMatchesCall(t *testing.T) {
	err := inproc.Run(3, inproc.Options{Timeout: time.Minute}, func(raw collective.Comm) error {
		called, recorded := collective.NewStats(), collective.NewStats()
		c := collective.WithStats(raw, called)
		r := collective.WithStats(raw, recorded)
		d, err := collective.Dup(r)
		if err != nil {
			return err
		}
		x := make([]float32, 1001)
		restore := collective.SetPhase(c, "grad")
		if err := collective.AllreduceSlice(c, x, collective.Sum); err != nil {
			return err
		}
		restore()
		restore = collective.SetPhase(d, "grad")
		sent, recv := collective.AllreduceVolume(d.Rank(), d.Size(), len(x), 4)
		collective.Record(d, collective.OpAllreduce, sent, recv, time.Millisecond)
		restore()
		want, got := called.Snapshot().WithoutTime(), recorded.Snapshot().WithoutTime()
		assert.Equal(t, want["grad"], got["grad"])
		assert.Equal(t, int64(1), got["grad"]["allreduce"].Calls)
		assert.Positive(t, recorded.Snapshot()["grad"]["allreduce"].SentBytes)
		collective.Record(raw, collective.OpAllreduce, sent, recv, time.Millisecond) // not counted: no effect
		assert.Equal(t, got, recorded.Snapshot().WithoutTime())
		return nil
	})
	require.NoError(t, err)
}
