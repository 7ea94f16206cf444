package gnn

import (
	"fmt"

	"gnnmpi/dense"
	"gnnmpi/gpu/cuda"
	"gnnmpi/sparse"
)

// Layer-wise inference on the device: one layer of the model, without
// dropout, over one chunk's full-neighbour block, as model.Model's
// ForwardLayer and ForwardLayerSparse compute it on the host, or from the
// chunk's aggregated sums, as ForwardLayerAggregated does. The weights
// are the device's (LoadWeights); the output comes back to the host, where
// the trainer assembles the layer's rows for the next layer's chunks.

// InferLayer runs layer l in evaluation on block a, whose input rows x
// (a.NCols×fin) are on the host, and returns its a.NRows×fout output
// (after a hidden layer's activation) on the host, as
// model.Model.ForwardLayer(l, a, x) does.
func (m *Model) InferLayer(l int, a *sparse.CSR, x *dense.Matrix) (*dense.Matrix, error) {
	if err := m.checkInfer(l, a, x.Rows, x.Cols); err != nil {
		return nil, err
	}
	var y *dense.Matrix
	err := m.ctx.Do(func() error {
		p, err := upload(m, "x", x.Data)
		if err != nil {
			return err
		}
		y, err = m.inferLayer(l, a, input{x: p, rows: x.Rows})
		return err
	})
	return y, err
}

// InferLayerDevice is InferLayer on input rows already on the device: the
// rows×fin row-major float32 matrix at x (what the feature tiers' gather
// produces).
func (m *Model) InferLayerDevice(l int, a *sparse.CSR, x cuda.DevicePtr, rows int) (*dense.Matrix, error) {
	if err := m.checkInfer(l, a, rows, m.layers[min(max(l, 0), len(m.layers)-1)].fin); err != nil {
		return nil, err
	}
	var y *dense.Matrix
	err := m.ctx.Do(func() (err error) {
		y, err = m.inferLayer(l, a, input{x: x, rows: rows})
		return err
	})
	return y, err
}

// InferLayerSparse is InferLayer for the input layer on sparse rows x
// (a.NCols×In, Values nil for a pattern), as
// model.Model.ForwardLayerSparse(0, a, x) computes it: the rows are
// uploaded in CSR form and the layer projects first (see StepSparse).
func (m *Model) InferLayerSparse(a *sparse.CSR, x *sparse.Matrix[float32]) (*dense.Matrix, error) {
	if err := m.checkSparse(x); err != nil {
		return nil, err
	}
	if err := m.checkInfer(0, a, int(x.NRows), int(x.NCols)); err != nil {
		return nil, err
	}
	var y *dense.Matrix
	err := m.ctx.Do(func() (err error) {
		y, err = m.inferLayer(0, a, input{rows: int(x.NRows), xs: x})
		return err
	})
	return y, err
}

// checkInfer checks that layer l exists and that block a conforms to its
// input of rows×cols.
func (m *Model) checkInfer(l int, a *sparse.CSR, rows, cols int) error {
	switch {
	case l < 0 || l >= len(m.layers):
		return fmt.Errorf("gpu/gnn: layer %d of a model of %d layers", l, len(m.layers))
	case cols != m.layers[l].fin:
		return fmt.Errorf("gpu/gnn: input of %d columns for layer %d of %d inputs", cols, l, m.layers[l].fin)
	case a.NCols != int64(rows):
		return fmt.Errorf("gpu/gnn: block of %d sources for an input of %d rows", a.NCols, rows)
	case a.NRows > a.NCols:
		return fmt.Errorf("gpu/gnn: block of %d destinations and %d sources (the destinations are the first sources)", a.NRows, a.NCols)
	}
	return nil
}

// inferLayer is InferLayer with the context current: layer l's forward
// with no dropout (and, for GAT, no attention dropout), its output
// downloaded.
func (m *Model) inferLayer(l int, a *sparse.CSR, in input) (*dense.Matrix, error) {
	out, err := m.evalLayer(l, a, in.x, in.xs)
	if err != nil {
		return nil, err
	}
	y := dense.New(int(a.NRows), m.layers[l].fout)
	return y, cuda.CopyDtoH(m.ctx, y.Data, out)
}

// evalLayer is forwardLayer in evaluation: no dropout, no attention
// dropout. It returns the layer's output on the device.
func (m *Model) evalLayer(l int, a *sparse.CSR, x cuda.DevicePtr, xs *sparse.Matrix[float32]) (cuda.DevicePtr, error) {
	m.keys[l] = dropKey{}
	if m.layers[l].gat {
		if err := m.drawGAT(l, a, nil, nil); err != nil {
			return 0, err
		}
	}
	return m.forwardLayer(l, a, x, xs)
}

