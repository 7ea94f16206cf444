package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// ReadDir returns the contents of the files of dir, by name (for comparing
// the outputs of two runs). It fails the test on any error.
func ReadDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}
