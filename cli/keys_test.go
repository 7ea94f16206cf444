package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The final JSON objects of sample, spgemm and predict --calibrate keep
// the keys they had as maps before their typed records (metrics.SampleFinal,
// SpGEMMFinal, Calibration): the keys every command reports, then the
// command's own.
func TestFinalKeys(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "data", "cora")
	mtx := filepath.Join(dir, "a.mtx")
	require.NoError(t, os.WriteFile(mtx, []byte("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1\n2 3 2\n3 1 3\n"), 0o644))
	run := []string{"backend", "comm", "command", "ranks", "seconds"}
	for _, tc := range []struct {
		name   string
		args   []string
		own    string   // the key of the command's nested object, "" for none
		keys   []string // the command's own keys (of own when set)
		nested []string // the keys of own's object
	}{
		{"sample", []string{"sample", "--data", data, "--batch-size", "64", "--max-batches", "2"}, "sample", nil,
			[]string{"batch_size", "bulk", "c", "edges", "edges_per_s", "fanouts", "minibatches", "minibatches_per_s",
				"peak_rss_bytes", "sampler", "seconds", "topology", "vertices", "bytes"}},
		{"spgemm", []string{"spgemm", "--a", mtx, "--square", "--algo", "2d", "--verify"}, "spgemm", nil,
			[]string{"algo", "semiring", "threads", "grid", "staged", "a", "b", "m", "k", "n", "nnz_a", "nnz_b", "nnz_c",
				"flops", "seconds", "min_seconds", "times", "mflops", "sum_c", "checksum", "verified", "load_seconds",
				"sent_bytes_per_rank", "recv_bytes_per_rank", "max_sent_bytes", "max_recv_bytes", "total_sent_bytes"}},
		{"calibrate", []string{"predict", "--calibrate", "--out", filepath.Join(dir, "net.json"), "--max-bytes", "64", "--min-time", "1ms", "--min-reps", "1"},
			"", []string{"network", "out"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCmd(t, 2, tc.args[0], tc.args[1:]...)
			require.NoError(t, err)
			var obj map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
			want := append(slices.Clone(run), tc.keys...)
			if tc.own != "" {
				want = append(want, tc.own)
				var nested map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(obj[tc.own], &nested))
				require.ElementsMatch(t, tc.nested, keysOf(nested))
			}
			require.ElementsMatch(t, want, keysOf(obj))
		})
	}
}

func keysOf(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
