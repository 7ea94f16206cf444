package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"gnnmpi/dense"
	"gnnmpi/sparse"
)

// synthetic returns a planted-partition graph on n vertices with c classes
// (vertex v in class v mod c): every vertex receives 4 edges from its own
// class and 1 from anywhere. Features are a class centroid in ±1 per
// dimension plus Gaussian noise of σ = 1, so each vertex alone is noisy but
// its neighbourhood mean separates the classes.
func synthetic(n, c, f int) (*sparse.CSR, *dense.Matrix, []int32) {
	rnd := testRNG(500)
	a := &sparse.CSR{NRows: int64(n), NCols: int64(n), Indptr: make([]int64, n+1)}
	labels := make([]int32, n)
	for v := range n {
		labels[v] = int32(v % c)
		for range 4 {
			a.Indices = append(a.Indices, int64(rnd.IntN(n/c)*c+v%c))
		}
		a.Indices = append(a.Indices, int64(rnd.IntN(n)))
		a.Indptr[v+1] = int64(len(a.Indices))
	}
	centroid := randMatrix(rnd, c, f)
	x := dense.New(n, f)
	for v := range n {
		for j := range f {
			s := float32(1)
			if centroid.Data[int(labels[v])*f+j] < 0 {
				s = -1
			}
			x.Data[v*f+j] = s + float32(rnd.NormFloat64())
		}
	}
	return a, x, labels
}

// TestTrainSAGE trains a 2-layer SAGE with Adam on full-neighbourhood
// blocks and asserts that it fits the training labels.
func TestTrainSAGE(t *testing.T) {
	a, x, labels := synthetic(150, 3, 8)
	blocks := []*sparse.CSR{a, a}
	for _, bi := range blasImpls {
		t.Run(bi.name, func(t *testing.T) {
			m, err := New(Config{Kind: "sage", In: 8, Hidden: 16, Out: 3, Layers: 2, Dropout: 0.1}, testRNG(501), bi.impl)
			require.NoError(t, err)
			opt := NewAdam(0.01, 5e-4)
			drop := testRNG(502)
			first := 0.0
			for step := range 200 {
				m.ZeroGrad()
				loss, dl := SoftmaxCrossEntropy(m.Forward(blocks, x, true, drop), labels)
				if step == 0 {
					first = loss
				}
				m.Backward(dl)
				opt.Step(m.Params())
			}
			logits := m.Forward(blocks, x, false, nil)
			loss, _ := SoftmaxCrossEntropy(logits, labels)
			acc := float64(Correct(logits, labels)) / float64(len(labels))
			t.Logf("loss %.4f → %.4f, train accuracy %.3f", first, loss, acc)
			assert.Less(t, loss, first/4)
			assert.GreaterOrEqual(t, acc, 0.95)
		})
	}
}
