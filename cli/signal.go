package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"gnnmpi/train"
)

// checkpointEvery is --checkpoint-every: N epochs, Nsteps minibatch steps
// (inside epochs too), or a duration such as 10m (time.ParseDuration).
type checkpointEvery struct {
	epochs, steps int
	every         time.Duration
}

func (v *checkpointEvery) String() string {
	switch {
	case v == nil:
		return ""
	case v.steps > 0:
		return fmt.Sprintf("%dsteps", v.steps)
	case v.every > 0:
		return v.every.String()
	}
	return strconv.Itoa(v.epochs)
}

func (v *checkpointEvery) Set(s string) error {
	bad := fmt.Errorf("%q is not N (epochs), Nsteps (minibatch steps) or a duration such as 10m", s)
	switch {
	case strings.HasSuffix(s, "steps"):
		n, err := strconv.Atoi(strings.TrimSuffix(s, "steps"))
		if err != nil || n < 1 {
			return bad
		}
		*v = checkpointEvery{steps: n}
	default:
		if n, err := strconv.Atoi(s); err == nil {
			if n < 1 {
				return bad
			}
			*v = checkpointEvery{epochs: n}
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return bad
		}
		*v = checkpointEvery{every: d}
	}
	return nil
}

// apply sets c's checkpoint cadence: with steps or a duration the epoch
// count is left at its default, which they replace (train.Common).
func (v *checkpointEvery) apply(c *train.Common) {
	if v.epochs > 0 {
		c.CheckpointEvery = v.epochs
	}
	c.CheckpointSteps, c.CheckpointInterval = v.steps, v.every
}

// stopSignals are the signals --checkpoint-on-signal accepts, by name.
var stopSignals = map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2}

// signalList is --checkpoint-on-signal: a comma-separated list of TERM,
// INT, USR1 and USR2 (a SIG prefix allowed), or none.
type signalList []os.Signal

func (l *signalList) String() string {
	if l == nil || len(*l) == 0 {
		return "none"
	}
	var names []string
	for _, s := range *l {
		for n, v := range stopSignals {
			if v == s {
				names = append(names, n)
			}
		}
	}
	return strings.Join(names, ",")
}

func (l *signalList) Set(s string) error {
	*l = nil
	if s == "none" {
		return nil
	}
	for _, n := range strings.Split(s, ",") {
		sig, ok := stopSignals[strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(n)), "SIG")]
		if !ok {
			return fmt.Errorf("%q is not one of TERM, INT, USR1, USR2 (or none)", n)
		}
		*l = append(*l, sig)
	}
	return nil
}

// watchSignals catches sigs for the rest of the process and returns
// train.Hooks.Stop, which reports whether one has arrived, and a function
// that stops catching them (nil Stop and a no-op with no signals). The
// first signal is reported on this rank's standard error; later ones,
// also caught, are only reported and change nothing: the stop, and the
// checkpoint it writes, go on (SIGKILL ends the process at once).
func watchSignals(env *Env, sigs []os.Signal) (func() bool, func()) {
	if len(sigs) == 0 {
		return nil, func() {}
	}
	var got atomic.Bool
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, sigs...)
	go func() {
		for s := range ch {
			if got.Swap(true) {
				fmt.Fprintf(env.Err, "gnnmpi: rank %d: %v again: ignored, the stop and its checkpoint go on\n", env.Comm.Rank(), s)
				continue
			}
			fmt.Fprintf(env.Err, "gnnmpi: rank %d: %v: stopping every rank at the next step boundary\n", env.Comm.Rank(), s)
		}
	}()
	return got.Load, func() { signal.Stop(ch); close(ch) }
}
