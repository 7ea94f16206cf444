package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
)

// runMetrics runs command name on p in-process ranks and returns the
// JSONL metrics it writes.
func runMetrics(t *testing.T, p int, name string, args ...string) []byte {
	t.Helper()
	var jsonl bytes.Buffer
	errs := make([]error, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) (err error) {
		defer func() { errs[c.Rank()] = err }()
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fn := Lookup(name).Flags(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		return fn(NewEnv(collective.WithStats(c, nil), "inproc", name, io.Discard, io.Discard, &jsonl, false))
	})
	require.NoError(t, errs[0])
	require.NoError(t, err)
	return jsonl.Bytes()
}

// decodeJSONL returns the records of a JSONL file.
func decodeJSONL(t *testing.T, b []byte) []any {
	t.Helper()
	var recs []any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var v any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), sc.Text())
		recs = append(recs, v)
	}
	require.NoError(t, sc.Err())
	return recs
}

// flatten returns every key path of v ("config/model/Kind",
// "comm/per_rank/1/grad/allreduce/calls") with its value, the leaves only.
func flatten(v any, path string, out map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			out[path] = x
		}
		for k, e := range x {
			flatten(e, path+"/"+k, out)
		}
	case []any:
		if len(x) == 0 {
			out[path] = x
		}
		for i, e := range x {
			flatten(e, path+"/"+strconv.Itoa(i), out)
		}
	default:
		out[path] = v
	}
}

// measuredKey reports whether a key path ends in a time, rate or memory
// measurement (bench/golden's rule, and data_path's GB/s) or in a key that
// depends on where the test runs: the data path and the BLAS (the binary
// links OpenBLAS, the tests use gonum's pure Go, whose sums round
// differently: the losses agree to lossTol).
func measuredKey(path string) bool {
	for _, k := range strings.Split(path, "/") {
		if strings.HasSuffix(k, "_s") || strings.HasSuffix(k, "seconds") || strings.HasSuffix(k, "_gbps") || k == "peak_rss_bytes" || k == "peak_anon_bytes" || k == "peak_live_heap_bytes" {
			return true
		}
	}
	return path == "/config/data" || path == "/config/blas"
}

// The metrics file of train keeps its format: every record has exactly
// the keys, at every level, of the file the binary from before package
// metrics wrote (cli/testdata/*.golden.jsonl, from
// `gnnmpi --ranks 2 train --data data/cora ARGS --metrics FILE`), and the
// values of every key that measures neither time nor memory.
func TestTrainMetricsGolden(t *testing.T) {
	data := filepath.Join("..", "data", "cora")
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"train_sage.golden.jsonl", []string{"--model", "sage", "--epochs", "2"}},
		{"train_pipe.golden.jsonl", []string{"--mode", "pipe", "--model", "resgcn", "--layers", "4", "--hidden", "16", "--epochs", "2"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join("testdata", tc.golden))
			require.NoError(t, err)
			got := runMetrics(t, 2, "train", append([]string{"--data", data}, tc.args...)...)
			wr, gr := decodeJSONL(t, want), decodeJSONL(t, got)
			require.Len(t, gr, len(wr))
			for i := range wr {
				w, g := map[string]any{}, map[string]any{}
				flatten(wr[i], "", w)
				flatten(gr[i], "", g)
				require.Equal(t, sortedKeys(w), sortedKeys(g), "record %d: key paths", i)
				var diff []string
				for k, wv := range w {
					if k == "/loss" || k == "/val_loss" {
						if wv != nil {
							require.InEpsilon(t, wv, g[k], lossTol, "record %d: %s", i, k)
						} else {
							require.Nil(t, g[k], "record %d: %s", i, k)
						}
						continue
					}
					if !measuredKey(k) && !equalJSON(wv, g[k]) {
						diff = append(diff, k)
					}
				}
				sort.Strings(diff)
				require.Empty(t, diff, "record %d: values", i)
			}
		})
	}
}

// lossTol is the relative tolerance of the losses between OpenBLAS and
// gonum's pure-Go BLAS.
const lossTol = 1e-5

// equalJSON reports whether a and b marshal to the same JSON.
func equalJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
