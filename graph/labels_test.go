package graph

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassCounts(t *testing.T) {
	c := ClassCounts([]int32{0, 3, 3, 1, 7, -1}, 5)
	assert.Equal(t, []int64{1, 1, 0, 2, 0}, c, "labels outside [0,5) are not counted")
	assert.Equal(t, []int{2, 4}, EmptyClasses(c))
	assert.Empty(t, EmptyClasses([]int64{1, 2}))
	assert.Empty(t, ClassCounts(nil, 0))
}

// TestBinaryLabelOutOfRange writes a file whose labels section holds a
// label at or above the num_classes its metadata declares, with valid
// checksums, and checks that OpenBinary refuses it naming the vertex.
func TestBinaryLabelOutOfRange(t *testing.T) {
	d := &Dataset{Name: "bad", NumNodes: 3, Adj: csr(3, [][]int64{{1}, {0}, {}}, nil),
		Labels: []int32{0, 1, 5}, NumClasses: 6}
	c := binContentOf(d)
	c.meta.NumClasses = 2 // declares 2 classes; vertex 2 has label 5
	mj, err := c.meta.layOut()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bad.gnn")
	_, err = c.write(path, mj)
	require.NoError(t, err)
	for _, opt := range []ReadOptions{{}, {Keep: func(int64) bool { return true }}} {
		_, _, err = OpenBinary(path, opt)
		var pe *ParseError
		require.True(t, errors.As(err, &pe), "%v", err)
		assert.Equal(t, path, pe.Path)
		assert.Contains(t, pe.Msg, "vertex 2 has label 5 outside [0,2)")
	}
	// Without labels the file loads.
	_, _, err = OpenBinary(path, ReadOptions{NoLabels: true})
	require.NoError(t, err)

	// A declared class count beyond MaxClasses is corrupt metadata.
	c.meta.NumClasses = MaxClasses + 1
	mj, err = c.meta.layOut()
	require.NoError(t, err)
	_, err = c.write(path, mj)
	require.NoError(t, err)
	_, _, err = OpenBinary(path, ReadOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeds the limit of 1048576")
}
