package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A committed file replaces the old one whole and leaves no temporary file;
// an aborted one leaves the old file untouched.
func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.bin")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))

	f, err := Create(path)
	require.NoError(t, err)
	_, err = f.Write([]byte("half"))
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old", string(got), "before Commit readers see the old file")
	f.Abort()
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old", string(got))

	require.NoError(t, WriteFile(path, []byte("new")))
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	require.Equal(t, "x.bin", entries[0].Name())
}

// A temporary file of an interrupted write carries TempPrefix, so that a
// caller can find and remove it.
func TestTempPrefix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.bin")
	f, err := Create(path)
	require.NoError(t, err)
	defer f.Abort()
	m, err := filepath.Glob(filepath.Join(dir, TempPrefix(path)+"*"))
	require.NoError(t, err)
	require.Equal(t, []string{f.Name()}, m)
}

// Create fails in a directory that does not exist.
func TestMissingDirectory(t *testing.T) {
	err := WriteFile(filepath.Join(t.TempDir(), "no", "x.bin"), nil)
	require.Error(t, err)
}
