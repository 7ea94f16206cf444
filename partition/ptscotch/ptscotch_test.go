package ptscotch

import (
	"errors"
	"testing"
)

// TestPartBadInput checks the arguments Part rejects before any
// communication (so without an MPI communicator): each error wraps
// ErrInput. PT-Scotch itself runs under mpirun in cli/mpitest
// (TestPartitionPTScotch).
func TestPartBadInput(t *testing.T) {
	ring := []int64{0, 2, 4, 6}
	adj := []int64{1, 2, 0, 2, 0, 1}
	for _, tc := range []struct {
		name      string
		xadj, adj []int64
		parts     int
		opt       Options
	}{
		{"empty xadj", nil, nil, 2, Options{}},
		{"xadj end", []int64{0, 2, 4, 5}, adj, 2, Options{}},
		{"xadj order", []int64{0, 4, 2, 6}, adj, 2, Options{}},
		{"negative vertex", ring, []int64{1, 2, 0, -2, 0, 1}, 2, Options{}},
		{"parts", ring, adj, 0, Options{}},
		{"imbalance", ring, adj, 2, Options{Imbalance: 1}},
		{"negative imbalance", ring, adj, 2, Options{Imbalance: -0.1}},
		{"strategy", ring, adj, 2, Options{Strategy: Scalability + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Part(0, tc.xadj, tc.adj, tc.parts, tc.opt, false)
			if !errors.Is(err, ErrInput) {
				t.Errorf("got: %v want: an error wrapping ErrInput", err)
			}
		})
	}
}

func TestMaxNum(t *testing.T) {
	if Available && MaxNum != 1<<31-1 && MaxNum != 1<<63-1 {
		t.Errorf("got: MaxNum %d want: 2³¹−1 or 2⁶³−1", MaxNum)
	}
}

// TestUnavailable checks that a build without PT-Scotch (tags nompi or
// mpich) says why on valid input, and that a build with it has no reason.
func TestUnavailable(t *testing.T) {
	if Available {
		if Unavailable != nil {
			t.Errorf("got: Unavailable %v want: nil where PT-Scotch is linked", Unavailable)
		}
		return
	}
	_, err := Part(0, []int64{0, 1, 2}, []int64{1, 0}, 2, Options{}, false)
	if Unavailable == nil || !errors.Is(err, Unavailable) {
		t.Errorf("got: %v want: an error wrapping Unavailable (%v)", err, Unavailable)
	}
}
