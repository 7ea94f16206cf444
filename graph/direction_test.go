package graph

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/sparse"
)

// upperTriangle returns the entries (i, j) of a with i < j: an undirected
// graph written as most edge lists store it, each edge once.
func upperTriangle(a *sparse.CSR) *sparse.CSR {
	var rows, cols []int64
	for i := int64(0); i < a.NRows; i++ {
		for _, j := range a.Row(i) {
			if i < j {
				rows, cols = append(rows, i), append(cols, j)
			}
		}
	}
	u, err := sparse.FromCOO(a.NRows, a.NCols, rows, cols, nil)
	if err != nil {
		panic(err)
	}
	return u
}

func TestReciprocity(t *testing.T) {
	for _, tc := range []struct {
		name      string
		a         *sparse.CSR
		recip, nn int64
	}{
		{"empty", csr(3, [][]int64{{}, {}, {}}, nil), 0, 0},
		{"both directions", csr(3, [][]int64{{1, 2}, {0}, {0}}, nil), 4, 4},
		{"one direction", csr(3, [][]int64{{1, 2}, {}, {}}, nil), 0, 2},
		{"self-loop is its own reverse", csr(3, [][]int64{{0, 1}, {}, {}}, nil), 1, 2},
		{"unsorted rows", csr(4, [][]int64{{3, 1}, {2, 0}, {}, {0}}, nil), 4, 5},
		{"duplicates count each", csr(2, [][]int64{{1, 1}, {}}, nil), 0, 2},
		{"duplicates with a reverse", csr(2, [][]int64{{1, 1}, {0}}, nil), 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, m := Reciprocity(tc.a)
			assert.Equal(t, tc.recip, r)
			assert.Equal(t, tc.nn, m)
		})
	}
	assert.Panics(t, func() { Reciprocity(csr(3, [][]int64{{1}}, nil)) })
}

// TestReciprocitySBM checks a generated graph over several parallel tasks:
// SBM stores both directions; its upper triangle none; symmetrizing the
// upper triangle gives the graph back.
func TestReciprocitySBM(t *testing.T) {
	p := DefaultSBM(3*reciprocityChunk + 17)
	p.Features = 0
	d, err := SBM(p)
	require.NoError(t, err)
	r, m := Reciprocity(d.Adj)
	assert.Equal(t, m, r)
	assert.Positive(t, m)

	one := &Dataset{Name: "sbm-once", NumNodes: d.NumNodes, Adj: upperTriangle(d.Adj)}
	r, m = Reciprocity(one.Adj)
	assert.Equal(t, int64(0), r)
	assert.Equal(t, d.Adj.NNZ()/2, m)

	sym := one.Symmetrized()
	assert.True(t, sym.Symmetric)
	assert.False(t, one.Symmetric, "the input is not modified")
	assert.Equal(t, d.Adj, sym.Adj)
	assert.Same(t, sym, sym.Symmetrized(), "a symmetric dataset is returned as is")
}

func TestSymmetrizedPartialPanics(t *testing.T) {
	d := &Dataset{NumNodes: 2, Rows: []int64{1}, Adj: csr(2, [][]int64{{0}}, nil)}
	assert.Panics(t, func() { d.Symmetrized() })
}

// TestBinarySymmetricFlag checks the metadata field: WriteBinary records a
// symmetric graph as such (declared or found), OpenBinary reports it, and
// a directed graph reads as not symmetric.
func TestBinarySymmetricFlag(t *testing.T) {
	dir := t.TempDir()
	both := &Dataset{Name: "both", NumNodes: 3, Adj: csr(3, [][]int64{{1}, {0, 2}, {1}}, nil)}
	once := &Dataset{Name: "once", NumNodes: 3, Adj: csr(3, [][]int64{{1}, {2}, {}}, nil)}
	for _, tc := range []struct {
		d    *Dataset
		want bool
	}{{both, true}, {once, false}, {once.Symmetrized(), true}} {
		path := filepath.Join(dir, tc.d.Name+".gnn")
		require.NoError(t, WriteBinary(path, tc.d))
		got, m, err := OpenBinary(path, ReadOptions{})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got.Symmetric, tc.d.Name)
		require.NoError(t, m.Close())
		// A partial load keeps the flag.
		got, _, err = OpenBinary(path, ReadOptions{Keep: func(g int64) bool { return g == 1 }})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got.Symmetric, tc.d.Name)
	}
}
