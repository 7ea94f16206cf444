package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// The bar's time left is the time per step since the first step it saw,
// times the steps left: in an epoch resumed at step 30 (no call for step
// 0) as in a whole one. It used to measure a resumed epoch from the zero
// time and print "-2562047h47m16.854775808s left".
func TestProgressBarTimeLeft(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, then int // steps of the first and the second call
		want        string
	}{
		// 4 s for 40 steps, 30 left: 3 s.
		{"whole epoch", 0, 40, "40/70 minibatches, 3s left"},
		// 4 s for 10 steps, 30 left: 12 s.
		{"resumed at step 30", 30, 40, "40/70 minibatches, 12s left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := inproc.Run(1, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) error {
				clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				b := &progressBar{env: NewEnv(c, "inproc", "train", &stderr, &stderr, nil, false), now: func() time.Time { return clock }}
				b.update(2, tc.first, 70)
				clock = clock.Add(4 * time.Second)
				b.update(2, tc.then, 70)
				return nil
			})
			require.NoError(t, err)
			line := strings.TrimSpace(strings.TrimPrefix(stderr.String(), "\r"))
			require.True(t, strings.HasSuffix(line, tc.want), "bar %q, want it to end in %q", line, tc.want)
			require.True(t, strings.HasPrefix(line, "epoch 2 ["), "bar %q", line)
		})
	}
}
