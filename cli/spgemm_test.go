package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
)

// runCmd runs command name with args on p in-process ranks and returns rank
// 0's standard output and error (the others may only see the abort).
func runCmd(t *testing.T, p int, name string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	errs := make([]error, p)
	err := inproc.Run(p, inproc.Options{Timeout: time.Minute}, func(c collective.Comm) (err error) {
		defer func() { errs[c.Rank()] = err }()
		cmd := Lookup(name)
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fn := cmd.Flags(fs)
		if err := fs.Parse(args); err != nil {
			return err
		}
		env := NewEnv(collective.WithStats(c, nil), "inproc", name, &out, io.Discard, nil, true)
		env.GPU = testGPU
		return fn(env)
	})
	if errs[0] != nil {
		return out.String(), errs[0]
	}
	return out.String(), err
}

func spgemmJSON(t *testing.T, p int, args ...string) metrics.SpGEMM {
	t.Helper()
	out, err := runCmd(t, p, "spgemm", args...)
	require.NoError(t, err)
	var obj struct {
		SpGEMM metrics.SpGEMM `json:"spgemm"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &obj), out)
	return obj.SpGEMM
}

// Every algorithm at p = 1, 2, 4 and 6 (on rectangular grids where needed)
// verifies against the local product and reports its nnz, sum and checksum,
// for A·A and a rectangular A·B, for the three semirings, with and without
// --rows.
func TestSpGEMMCommand(t *testing.T) {
	dir := t.TempDir()
	adj, err := graph.RMAT(graph.DefaultRMAT(7, 8))
	require.NoError(t, err)
	fa := filepath.Join(dir, "a.mtx")
	require.NoError(t, graph.WriteMatrixMarket(fa, adj))
	// B: 128×50, the columns of A's first 50 rows.
	var rows, cols []int64
	var vals []float64
	for i := range adj.NRows {
		for _, j := range adj.Row(i) {
			if j < 50 {
				rows, cols, vals = append(rows, i), append(cols, j), append(vals, float64(1+(i+j)%3))
			}
		}
	}
	b, err := sparse.FromCOO(adj.NRows, 50, rows, cols, vals)
	require.NoError(t, err)
	fb := filepath.Join(dir, "b.mtx")
	require.NoError(t, graph.WriteMatrixMarket(fb, b))

	for _, sr := range []string{"plus-times", "min-plus", "or-and"} {
		for _, op := range [][]string{{"--square"}, {"--b", fb}, {"--square", "--rows", "40"}} {
			args := append([]string{"--a", fa, "--semiring", sr}, op...)
			want := spgemmJSON(t, 1, append(args, "--algo", "local")...)
			require.NotZero(t, want.NNZC)
			for _, p := range []int{1, 2, 4, 6} {
				for _, algo := range []string{"local", "1d", "1.5d", "2d"} {
					t.Run(fmt.Sprintf("%s/%v/p=%d/%s", sr, op, p, algo), func(t *testing.T) {
						got := spgemmJSON(t, p, append(args, "--algo", algo, "--verify", "--reps", "2")...)
						require.NotNil(t, got.Verified)
						require.True(t, *got.Verified)
						require.Equal(t, want.NNZC, got.NNZC)
						require.Equal(t, want.SumC, got.SumC)
						require.Equal(t, want.Checksum, got.Checksum)
						require.Equal(t, want.Flops, got.Flops)
						require.Len(t, got.Times, 2)
						require.Len(t, got.SentPerRank, p)
						if p > 1 && algo != "local" {
							require.NotZero(t, got.TotalSent)
						}
					})
				}
			}
		}
	}
}

// 1.5d without --c takes the c with the least predicted traffic and
// reports the predictions; --c overrides it.
func TestSpGEMMChooseC(t *testing.T) {
	dir := t.TempDir()
	adj, err := graph.RMAT(graph.DefaultRMAT(7, 8))
	require.NoError(t, err)
	fa := filepath.Join(dir, "a.mtx")
	require.NoError(t, graph.WriteMatrixMarket(fa, adj))

	got := spgemmJSON(t, 4, "--a", fa, "--square", "--algo", "1.5d")
	require.Len(t, got.Predicted, 3) // c = 1, 2, 4
	best := got.Predicted[0]
	for _, v := range got.Predicted {
		if v.BcastBytes+v.ReduceBytes < best.BcastBytes+best.ReduceBytes {
			best = v
		}
	}
	require.Equal(t, best.C, got.C)
	require.Equal(t, []int{4 / got.C, got.C}, got.Grid)

	got = spgemmJSON(t, 4, "--a", fa, "--square", "--algo", "1.5d", "--c", "2")
	require.Equal(t, 2, got.C)
	require.Empty(t, got.Predicted)
}

// --out writes C, which reads back as the local product.
func TestSpGEMMOut(t *testing.T) {
	dir := t.TempDir()
	adj, err := graph.RMAT(graph.DefaultRMAT(6, 4))
	require.NoError(t, err)
	fa, fc := filepath.Join(dir, "a.mtx"), filepath.Join(dir, "c.mtx")
	require.NoError(t, graph.WriteMatrixMarket(fa, adj))
	_, err = runCmd(t, 4, "spgemm", "--a", fa, "--square", "--algo", "2d", "--out", fc)
	require.NoError(t, err)
	got, err := graph.ReadMatrixMarket(fc)
	require.NoError(t, err)
	want, err := sparse.Mul(adj, adj)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// Bad flags and bad input fail on every rank with a message naming the
// problem: the file and line, or the valid replication factors.
func TestSpGEMMErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.mtx")
	require.NoError(t, os.WriteFile(bad, []byte("%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 1\n4 1\n"), 0o644))
	good := filepath.Join(dir, "good.mtx")
	require.NoError(t, os.WriteFile(good, []byte("%%MatrixMarket matrix coordinate pattern general\n3 2 2\n1 1\n3 2\n"), 0o644))
	for _, tc := range []struct {
		p    int
		args []string
		want string
	}{
		{3, []string{"--a", bad, "--square"}, bad + ":4:"},
		{2, []string{"--a", filepath.Join(dir, "none.mtx"), "--square"}, "none.mtx"},
		{2, []string{"--a", good, "--b", good}, "A·B needs A's columns = B's rows"},
		{6, []string{"--a", good, "--b", good, "--algo", "1.5d", "--c", "4"}, "valid c: 1, 2, 3, 6"},
		{6, []string{"--a", good, "--square", "--algo", "2d", "--grid", "2x2"}, "PR·PC = 6"},
		{1, []string{"--a", good}, "exactly one of --b and --square"},
		{1, []string{"--a", good, "--square", "--algo", "3d"}, "unknown algorithm"},
		{1, []string{"--a", good, "--square", "--semiring", "max"}, "unknown semiring"},
	} {
		_, err := runCmd(t, tc.p, "spgemm", tc.args...)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
	}
}
