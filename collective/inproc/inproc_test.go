package inproc_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/collectivetest"
	"gnnmpi/collective/inproc"
)

var opts = inproc.Options{Timeout: 30 * time.Second}

func TestConformance(t *testing.T) {
	for _, p := range []int{1, 2, 3, 4, 9} {
		for _, tc := range collectivetest.Cases() {
			if p < tc.MinRanks {
				continue
			}
			t.Run(fmt.Sprintf("p=%d/%s", p, tc.Name), func(t *testing.T) {
				err := inproc.Run(p, opts, func(c collective.Comm) error {
					return tc.Fn(collective.WithStats(c, nil))
				})
				require.NoError(t, err)
			})
		}
	}
}

// The whole suite through Run, as `gnnmpi selftest` does, with the per-rank
// byte counts of two runs identical (accounting is deterministic).
func TestSuiteCountsDeterministic(t *testing.T) {
	const p = 4
	run := func() []collective.Snapshot {
		snaps := make([]collective.Snapshot, p)
		err := inproc.Run(p, opts, func(c collective.Comm) error {
			s := collective.NewStats()
			res, err := collectivetest.Run(collective.WithStats(c, s))
			if err != nil {
				return err
			}
			for name, e := range res {
				if e != nil {
					return fmt.Errorf("%s: %w", name, e)
				}
			}
			snaps[c.Rank()] = s.Snapshot().WithoutTime()
			return nil
		})
		require.NoError(t, err)
		return snaps
	}
	a, b := run(), run()
	require.Equal(t, a, b)
	require.NotZero(t, a[1].Total().SentBytes)
}

func TestDeadlockFailsInsteadOfHanging(t *testing.T) {
	start := time.Now()
	err := inproc.Run(2, inproc.Options{Timeout: 200 * time.Millisecond}, func(c collective.Comm) error {
		// Both ranks receive first: a deadlock.
		buf := make([]float32, 1)
		_, err := c.Recv(collective.BufOf(buf), 1-c.Rank(), 0)
		return err
	})
	require.ErrorIs(t, err, inproc.ErrDeadlock)
	require.Contains(t, err.Error(), "Recv from")
	require.Less(t, time.Since(start), 5*time.Second)
}

