package sparse

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// StrictUpper keeps exactly the entries above the diagonal, with their
// values, in row order.
func TestStrictUpper(t *testing.T) {
	a, err := FromCOO(3, 4, []int64{0, 0, 1, 1, 2, 2, 2}, []int64{0, 2, 0, 3, 1, 2, 3}, []float64{1, 2, 3, 4, 5, 6, 7})
	require.NoError(t, err)
	u := StrictUpper(a)
	require.NoError(t, u.Validate())
	require.Equal(t, []int64{0, 1, 2, 3}, u.Indptr)
	require.Equal(t, []int64{2, 3, 3}, u.Indices)
	require.Equal(t, []float64{2, 4, 7}, u.Values)
	p := &CSR{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices}
	require.Nil(t, StrictUpper(p).Values, "a pattern stays a pattern")
	require.Equal(t, u.Indices, StrictUpper(p).Indices)
}
