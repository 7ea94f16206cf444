package model

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"gnnmpi/dense"
	"gnnmpi/internal/testutil"
)

func TestSoftmaxCrossEntropy(t *testing.T) {
	// Two rows of 3 classes; row 0 uniform gives log 3.
	logits := &dense.Matrix{Rows: 2, Cols: 3, Data: []float32{0, 0, 0, 1000, 0, -1000}}
	loss, g := SoftmaxCrossEntropy(logits, []int32{2, 0})
	// Row 1 is confidently right (loss ≈ e⁻¹⁰⁰⁰ ≈ 0) despite huge logits: the shift keeps it finite.
	assert.InDelta(t, math.Log(3)/2, loss, 1e-12)
	assert.InDeltaSlice(t, []float32{1. / 6, 1. / 6, -1. / 3, 0, 0, 0}, g.Data, 1e-7)

	loss, g = SoftmaxCrossEntropy(dense.New(0, 3), nil)
	assert.Equal(t, 0.0, loss)
	assert.Equal(t, 0, g.Rows)

	assert.Panics(t, func() { SoftmaxCrossEntropy(logits, []int32{3, 0}) })
	assert.Panics(t, func() { SoftmaxCrossEntropy(logits, []int32{0}) })
}

// CrossEntropy of one row is SoftmaxCrossEntropy of a one-row matrix.
func TestCrossEntropyRow(t *testing.T) {
	logits := randMatrix(testRNG(5), 4, 6)
	for i := range 4 {
		row := logits.Data[i*6 : (i+1)*6]
		y := int32(i + 1)
		want, _ := SoftmaxCrossEntropy(&dense.Matrix{Rows: 1, Cols: 6, Data: row}, []int32{y})
		assert.InDelta(t, want, CrossEntropy(row, y), 1e-12)
	}
	assert.InDelta(t, math.Log(3), CrossEntropy([]float32{1000, 1000, 1000}, 1), 1e-12)
}

func TestSoftmaxCrossEntropyGradient(t *testing.T) {
	logits := randMatrix(testRNG(11), 6, 4)
	for i := range logits.Data {
		logits.Data[i] *= 3
	}
	labels := []int32{0, 3, 1, 1, 2, 0}
	f := func() float64 { l, _ := SoftmaxCrossEntropy(logits, labels); return l }
	_, g := SoftmaxCrossEntropy(logits, labels)
	testutil.GradCheck(t, "logits", f, logits.Data, g.Data, fdEps, fdTol)
}

func TestArgmaxCorrect(t *testing.T) {
	logits := &dense.Matrix{Rows: 3, Cols: 3, Data: []float32{
		0, 2, 1,
		5, 5, 0, // tie: first index
		-1, -3, -0.5,
	}}
	assert.Equal(t, []int32{1, 0, 2}, Argmax(logits))
	assert.Equal(t, 2, Correct(logits, []int32{1, 1, 2}))
}

// SoftmaxCrossEntropyTo overwrites every element of a reused gradient
// (filled with NaN here, larger than needed) and returns what
// SoftmaxCrossEntropy does, on dst's storage.
func TestSoftmaxCrossEntropyTo(t *testing.T) {
	logits := randMatrix(testRNG(12), 5, 4)
	labels := []int32{3, 0, 2, 1, 1}
	wantLoss, want := SoftmaxCrossEntropy(logits, labels)
	dst := dense.New(7, 4)
	for i := range dst.Data {
		dst.Data[i] = float32(math.NaN())
	}
	loss, got := SoftmaxCrossEntropyTo(dst, logits, labels)
	assert.Equal(t, wantLoss, loss)
	assert.Equal(t, want, got)
	assert.Same(t, &dst.Data[0], &got.Data[0], "the gradient is on dst's storage")
	_, fresh := SoftmaxCrossEntropyTo(dense.New(1, 4), logits, labels)
	assert.Equal(t, want, fresh, "a dst too small gives a new matrix")
}
