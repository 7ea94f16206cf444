package collectivetest

import (
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/metrics"
)

// Outcome is a case's result over all ranks of a communicator.
type Outcome struct {
	Case
	Ran         bool  // the communicator had the case's MinRanks
	FailedRanks int64 // the ranks on which the case failed
}

// Hooks observe Verdict's run on one rank.
type Hooks struct {
	// Before, if not nil, is called before case i of Cases, run or
	// skipped; an error ends the run with it, unwrapped.
	Before func(i int, tc Case) error
	// Failed, if not nil, is told of a case that failed on this rank.
	Failed func(tc Case, err error)
}

// Verdict runs every case that fits c's size, in order, each under the
// phase of its name, and returns the Outcome of every case of Cases,
// the same on every rank. A case whose collective call itself fails
// (IsCommError) ends the run with that error, prefixed by the case's
// name, since the communicator is then broken.
//
// Verdict is collective over c: every rank must call it. Beyond the
// cases, it sends one Allreduce of an int64 per case under
// metrics.PhaseVerdict.
func Verdict(c collective.Comm, h Hooks) ([]Outcome, error) {
	cases := Cases()
	out := make([]Outcome, len(cases))
	failed := make([]int64, len(cases))
	for i, tc := range cases {
		out[i].Case = tc
		if h.Before != nil {
			if err := h.Before(i, tc); err != nil {
				return nil, err
			}
		}
		if c.Size() < tc.MinRanks {
			continue
		}
		out[i].Ran = true
		restore := collective.SetPhase(c, tc.Name)
		err := tc.Fn(c)
		restore()
		if err != nil {
			if IsCommError(err) {
				return nil, fmt.Errorf("%s: %w", tc.Name, err)
			}
			if h.Failed != nil {
				h.Failed(tc, err)
			}
			failed[i] = 1
		}
	}
	restore := collective.SetPhase(c, metrics.PhaseVerdict)
	defer restore()
	if err := collective.AllreduceSlice(c, failed, collective.Sum); err != nil {
		return nil, err
	}
	for i := range out {
		out[i].FailedRanks = failed[i]
	}
	return out, nil
}
