package model

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// TestRowPass checks that a SAGE layer's row pass, over rows of the whole
// graph's adjacency in blocks of several sizes, gives the rows of
// ForwardLayer on the whole graph's one block (destination v being source
// v), with the layer's activation, in both orders (and the one the layer
// picks), with and without Normalize: bit for bit under gonum's BLAS, whose
// product rows do not depend on the other rows, and under OpenBLAS in one
// block of every row; in smaller blocks OpenBLAS's kernels round some
// products otherwise (within 1e-5). A pass whose projections would exceed
// its bound aggregates first. Layers without a row form have none.
func TestRowPass(t *testing.T) {
	const n, fin, hidden, out = 300, 24, 40, 7
	adj := randBlock(testRNG(4200), n, n, 12) // rows sorted without repeats
	x := randMatrix(testRNG(4201), n, fin)
	for _, bi := range blasImpls {
		for _, norm := range []bool{false, true} {
			for _, order := range []int{0, 1, 2} {
				t.Run(fmt.Sprintf("%s/normalize=%t/order=%d", bi.name, norm, order), func(t *testing.T) {
					m, err := New(Config{Kind: "sage", In: fin, Hidden: hidden, Out: out, Layers: 2, Normalize: norm}, testRNG(4202), bi.impl)
					require.NoError(t, err)
					for _, layer := range m.Layers {
						layer.(*SAGE).order = order
					}
					in := x
					for l := range 2 {
						want := clone(m.ForwardLayer(l, adj, in))
						p := m.RowPass(l, in, nil, adj.NNZ(), n*hidden)
						require.NotNil(t, p)
						if order != 0 {
							assert.Equal(t, order == 2, p.mulFirst)
						}
						for _, step := range []int{n, 64, 37, 1} {
							got := dense.New(n, want.Cols)
							for lo := 0; lo < n; lo += step {
								hi := min(lo+step, n)
								rows := &sparse.CSR{NRows: int64(hi - lo), NCols: n, Indptr: adj.Indptr[lo : hi+1], Indices: adj.Indices}
								y := p.Rows(rows, lo)
								copy(got.Data[lo*y.Cols:], y.Data)
							}
							if bi.impl == nil || step == n {
								require.Equal(t, bitsOf(want.Data), bitsOf(got.Data), "layer %d in blocks of %d rows", l, step)
							} else {
								require.InDeltaSlice(t, want.Data, got.Data, 1e-5, "layer %d in blocks of %d rows", l, step)
							}
						}
						in = want
					}
					assert.Panics(t, func() {
						m.RowPass(0, x, nil, adj.NNZ(), n*hidden).Rows(&sparse.CSR{NRows: 2, NCols: n, Indptr: adj.Indptr[:3], Indices: adj.Indices}, n-1)
					})
				})
			}
		}
	}
	m, err := New(Config{Kind: "sage", In: fin, Hidden: hidden, Out: out, Layers: 2}, testRNG(4202), nil)
	require.NoError(t, err)
	m.Layers[0].(*SAGE).order = 2
	assert.True(t, m.RowPass(0, x, nil, adj.NNZ(), n*hidden).mulFirst)
	assert.False(t, m.RowPass(0, x, nil, adj.NNZ(), n*hidden-1).mulFirst, "the projections beyond the bound")
	for _, kind := range []Kind{KindGCN, KindGAT} {
		m, err := New(Config{Kind: kind, In: fin, Hidden: 8, Out: out, Layers: 2}, testRNG(4203), nil)
		require.NoError(t, err)
		assert.Nil(t, m.RowPass(0, x, nil, adj.NNZ(), n*hidden), kind)
	}
}

// TestRowPassHalo checks a row pass over sources in two matrices, the
// vertices' own rows and a halo after them: its rows equal, bit for bit,
// those of the pass over the two stacked in one matrix, in each order.
func TestRowPassHalo(t *testing.T) {
	const n, own, fin = 200, 120, 24
	adj := randBlock(testRNG(4300), own, n, 15) // own vertices' rows over all n sources
	x := randMatrix(testRNG(4301), n, fin)
	ownX := &dense.Matrix{Rows: own, Cols: fin, Data: x.Data[:own*fin]}
	halo := &dense.Matrix{Rows: n - own, Cols: fin, Data: x.Data[own*fin:]}
	for _, order := range []int{1, 2} {
		m, err := New(Config{Kind: "sage", In: fin, Hidden: 16, Out: 5, Layers: 2}, testRNG(4302), nil)
		require.NoError(t, err)
		for _, layer := range m.Layers {
			layer.(*SAGE).order = order
		}
		whole := m.RowPass(0, x, nil, adj.NNZ(), n*16)
		split := m.RowPass(0, ownX, halo, adj.NNZ(), n*16)
		for _, step := range []int{own, 50, 7} {
			for lo := 0; lo < own; lo += step {
				hi := min(lo+step, own)
				rows := &sparse.CSR{NRows: int64(hi - lo), NCols: n, Indptr: adj.Indptr[lo : hi+1], Indices: adj.Indices}
				want := bitsOf(clone(whole.Rows(rows, lo)).Data)
				require.Equal(t, want, bitsOf(split.Rows(rows, lo).Data), "order %d, rows %d to %d", order, lo, hi)
			}
		}
		assert.Panics(t, func() {
			split.Rows(&sparse.CSR{NRows: 1, NCols: n + 1, Indptr: adj.Indptr[:2], Indices: adj.Indices}, 0)
		}, "columns beyond the halo")
	}
}
