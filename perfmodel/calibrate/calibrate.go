package calibrate

import (
	"errors"
	"math"
	"sort"
	"time"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/perfmodel"
)

// Options are the settings of the microbenchmark.
type Options struct {
	// MaxBytes is the largest message: the sizes are 16 B, 64 B, …
	// (powers of 4) up to it.
	MaxBytes int64
	// A size is repeated until MinTime has passed (estimated from the
	// slowest rank's warm-up call, at most 1000 times), and at least
	// MinReps times.
	MinTime time.Duration
	MinReps int
	// Progress, if not nil, is called on every rank after each kind.
	Progress func(perfmodel.Kind)
}

// ErrOneRank is returned for a communicator of one rank, which moves
// nothing to fit a network to.
var ErrOneRank = errors.New("needs at least 2 ranks (mpirun -np P, or --ranks P)")

// Network times every kind of call of the network model
// (perfmodel.Kinds) at message sizes 16 B … o.MaxBytes on c and fits the
// model (perfmodel.FitNetwork) named name. A sample's time is the median
// over the repetitions of the slowest rank's time, so every rank returns
// the same model. The traffic counts under metrics.PhaseCalibrate.
//
// Network is collective over c.
func Network(c collective.Comm, name string, o Options) (*perfmodel.Network, error) {
	p := c.Size()
	if p == 1 {
		return nil, ErrOneRank
	}
	defer collective.SetPhase(c, metrics.PhaseCalibrate)()
	var samples []perfmodel.Sample
	for _, k := range perfmodel.Kinds {
		for size := int64(16); size <= o.MaxBytes; size *= 4 {
			call, moved := call(c, k, int(size/4))
			if err := call(); err != nil { // warm-up
				return nil, err
			}
			// Agree on the repetitions from the slowest warm-up.
			t0 := time.Now()
			if err := call(); err != nil {
				return nil, err
			}
			one, err := collective.AllreduceScalar(c, time.Since(t0).Seconds(), collective.Max)
			if err != nil {
				return nil, err
			}
			reps := max(o.MinReps, min(1000, int(math.Ceil(o.MinTime.Seconds()/math.Max(one, 1e-7)))))
			times := make([]float64, reps)
			for i := range times {
				t := time.Now()
				if err := call(); err != nil {
					return nil, err
				}
				times[i] = time.Since(t).Seconds()
			}
			if err := collective.AllreduceSlice(c, times, collective.Max); err != nil {
				return nil, err
			}
			sort.Float64s(times)
			samples = append(samples, perfmodel.Sample{Kind: k, P: p, Bytes: float64(moved), Seconds: times[len(times)/2]})
			if k == perfmodel.Barrier {
				break
			}
		}
		if o.Progress != nil {
			o.Progress(k)
		}
	}
	// Every rank holds the same samples (the times are maxima over ranks).
	return perfmodel.FitNetwork(name, samples)
}

// call returns one call of kind k with n float32 per rank, and the
// bytes it moves on the busiest rank (collective's volume functions).
func call(c collective.Comm, k perfmodel.Kind, n int) (func() error, int64) {
	p, r := c.Size(), c.Rank()
	n = max(n, p)
	switch k {
	case perfmodel.Allreduce:
		x := make([]float32, n)
		s, rv := collective.AllreduceVolume(0, p, n, 4)
		return func() error { return collective.AllreduceSlice(c, x, collective.Sum) }, max(s, rv)
	case perfmodel.Alltoallv:
		per := n / p
		counts := make([]int, p)
		for i := range counts {
			counts[i] = per
		}
		send := make([]float32, per*p)
		s, rv := collective.AlltoallvVolume(0, counts, counts, 4)
		return func() error { _, err := collective.AlltoallvFlat(c, send, counts, counts); return err }, max(s, rv)
	case perfmodel.Allgatherv:
		per := n / p
		counts := make([]int, p)
		for i := range counts {
			counts[i] = per
		}
		x := make([]float32, per)
		s, rv := collective.AllgathervVolume(0, counts, 4)
		return func() error { _, _, err := collective.AllgatherSlice(c, x); return err }, max(s, rv)
	case perfmodel.Bcast:
		x := make([]float32, n)
		s, rv := collective.BcastVolume(0, 0, p, int64(n)*4)
		return func() error { return collective.BcastSlice(c, x, 0) }, max(s, rv)
	case perfmodel.Sendrecv:
		// Pairs (0,1), (2,3), ...: each sends n floats to its partner and
		// receives as many; an odd last rank idles.
		x := make([]float32, n)
		y := make([]float32, n)
		peer := r ^ 1
		return func() error {
			if peer >= p {
				return nil
			}
			if r%2 == 0 {
				if err := c.Send(collective.BufOf(x), peer, 7); err != nil {
					return err
				}
				_, err := c.Recv(collective.BufOf(y), peer, 7)
				return err
			}
			if _, err := c.Recv(collective.BufOf(y), peer, 7); err != nil {
				return err
			}
			return c.Send(collective.BufOf(x), peer, 7)
		}, 2 * int64(n) * 4
	case perfmodel.Barrier:
		return c.Barrier, 0
	}
	panic("calibrate: unknown kind " + string(k))
}