// A rank stuck outside any call (here: forever) does not keep Run waiting:
// the others' waits time out, naming the call and each rank's context, and
// Run returns once the grace has passed, saying which rank it left behind.
func TestRunLeavesStuckRankBehind(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	opt := inproc.Options{
		Timeout:  200 * time.Millisecond,
		Grace:    300 * time.Millisecond,
		Describe: func(r int) string { return fmt.Sprintf("phase p%d", r) },
	}
	res := make(chan error, 1)
	start := time.Now()
	go func() {
		res <- inproc.Run(4, opt, func(c collective.Comm) error {
			if c.Rank() == 2 {
				<-release
				return nil
			}
			return c.Barrier()
		})
	}()
	select {
	case err := <-res:
		require.ErrorIs(t, err, inproc.ErrDeadlock)
		for _, want := range []string{"barrier #0 on comm 0 blocked for 200ms", "past the timeout 200ms; phase p", "rank 2: running (phase p2)", "rank 2 still running 300ms after the job failed"} {
			require.Contains(t, err.Error(), want)
		}
		require.Less(t, time.Since(start), 5*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("Run still waits for the stuck rank 10 s after the timeout")
	}
}

// Run reports the cause, not the error of a rank that only learnt of it
// (one wrapping collective.ErrAborted), even when that one came first.
func TestRunReportsCauseBeforeSecondaryError(t *testing.T) {
	cause := errors.New("cannot read input")
	err := inproc.Run(3, opts, func(c collective.Comm) error {
		if c.Rank() == 0 {
			time.Sleep(50 * time.Millisecond)
			return cause
		}
		return fmt.Errorf("rank 0 failed (%w)", collective.ErrAborted)
	})
	require.ErrorIs(t, err, cause)
	require.Equal(t, "rank 0: cannot read input", err.Error())
}

func TestSynchronousSendDeadlocks(t *testing.T) {
	// Both ranks send first. MPI may buffer small messages, but it need not:
	// the in-process backend reports this unsafe pattern.
	err := inproc.Run(2, inproc.Options{Timeout: 200 * time.Millisecond}, func(c collective.Comm) error {
		if err := c.Send(collective.BufOf([]int64{1}), 1-c.Rank(), 0); err != nil {
			return err
		}
		_, err := c.Recv(collective.BufOf(make([]int64, 1)), 1-c.Rank(), 0)
		return err
	})
	require.ErrorIs(t, err, inproc.ErrDeadlock)
}

func TestMismatchedCollectives(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(c collective.Comm) error
		want string
	}{
		{"different ops", func(c collective.Comm) error {
			if c.Rank() == 0 {
				return c.Barrier()
			}
			return c.Bcast(collective.BufOf(make([]byte, 1)), 0)
		}, "collective mismatch"},
		{"different roots", func(c collective.Comm) error {
			return c.Bcast(collective.BufOf(make([]byte, 1)), c.Rank())
		}, "root"},
		{"different lengths", func(c collective.Comm) error {
			x := make([]float64, 1+c.Rank())
			return c.Allreduce(collective.BufOf(x), collective.BufOf(x), collective.Sum)
		}, "rank 0 has 1×float64, rank 1 has 2×float64"},
		{"inconsistent alltoallv counts", func(c collective.Comm) error {
			s := make([]int32, 2)
			return c.Alltoallv(collective.BufOf(s), []int{1, 1}, collective.BufOf(make([]int32, 1)), []int{1, 0})
		}, "which expects 0"},
		{"wrong allgatherv size", func(c collective.Comm) error {
			return c.Allgatherv(collective.BufOf(make([]int64, 2)), collective.BufOf(make([]int64, 2)), []int{1, 1})
		}, "want 1 and 2"},
		{"truncated recv", func(c collective.Comm) error {
			if c.Rank() == 0 {
				return c.Send(collective.BufOf(make([]int64, 3)), 1, 0)
			}
			_, err := c.Recv(collective.BufOf(make([]int64, 2)), 0, 0)
			return err
		}, "truncated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := inproc.Run(2, inproc.Options{Timeout: 5 * time.Second}, tc.fn)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotErrorIs(t, err, inproc.ErrDeadlock)
		})
	}
}

var errInjected = errors.New("injected fault")

func TestFaultInjectionAbortsAllRanks(t *testing.T) {
	start := time.Now()
	err := inproc.Run(4, inproc.Options{
		Timeout: 10 * time.Second,
		Hook: func(ev inproc.Event) error {
			if ev.WorldRank == 2 && ev.Op == collective.OpAllreduce && ev.Seq == 5 {
				return errInjected
			}
			return nil
		},
	}, func(c collective.Comm) error {
		x := make([]float64, 8)
		for i := 0; i < 100; i++ {
			if err := collective.AllreduceSlice(c, x, collective.Sum); err != nil {
				return err
			}
		}
		return nil
	})
	require.ErrorIs(t, err, errInjected)
	require.Contains(t, err.Error(), "rank 2")
	require.Less(t, time.Since(start), 5*time.Second, "the other ranks must not wait for the deadline")
}

func TestHookDelay(t *testing.T) {
	var delayed time.Duration
	err := inproc.Run(2, inproc.Options{
		Timeout: 5 * time.Second,
		Hook: func(ev inproc.Event) error {
			if ev.WorldRank == 1 {
				time.Sleep(20 * time.Millisecond)
			}
			return nil
		},
	}, func(c collective.Comm) error {
		t0 := time.Now()
		err := c.Barrier()
		if c.Rank() == 0 {
			delayed = time.Since(t0)
		}
		return err
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, delayed, 20*time.Millisecond, "rank 0 leaves the barrier only after the delayed rank enters")
}

func TestPanicAbortsAllRanks(t *testing.T) {
	err := inproc.Run(3, opts, func(c collective.Comm) error {
		if c.Rank() == 1 {
			panic("boom")
		}
		return c.Barrier()
	})
	require.Error(t, err)
	require.Contains(t, err.Error(), "rank 1: panic: boom")
}

func TestAbort(t *testing.T) {
	err := inproc.Run(2, opts, func(c collective.Comm) error {
		if c.Rank() == 0 {
			collective.Abort(c, 3)
			return nil
		}
		return c.Barrier()
	})
	require.ErrorContains(t, err, "Abort(3)")
}
