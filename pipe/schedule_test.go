package pipe

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// event is a computation in a simulated run: which stage ran which step at
// which logical time (computations take one unit, transfers none).
type event struct {
	stage int
	step  Step
	time  int
}

// simulate runs a schedule with synchronous sends: a Send completes only
// together with the matching Recv posted by its peer (same MB, the
// complementary kind). It returns the computations in the order they ran, or
// an error naming the blocked steps when no stage can move. Logical time:
// a computation starts when its stage is free and its inputs have arrived.
func simulate(sched [][]Step) ([]event, error) {
	S := len(sched)
	pc := make([]int, S)
	clock := make([]int, S)
	var out []event
	match := map[Kind]Kind{SendAct: RecvAct, SendGrad: RecvGrad}
	for {
		progress, done := false, true
		for s := range S {
			if pc[s] >= len(sched[s]) {
				continue
			}
			done = false
			st := sched[s][pc[s]]
			switch st.Kind {
			case Forward, Backward:
				out = append(out, event{s, st, clock[s]})
				clock[s]++
				pc[s]++
				progress = true
			case SendAct, SendGrad:
				q := st.Peer
				if q < 0 || q >= S || pc[q] >= len(sched[q]) {
					return out, fmt.Errorf("stage %d: %v to a finished or missing stage", s, st)
				}
				peer := sched[q][pc[q]]
				if peer.Kind == match[st.Kind] && peer.MB == st.MB && peer.Peer == s {
					// The data is ready when the sender has computed it;
					// the receiver waits for it.
					clock[q] = max(clock[q], clock[s])
					pc[s]++
					pc[q]++
					progress = true
				}
			case RecvAct, RecvGrad:
				// Completed by the sender.
			default:
				return out, fmt.Errorf("stage %d: unknown step %v", s, st)
			}
		}
		if done {
			return out, nil
		}
		if !progress {
			var blocked []string
			for s := range S {
				if pc[s] < len(sched[s]) {
					blocked = append(blocked, fmt.Sprintf("stage %d at %v", s, sched[s][pc[s]]))
				}
			}
			return out, fmt.Errorf("deadlock: %v", blocked)
		}
	}
}

// checkOrder checks the dependencies of a GPipe epoch on the simulated
// computations: every stage computes every chunk forward and backward once;
// a chunk's forward at stage s follows its forward at s−1; its backward at s
// follows its backward at s+1 and its own forward; backwards run in the
// reverse chunk order; and each stage's forwards come in chunk order.
func checkOrder(t tb, evs []event, S, N int) {
	t.Helper()
	at := map[[3]int]int{} // (kind, stage, mb) → index in evs
	for i, e := range evs {
		key := [3]int{int(e.step.Kind), e.stage, e.step.MB}
		_, dup := at[key]
		require.False(t, dup, "%v at stage %d twice", e.step, e.stage)
		at[key] = i
	}
	require.Len(t, at, 2*S*N)
	for s := range S {
		for mb := range N {
			f, okF := at[[3]int{int(Forward), s, mb}]
			b, okB := at[[3]int{int(Backward), s, mb}]
			require.True(t, okF && okB, "stage %d chunk %d", s, mb)
			assert.Less(t, f, b)
			if s > 0 {
				assert.Less(t, at[[3]int{int(Forward), s - 1, mb}], f, "forward of %d at %d before %d", mb, s, s-1)
				assert.Less(t, evs[at[[3]int{int(Forward), s - 1, mb}]].time, evs[f].time)
			}
			if s < S-1 {
				assert.Less(t, at[[3]int{int(Backward), s + 1, mb}], b)
				assert.Less(t, evs[at[[3]int{int(Backward), s + 1, mb}]].time, evs[b].time)
			}
			if mb > 0 {
				assert.Less(t, at[[3]int{int(Forward), s, mb - 1}], f, "forwards in chunk order")
				assert.Greater(t, at[[3]int{int(Backward), s, mb - 1}], b, "backwards in reverse order")
			}
		}
	}
}

