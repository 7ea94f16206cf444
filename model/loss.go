package model

import (
	"math"

	"gnnmpi/dense"
)

// SoftmaxCrossEntropy returns the mean over rows of −log softmax(logits_i)[y_i]
// and its gradient with respect to logits, (softmax(logits_i) − onehot(y_i))/n,
// as a new matrix. logits is n×c; each row is shifted by its maximum and
// reduced in float64. With n = 0 the loss is 0.
// It will panic if len(labels) != n or a label is outside [0, c).
func SoftmaxCrossEntropy(logits *dense.Matrix, labels []int32) (loss float64, dlogits *dense.Matrix) {
	return SoftmaxCrossEntropyTo(nil, logits, labels)
}

// SoftmaxCrossEntropyTo is SoftmaxCrossEntropy with the gradient written to
// dst's storage when its capacity suffices (dense.Reuse; dst may be nil),
// so that a training loop that passes the previous step's gradient back
// allocates none. The result aliases dst unless it is new. dst must not
// alias logits.
// It will panic if len(labels) != n or a label is outside [0, c).
func SoftmaxCrossEntropyTo(dst, logits *dense.Matrix, labels []int32) (loss float64, dlogits *dense.Matrix) {
	n, c := logits.Rows, logits.Cols
	if len(labels) != n {
		panic("model: len(labels) != logits.Rows")
	}
	dlogits = dense.Reuse(dst, n, c)
	if n == 0 {
		return 0, dlogits
	}
	inv := 1 / float64(n)
	for i := range n {
		y := int(labels[i])
		if y < 0 || y >= c {
			panic("model: label out of range")
		}
		row := logits.Data[i*c : (i+1)*c]
		g := dlogits.Data[i*c : (i+1)*c]
		mx, sum := maxSumExp(row)
		loss += mx + math.Log(sum) - float64(row[y])
		for j, v := range row {
			p := math.Exp(float64(v)-mx) / sum
			if j == y {
				p--
			}
			g[j] = float32(p * inv)
		}
	}
	return loss * inv, dlogits
}

// CrossEntropy returns −log softmax(row)[y], reduced in float64 after
// shifting by the row's maximum: the loss of one row of logits.
// It will panic if y is outside [0, len(row)).
func CrossEntropy(row []float32, y int32) float64 {
	mx, sum := maxSumExp(row)
	return mx + math.Log(sum) - float64(row[y])
}

// maxSumExp returns the row's maximum m and Σ_j exp(row_j − m), in float64:
// log-sum-exp(row) = m + log(sum) without overflow.
func maxSumExp(row []float32) (m, sum float64) {
	m = math.Inf(-1)
	for _, v := range row {
		m = math.Max(m, float64(v))
	}
	for _, v := range row {
		sum += math.Exp(float64(v) - m)
	}
	return m, sum
}

// Argmax returns the index of the largest entry of every row of logits (the
// first one on ties), as a new slice.
func Argmax(logits *dense.Matrix) []int32 {
	c := logits.Cols
	out := make([]int32, logits.Rows)
	if c == 0 {
		return out
	}
	for i := range out {
		row := logits.Data[i*c : (i+1)*c]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		out[i] = int32(best)
	}
	return out
}

// Correct returns the number of rows whose argmax equals the label.
// It will panic if len(labels) != logits.Rows.
func Correct(logits *dense.Matrix, labels []int32) int {
	if len(labels) != logits.Rows {
		panic("model: len(labels) != logits.Rows")
	}
	n := 0
	for i, p := range Argmax(logits) {
		if p == labels[i] {
			n++
		}
	}
	return n
}
