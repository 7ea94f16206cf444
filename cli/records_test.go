package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// The final objects of info, selftest and fetch keep the keys they had
// as maps before they became metrics records (captured from the binary
// before the change).
func TestFinalRecordKeys(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	run := []string{"backend", "comm", "command", "ranks", "seconds"}
	for _, tc := range []struct {
		name string
		args []string
		want []string // top-level keys besides run's
		sub  string   // a nested object whose keys are checked too
		keys []string
	}{
		{"info", []string{"--data", data}, []string{"dataset"}, "dataset", []string{"path", "name", "nodes", "edges", "features", "feature_format",
			"feature_density", "feature_nnz", "classes", "splits", "min_degree", "max_degree", "mean_degree", "std_degree", "isolated", "self_loops",
			"rows_per_rank", "load_seconds_max", "reciprocity", "symmetrized", "empty_classes", "labelled", "unlabelled"}},
		{"info", []string{"--data", data, "--gpu"}, []string{"dataset", "gpu"}, "", nil},
		{"selftest", nil, []string{"cases", "failed"}, "", nil},
		{"fetch", []string{"--data", data, "--cache", "none", "--cache-frac", "0"}, []string{"final", "points", "config"}, "config", []string{"data", "split",
			"partition", "parts", "fanouts", "batch_size", "replication", "feature_dtype", "epochs", "seed", "features", "nodes", "symmetrize",
			"reciprocity", "feature_format"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCmd(t, 2, tc.name, tc.args...)
			require.NoError(t, err)
			var obj map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
			require.ElementsMatch(t, append(slices.Clone(run), tc.want...), keysOf(obj))
			if tc.sub != "" {
				var sub map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(obj[tc.sub], &sub))
				require.ElementsMatch(t, tc.keys, keysOf(sub))
			}
		})
	}
}
