package collective_test

import (
	"testing"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// TestUnwrap checks that Unwrap finds the backend's communicator under
// WithStats decorations, including those of split communicators.
func TestUnwrap(t *testing.T) {
	raw := inproc.New(1, inproc.Options{})[0]
	if got := collective.Unwrap(raw); got != collective.Comm(raw) {
		t.Errorf("got: %v want: the undecorated communicator itself", got)
	}
	c := collective.WithStats(collective.WithStats(raw, nil), nil)
	if got := collective.Unwrap(c); got != collective.Comm(raw) {
		t.Errorf("got: %T want: the inproc communicator", got)
	}
	sub, err := c.Split(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := collective.Unwrap(sub).(*inproc.Comm); !ok {
		t.Errorf("got: %T want: *inproc.Comm", collective.Unwrap(sub))
	}
}
