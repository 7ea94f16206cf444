package sparse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVStack(t *testing.T) {
	a := &CSR{NRows: 2, NCols: 3, Indptr: []int64{0, 2, 2}, Indices: []int64{0, 2}, Values: []float64{1, 2}}
	b := &CSR{NRows: 1, NCols: 3, Indptr: []int64{0, 1}, Indices: []int64{1}, Values: []float64{3}}
	empty := &CSR{NRows: 0, NCols: 3, Indptr: []int64{0}}
	want := &CSR{NRows: 3, NCols: 3, Indptr: []int64{0, 2, 2, 3}, Indices: []int64{0, 2, 1}, Values: []float64{1, 2, 3}}
	got := VStack([]*CSR{a, empty, b}, 3, true)
	require.Equal(t, want, got)
	require.NoError(t, got.Validate())
	got.Indices[0] = 9
	require.Equal(t, int64(0), a.Indices[0], "the result must not share memory with the pieces")
	pat := VStack([]*CSR{a, b}, 3, false)
	require.Nil(t, pat.Values)
	require.Equal(t, want.Indptr, pat.Indptr)
}