// InferAggregated computes layer l, a GraphSAGE or GCN layer, in
// evaluation from its destinations' input rows xdst and agg, the weighted
// sums of their sources' input rows (mean for SAGE, Â's weights for GCN),
// both on the host, as model.Model.ForwardLayerAggregated does: for SAGE
// xdst·W_self + agg·W_neigh + b, for GCN agg·W + b (xdst is not read and
// may be nil), then a hidden layer's activation. It returns the
// agg.Rows×fout output on the host.
func (m *Model) InferAggregated(l int, xdst, agg *dense.Matrix) (*dense.Matrix, error) {
	if l < 0 || l >= len(m.layers) {
		return nil, fmt.Errorf("gpu/gnn: layer %d of a model of %d layers", l, len(m.layers))
	}
	ly := m.layers[l]
	switch {
	case ly.gat:
		return nil, fmt.Errorf("gpu/gnn: GAT layer %d does not aggregate by a weighted sum", l)
	case agg.Cols != ly.fin:
		return nil, fmt.Errorf("gpu/gnn: sums of %d columns for layer %d of %d inputs", agg.Cols, l, ly.fin)
	case !ly.gcn && (xdst == nil || xdst.Cols != ly.fin || xdst.Rows != agg.Rows):
		return nil, fmt.Errorf("gpu/gnn: layer %d needs its destinations' %d×%d input rows beside the sums", l, agg.Rows, ly.fin)
	}
	nd := agg.Rows
	y := dense.New(nd, ly.fout)
	err := m.ctx.Do(func() error {
		ap, err := upload(m, fmt.Sprint("agg", l), agg.Data)
		if err != nil {
			return err
		}
		out, err := m.scratch(fmt.Sprint("out", l), int64(nd*ly.fout)*4)
		if err != nil {
			return err
		}
		var xp cuda.DevicePtr
		if !ly.gcn {
			if xp, err = upload(m, fmt.Sprint("xd", l), xdst.Data); err != nil {
				return err
			}
		}
		if out, err = m.combine(l, xp, ap, out, nd); err != nil {
			return err
		}
		return cuda.CopyDtoH(m.ctx, y.Data, out)
	})
	return y, err
}

// Infer runs the whole model in evaluation (no dropout) on a minibatch's
// blocks (input layer first, as model.Model.Forward takes them) and its
// input rows x on the host (uploaded), and returns the output layer's
// logits on the host, as model.Model.Forward(blocks, x, false, nil) does.
func (m *Model) Infer(blocks []*sparse.CSR, x *dense.Matrix) (*dense.Matrix, error) {
	if x.Cols != m.layers[0].fin {
		return nil, fmt.Errorf("gpu/gnn: input of %d columns for a model of %d inputs", x.Cols, m.layers[0].fin)
	}
	var y *dense.Matrix
	err := m.ctx.Do(func() error {
		p, err := upload(m, "x", x.Data)
		if err != nil {
			return err
		}
		y, err = m.infer(blocks, input{x: p, rows: x.Rows})
		return err
	})
	return y, err
}

// InferDevice is Infer on input rows already on the device (the rows×In
// row-major float32 matrix at x: what the feature tiers' gather produces).
func (m *Model) InferDevice(blocks []*sparse.CSR, x cuda.DevicePtr, rows int) (*dense.Matrix, error) {
	var y *dense.Matrix
	err := m.ctx.Do(func() (err error) {
		y, err = m.infer(blocks, input{x: x, rows: rows})
		return err
	})
	return y, err
}

// InferSparse is Infer on sparse input rows x (Values nil for a pattern),
// as model.Model.ForwardSparse(blocks, x, false, nil) computes it.
func (m *Model) InferSparse(blocks []*sparse.CSR, x *sparse.Matrix[float32]) (*dense.Matrix, error) {
	if err := m.checkSparse(x); err != nil {
		return nil, err
	}
	var y *dense.Matrix
	err := m.ctx.Do(func() (err error) {
		y, err = m.infer(blocks, input{rows: int(x.NRows), xs: x})
		return err
	})
	return y, err
}

// infer is Infer with the context current: every layer's forward with no
// dropout, the logits downloaded.
func (m *Model) infer(blocks []*sparse.CSR, in input) (*dense.Matrix, error) {
	if len(blocks) != len(m.layers) {
		return nil, fmt.Errorf("gpu/gnn: %d blocks for %d layers", len(blocks), len(m.layers))
	}
	ns := in.rows
	for l, a := range blocks {
		if int(a.NCols) != ns || a.NRows > a.NCols {
			return nil, fmt.Errorf("gpu/gnn: block %d is %d×%d; its input has %d rows", l, a.NRows, a.NCols, ns)
		}
		ns = int(a.NRows)
	}
	x, xs := in.x, in.xs
	for l, a := range blocks {
		var err error
		if x, err = m.evalLayer(l, a, x, xs); err != nil {
			return nil, err
		}
		xs = nil
	}
	y := dense.New(ns, m.layers[len(m.layers)-1].fout)
	return y, cuda.CopyDtoH(m.ctx, y.Data, x)
}
