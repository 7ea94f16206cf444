package pipe

import (
	"math"

	"gnnmpi/dense"
	"gnnmpi/model"
)

// input computes the input layer on block b's destinations:
// H⁰ = ReLU(dropout(X)·W_in + b_in).
func (t *Trainer) input(ps *pass, b *Block, lin *model.Linear, fl *flight) *dense.Matrix {
	whole := !ps.train && len(b.Dst) == t.nk && identity(b.Dst) // the part in order: no copy
	var h *dense.Matrix
	if t.xs != nil {
		x := t.xs
		if !whole {
			x = gatherSparse(t.xs, b.Dst)
		}
		if ps.train {
			dropSparse(x, b.Gids, t.cfg.Model.Dropout, t.dropKey(ps.epoch, 0))
		}
		fl.xs = x
		h = lin.ForwardSparse(x)
	} else {
		x := t.d.Feat
		if !whole {
			x = dense.GatherRows(t.d.Feat, b.Dst)
		}
		if ps.train {
			dropNonzeros(x, b.Gids, t.cfg.Model.Dropout, t.dropKey(ps.epoch, 0))
		}
		h = lin.Forward(x)
	}
	for i, v := range h.Data {
		if v < 0 {
			h.Data[i] = 0
		}
	}
	return h
}

// identity reports whether ids is 0, 1, …, len(ids)−1.
func identity(ids []int32) bool {
	for i, id := range ids {
		if int(id) != i {
			return false
		}
	}
	return true
}

// forward runs the stage's layers on the chunk at position mb and, on the
// last stage, the output layer and the loss. It returns the chunk's summed
// training loss and correct count (last stage, training pass).
func (t *Trainer) forward(ps *pass, mb int, fl *flight) (float64, int64, error) {
	b := ps.blocks[ps.orders[t.k][mb]]
	in, convs := fl.in, fl.convs
	if !ps.train {
		// Evaluation runs throwaway copies of the layers (below, one per
		// conv layer), so that no layer keeps its cache after its Forward.
		in, convs = nil, t.convs
		if t.in != nil {
			in = t.in.Shared()
		}
	}
	if t.hasIn {
		fl.h0 = t.input(ps, b, in, fl)
	}
	if t.first {
		fl.u = fl.h0
	}
	u := fl.u
	for i, cv := range convs {
		if !ps.train {
			cv = cv.Shared()
		}
		var err error
		if u, err = t.convForward(ps, mb, b, i, cv, u, fl.h0); err != nil {
			return 0, 0, err
		}
	}
	fl.y = u
	if !t.last || !ps.train {
		return 0, 0, nil
	}
	loss, correct := t.outputLoss(ps, b, fl)
	return loss, correct, nil
}

// convForward runs the stage's conv layer i (cv) on block b, the chunk at
// position mb, whose own rows u enter it; h0 is the input layer's output
// (GCNII's initial residual).
func (t *Trainer) convForward(ps *pass, mb int, b *Block, i int, cv model.Conv, u, h0 *dense.Matrix) (*dense.Matrix, error) {
	mc := t.cfg.Model
	nd := len(b.Dst)
	// x: the dropped-out input rows d, then the other chunks' and parts'
	// rows. Every row is rewritten, and the conv does not keep x
	// (model.Conv), so one buffer serves every layer and chunk.
	x := t.convInput(b.NSrc())
	d := &dense.Matrix{Rows: nd, Cols: t.w, Data: x.Data[:nd*t.w]}
	copy(d.Data, u.Data)
	if ps.train && mc.Dropout > 0 {
		dropRows(d, b.Gids, mc.Dropout, t.dropKey(ps.epoch, t.lo+i))
	}
	h := ps.hist(i)
	dense.ScatterRowsTo(h, b.Dst, d)
	dense.GatherRowsTo(x, nd, h, b.Local)
	if err := t.haloForward(ps, mb, b, x, h); err != nil {
		return nil, err
	}
	var aux *dense.Matrix
	switch mc.Kind {
	case model.ConvResGCN:
		aux = u
	case model.ConvGCNII:
		aux = h0
	}
	return cv.Forward(b.Conv, x, aux), nil
}

// outputLoss runs the output layer on the chunk's stage output fl.y (block
// b), sets fl.dlog to the gradient of the mean training loss, and returns
// the chunk's summed training loss and correct count.
func (t *Trainer) outputLoss(ps *pass, b *Block, fl *flight) (float64, int64) {
	mc := t.cfg.Model
	nd := len(b.Dst)
	z := fl.y
	if mc.Dropout > 0 {
		z = dense.New(nd, t.w)
		copy(z.Data, fl.y.Data)
		dropRows(z, b.Gids, mc.Dropout, t.dropKey(ps.epoch, mc.Layers+1))
	}
	logits := fl.out.Forward(z)
	pred := model.Argmax(logits)
	var rows []int
	for i, l := range b.Dst {
		if t.d.Train[l] {
			rows = append(rows, i)
		}
	}
	fl.dlog = dense.New(nd, mc.Out)
	var loss float64
	var correct int64
	inv := float32(1 / float64(t.numTrain))
	for _, i := range rows {
		row := logits.Data[i*mc.Out : (i+1)*mc.Out]
		y := t.d.Labels[b.Dst[i]]
		loss += model.CrossEntropy(row, y)
		softmaxGrad(fl.dlog.Data[i*mc.Out:(i+1)*mc.Out], row, y, inv)
		if pred[i] == y {
			correct++
		}
	}
	return loss, correct
}

