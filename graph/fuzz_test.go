package graph

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The fuzz targets write their input to a file, read it, and require that
// the reader does not panic and returns either a *ParseError or a result
// that passes Validate.

// requireParseError fails unless err is a *ParseError.
func requireParseError(t *testing.T, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error is %T, not *ParseError: %v", err, err)
	}
}

func FuzzReadEdgeList(f *testing.F) {
	for _, s := range []string{
		"0 1\n1 2\n2 0\n",
		"# Nodes: 4 Edges: 2\n0\t1\n3\t2\n",
		"% c\n\n0 1 0.5\n1 0 -2e3\n",
		"0 1\n1\n",
		"0 -1\n",
		"# Nodes: 2\n0 5\n",
		"0 1 1\n2 3\n",
		"18446744073709551616 0\n",
		"",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir() // reused: a worker runs its inputs one at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "g.txt")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := ReadEdgeList(path)
		if err != nil {
			requireParseError(t, err)
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("invalid result: %v", err)
		}
		if a.NRows != a.NCols {
			t.Fatalf("%d×%d result", a.NRows, a.NCols)
		}
	})
}

func FuzzReadMatrixMarket(f *testing.F) {
	for _, s := range []string{
		"%%MatrixMarket matrix coordinate pattern general\n% c\n2 3 2\n1 2\n2 3\n",
		"%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 0.5\n3 3 -1\n",
		"%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 7\n",
		"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
		"%%MatrixMarket matrix coordinate complex hermitian\n1 1 1\n1 1 1 0\n",
		"%%MatrixMarket matrix coordinate pattern general\n2 2 3\n1 1\n",
		"%%MatrixMarket matrix coordinate pattern general\n2 2 0\n1 1\n",
		"%%MatrixMarket matrix coordinate pattern general\n0 0 0\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "a.mtx")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := ReadMatrixMarket(path)
		if err != nil {
			requireParseError(t, err)
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("invalid result: %v", err)
		}
	})
}

// fuzzOGB writes into dir a dataset of 5 vertices whose table name holds
// data (the other tables being valid), reads it, with Keep selecting the
// even vertices if keepEven, and checks the result.
func fuzzOGB(t *testing.T, dir, table string, data []byte, keepEven bool) {
	files := map[string]string{
		"raw/num-node-list.csv": "5\n",
		"raw/edge.csv":          "0,1\n1,0\n",
		"raw/node-feat.csv":     "1\n2\n3\n4\n5\n",
	}
	files[table] = string(data)
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var opt ReadOptions
	if keepEven {
		opt.Keep = func(g int64) bool { return g%2 == 0 }
	}
	d, err := ReadOGB(dir, opt)
	if err != nil {
		requireParseError(t, err)
		return
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("invalid result: %v", err)
	}
	if d.NumNodes != 5 || d.Feat == nil {
		t.Fatalf("got %d nodes, features %v", d.NumNodes, d.Feat != nil)
	}
}

func FuzzOGBEdges(f *testing.F) {
	for _, s := range []string{
		"0,1\n1,0\n2,3\n3,2\n",
		"4,0\n0,4\n3,1\n",
		"0,1\r\n1,2\r\n",
		"0,5\n",
		"-1,0\n",
		"0;1\n",
		"0,1,2\n",
		"\n",
		"0,1",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, keepEven bool) {
		fuzzOGB(t, dir, "raw/edge.csv", data, keepEven)
	})
}

func FuzzOGBFeatures(f *testing.F) {
	for _, s := range []string{
		"1,0\n0,1\n0.5,2\n-1,3e2\n7,8\n",
		"1\n2\n3\n4\n5\n",
		"1,0\n0,1,1\n0,0\n0,0\n0,0\n",
		"1,,0\n",
		"NaN\n1\n2\n3\n4\n",
		"1e39\n1\n2\n3\n4\n",
		"-0\n+1\n.5\n5.\n0x1p-2\n",
		"1\n2\n3\n4\n5\n6\n",
		"1\n\n3\n4\n5\n",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, keepEven bool) {
		fuzzOGB(t, dir, "raw/node-feat.csv", data, keepEven)
	})
}
