package model

import (
	"math"

	"gonum.org/v1/gonum/blas"

	"gnnmpi/dense"
)

// Aggregation says how a layer combines its sources' input rows, for a
// caller that sums them itself (ForwardLayerAggregated).
type Aggregation int

const (
	// AggregateNone: the layer does not combine its sources by a weighted
	// sum of their input rows (GAT's attention depends on all of them at
	// once).
	AggregateNone Aggregation = iota
	// AggregateMean: the sum weighs every distinct neighbour of
	// destination i by 1/|N(i)| (SAGE), and the layer also reads the
	// destination's own input row.
	AggregateMean
	// AggregateGCN: the sum weighs neighbour j of destination i, and i
	// itself, by GCNWeight (GCN over the full neighbourhood, GCNNorm);
	// the layer reads nothing else.
	AggregateGCN
)

// Aggregation returns how layer l aggregates its sources.
// It will panic if l is out of range.
func (m *Model) Aggregation(l int) Aggregation {
	switch m.Layers[l].(type) {
	case *SAGE:
		return AggregateMean
	case *GCN:
		return AggregateGCN
	}
	return AggregateNone
}

// MeanWeight returns the weight of each of k distinct neighbours in
// SAGE's mean, as the layer's forward pass computes it: 1/k, and 0 for
// k = 0.
func MeanWeight(k int) float32 {
	if k == 0 {
		return 0
	}
	return 1 / float32(k)
}

// GCNWeight returns the entry (i, j) of GCNNorm over the full
// neighbourhood as float32, as the layer multiplies by it: degDst and
// degSrc are the degrees of i and j without self-loops, k the number of
// i's neighbours other than i, and self whether j is i.
func GCNWeight(degDst, k, degSrc int64, self bool) float32 {
	scaleI, loop := gcnRowScale(degDst, k)
	if self {
		return float32(loop)
	}
	return float32(scaleI / math.Sqrt(float64(degSrc)+1))
}

// ForwardLayerAggregated computes layer l in inference, with its
// activation, from its destinations' input rows xdst and agg, the weighted
// sums of their sources' input rows that Aggregation(l) describes: for
// SAGE xdst·W_self + agg·W_neigh + b, normalised if the layer normalises,
// and for GCN agg·W + b (xdst is not read and may be nil). It equals
// ForwardLayer on the destinations' full-neighbour block up to rounding
// (the sums may be taken in another order). It returns a new
// agg.Rows×OutDim() matrix and leaves nothing for Backward.
// It will panic if Aggregation(l) is AggregateNone or the shapes do not
// conform.
func (m *Model) ForwardLayerAggregated(l int, xdst, agg *dense.Matrix) *dense.Matrix {
	var out *dense.Matrix
	switch y := m.Layers[l].(type) {
	case *SAGE:
		if agg.Cols != y.fin || xdst == nil || xdst.Cols != y.fin || xdst.Rows != agg.Rows {
			panic("model: aggregated rows do not conform to the layer")
		}
		out = dense.New(agg.Rows, y.fout)
		dense.Gemm(y.impl, blas.NoTrans, blas.NoTrans, agg.Rows, y.fout, y.fin, 1, xdst.Data, y.wSelf.W, 0, out.Data)
		dense.Gemm(y.impl, blas.NoTrans, blas.NoTrans, agg.Rows, y.fout, y.fin, 1, agg.Data, y.wNeigh.W, 1, out.Data)
		y.finish(out)
		y.blk = nil
	case *GCN:
		if agg.Cols != y.fin {
			panic("model: aggregated rows do not conform to the layer")
		}
		out = dense.New(agg.Rows, y.fout)
		dense.Gemm(y.impl, blas.NoTrans, blas.NoTrans, agg.Rows, y.fout, y.fin, 1, agg.Data, y.w.W, 0, out.Data)
		addRowVec(out.Data, y.b.W, agg.Rows, y.fout)
	default:
		panic("model: layer does not aggregate by a weighted sum")
	}
	if m.acts[l] != nil {
		out = m.acts[l].Forward(out)
	}
	m.ready = false
	return out
}