func TestScheduleCompletesInOrder(t *testing.T) {
	for _, S := range []int{1, 2, 3, 4, 8} {
		for _, N := range []int{1, 2, 3, 5, 8, 16} {
			t.Run(fmt.Sprintf("S%d_N%d", S, N), func(t *testing.T) {
				sched, err := Schedule(S, N)
				require.NoError(t, err)
				evs, err := simulate(sched)
				require.NoError(t, err)
				checkOrder(t, evs, S, N)
				// Transfers per stage: one per chunk and direction to each
				// neighbour.
				for s, steps := range sched {
					n := 0
					for _, st := range steps {
						if st.Peer >= 0 {
							n++
							assert.Equal(t, 1, abs(st.Peer-s), "transfers go to a neighbour")
						}
					}
					want := 0
					if s > 0 {
						want += 2 * N
					}
					if s < S-1 {
						want += 2 * N
					}
					assert.Equal(t, want, n, "stage %d", s)
				}
				// With free transfers the epoch takes the pipeline's rounds:
				// fill, steady state and drain, forward and backward.
				span := 0
				for _, e := range evs {
					span = max(span, e.time+1)
				}
				assert.Equal(t, Rounds(S, N), span)
			})
		}
	}
}

// The simulator catches a schedule that deadlocks under synchronous sends
// and one that computes out of order, so the checks above are not vacuous.
func TestSimulatorCatchesBadSchedules(t *testing.T) {
	sched, err := Schedule(3, 4)
	require.NoError(t, err)

	// Stage 1 waits for a gradient before sending its first activation: the
	// last stage never gets its input, so nothing moves.
	bad := clone(sched)
	i := slices.Index(bad[1], Step{SendAct, 0, 2})
	j := slices.Index(bad[1], Step{RecvGrad, 3, 2})
	bad[1][i], bad[1][j] = bad[1][j], bad[1][i]
	_, err = simulate(bad)
	assert.ErrorContains(t, err, "deadlock")

	// Stage 2 receives chunk 1 before chunk 0 while stage 1 sends in order.
	bad = clone(sched)
	i = slices.Index(bad[2], Step{RecvAct, 0, 1})
	j = slices.Index(bad[2], Step{RecvAct, 1, 1})
	bad[2][i], bad[2][j] = bad[2][j], bad[2][i]
	_, err = simulate(bad)
	assert.ErrorContains(t, err, "deadlock")

	// Backwards in forward order complete but break the order check.
	bad = clone(sched)
	for s := range bad {
		var fwd, bwd []Step
		for _, st := range bad[s] {
			if st.Kind == Forward || st.Kind == SendAct || st.Kind == RecvAct {
				fwd = append(fwd, st)
			} else {
				bwd = append(bwd, st)
			}
		}
		// Reverse the backward part chunk by chunk.
		per := len(bwd) / 4
		var rev []Step
		for c := 3; c >= 0; c-- {
			rev = append(rev, bwd[c*per:(c+1)*per]...)
		}
		bad[s] = append(fwd, rev...)
	}
	evs, err := simulate(bad)
	require.NoError(t, err)
	ft := &fakeT{}
	func() {
		defer func() { _ = recover() }() // FailNow
		checkOrder(ft, evs, 3, 4)
	}()
	assert.True(t, ft.failed, "forward-order backwards must fail the order check")
}

// tb is the part of testing.TB that checkOrder uses.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	FailNow()
}

// fakeT records a failure instead of failing the test.
type fakeT struct{ failed bool }

func (f *fakeT) Helper()               {}
func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) FailNow()              { f.failed = true; panic("FailNow") }

func TestScheduleErrors(t *testing.T) {
	_, err := Schedule(0, 3)
	assert.Error(t, err)
	_, err = Schedule(2, 0)
	assert.Error(t, err)
}

func clone(s [][]Step) [][]Step {
	out := make([][]Step, len(s))
	for i := range s {
		out[i] = slices.Clone(s[i])
	}
	return out
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