// softmaxGrad sets g = (softmax(row) − onehot(y))·scale.
func softmaxGrad(g, row []float32, y int32, scale float32) {
	mx := float32(math.Inf(-1))
	for _, v := range row {
		mx = max(mx, v)
	}
	var sum float64
	for _, v := range row {
		sum += math.Exp(float64(v - mx))
	}
	for j, v := range row {
		p := math.Exp(float64(v-mx)) / sum
		if j == int(y) {
			p--
		}
		g[j] = float32(p) * scale
	}
}

// backward back-propagates the chunk at position mb through the stage.
func (t *Trainer) backward(ps *pass, mb int, fl *flight) error {
	b := ps.blocks[ps.orders[t.k][mb]]
	mc := t.cfg.Model
	du := fl.dy
	if t.last {
		dz := fl.out.Backward(fl.dlog, true)
		if mc.Dropout > 0 {
			dropRows(dz, b.Gids, mc.Dropout, t.dropKey(ps.epoch, mc.Layers+1))
		}
		du = dz
	}
	var dh0 *dense.Matrix
	for i := len(fl.convs) - 1; i >= 0; i-- {
		dd, daux, err := t.convBackward(ps, mb, b, i, fl.convs[i], du)
		if err != nil {
			return err
		}
		switch mc.Kind {
		case model.ConvResGCN:
			dense.AddTo(dd, daux)
		case model.ConvGCNII:
			if dh0 == nil {
				dh0 = daux
			} else {
				dense.AddTo(dh0, daux)
			}
		}
		du = dd
	}
	if t.first {
		if dh0 == nil {
			dh0 = du
		} else {
			dense.AddTo(dh0, du)
		}
	}
	if t.hasIn && dh0 != nil {
		t.inputBackward(fl, dh0)
	}
	// Release what the next epoch's forward recomputes (a later stage's u
	// and dy stay: they are its receive buffers); dx goes to the previous
	// stage (SendGrad).
	fl.h0, fl.xs, fl.y, fl.dlog = nil, nil, nil, nil
	if t.first {
		fl.u = nil
	} else {
		fl.dx = du
	}
	return nil
}

// convBackward back-propagates du, the gradient of the stage's conv layer
// i (cv) on block b (the chunk at position mb), through the layer: the
// gradients of its halo rows go to their parts and those of other chunks'
// rows to the historical gradients. It returns the gradient of the layer's
// own input rows, with what earlier chunks and other parts sent for them,
// and the gradient of the layer's aux input (model.Conv).
func (t *Trainer) convBackward(ps *pass, mb int, b *Block, i int, cv model.Conv, du *dense.Matrix) (*dense.Matrix, *dense.Matrix, error) {
	mc := t.cfg.Model
	nd := len(b.Dst)
	dx, daux := cv.Backward(du)
	g := t.histGradAt(i)
	if err := t.haloBackward(ps, mb, b, dx, g); err != nil {
		return nil, nil, err
	}
	dense.AddRowsTo(g, b.Local, dx, nd)
	dd := takeOwnGrads(dx, g, b.Dst)
	if mc.Dropout > 0 {
		dropRows(dd, b.Gids, mc.Dropout, t.dropKey(ps.epoch, t.lo+i))
	}
	return dd, daux, nil
}

// takeOwnGrads returns a new matrix of the first len(dst) rows of dx plus
// rows dst of g (what other chunks and parts sent for the chunk's own
// rows), and clears those rows of g: they are consumed.
func takeOwnGrads(dx, g *dense.Matrix, dst []int32) *dense.Matrix {
	nd, f := len(dst), g.Cols
	dd := dense.New(nd, f)
	copy(dd.Data, dx.Data[:nd*f])
	for j, id := range dst {
		row := g.Data[int(id)*f : (int(id)+1)*f]
		out := dd.Data[j*f : (j+1)*f]
		for k, v := range row {
			out[k] += v
		}
		clear(row)
	}
	return dd
}

// inputBackward back-propagates dh0, the gradient of the input layer's
// output, through its ReLU (in place) into the input layer's gradients.
func (t *Trainer) inputBackward(fl *flight, dh0 *dense.Matrix) {
	for i, v := range fl.h0.Data {
		if v <= 0 {
			dh0.Data[i] = 0
		}
	}
	fl.in.Backward(dh0, false) // after ForwardSparse too: xᵀ·dh0 on the sparse rows
}
