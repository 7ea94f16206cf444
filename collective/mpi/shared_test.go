//go:build !nompi

package mpi

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// shmRoom asks for twice the segments' bytes in the backing file system,
// and knows no limit where the directory does not exist.
func TestShmRoom(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		dir  string
		need int64
		want bool
	}{
		{"nothing to hold", dir, 0, true},
		{"a page", dir, 4096, true},
		{"more than any disk", dir, 1 << 61, false},
		{"no such directory", filepath.Join(dir, "absent"), 1 << 61, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, shmRoom(tc.dir, tc.need))
		})
	}
}
