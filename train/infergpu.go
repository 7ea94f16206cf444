package train

import (
	"errors"
	"fmt"
	"math"

	"gnnmpi/collective"
	"gnnmpi/model"
	"gnnmpi/sampling"
)

// Layer-wise inference on the GPU (Config.Device cuda) computes each
// chunk's layer on the device (device.inferLayer). The host's share of a
// chunk (its block's relabelling, the gathers of its inputs, the copies
// to and from the device) costs far more than the device's, so when the
// rank's whole block fits the device's free memory every layer is one
// chunk: the block of all the rank's vertices, built once and kept, the
// input layer's rows gathered on the device by the tier store in one
// fetch, and each hidden layer's rows uploaded once. On one rank holding
// the whole graph the block is the graph's adjacency itself
// (identityBlock): nothing is relabelled or copied.

// wholeOnDevice reports whether layer-wise inference computes every layer
// of this run in one chunk on the device: with a device and dense features
// (the tier store gathers the input layer; sparse rows would be gathered
// on the host, all at once), when on every rank the estimate
// (wholeDeviceBytes) fits 90% of its device's free memory, the block's
// entries and sources fit cuSPARSE's 32-bit indices, and the hidden
// layers' host inputs fit the host's inference budget (wholeHostFits). It
// is collective over t.c when the run has a device (every rank has, or
// none).
func (t *trainer) wholeOnDevice(owned []int64) (bool, error) {
	if t.dev == nil || t.dev.tier == nil || chunkedOnDevice {
		return false, nil
	}
	fits := int64(0)
	free, _, err := t.dev.ctx.MemInfo()
	t.inferPlan = fmt.Sprintf("in the host's chunks (device memory unknown: %v)", err)
	if err == nil {
		var nnz int64 // the entries of the rank's block
		for _, g := range owned {
			nnz += int64(len(t.d.Row(g)))
		}
		need := t.wholeDeviceBytes(owned, nnz)
		host := t.wholeHostFits(owned)
		idx := t.wholeIndexable(owned, nnz)
		if need <= free/10*9 && host && idx {
			fits = 1
		}
		how := "in one chunk per layer"
		switch {
		case !idx:
			how = "in the host's chunks (one chunk's block is beyond cuSPARSE's 32-bit indices)"
		case !host:
			how = "in the host's chunks (one chunk's hidden inputs would exceed the host's inference budget)"
		case fits == 0:
			how = "in the host's chunks"
		}
		t.inferPlan = fmt.Sprintf("%s: one chunk needs about %s of the %s free on rank %d", how, gib(need), gib(free), t.c.Rank())
	}
	v := []int64{fits}
	if err := collective.AllreduceSlice(t.c, v, collective.Min); err != nil {
		return false, err
	}
	if v[0] == 0 && fits == 1 {
		t.inferPlan = "in the host's chunks: another rank's one chunk per layer does not fit its device"
	}
	return v[0] == 1, nil
}

// chunkedOnDevice, set by tests, makes inference on the device take the
// host's chunks even where one chunk per layer would fit.
var chunkedOnDevice = false

// wholeDeviceBytes estimates the device memory layer-wise inference in one
// chunk (the block of owned, nnz entries) takes beyond training's: per layer (gpu/gnn keeps each layer's
// buffers) the block's CSR (32-bit offsets and columns, float32 values),
// the aggregated and output rows of the destinations, for GAT the
// projected rows, scores and coefficients of every attended edge and head
// and the edge arrays; and the largest input rows (the tier store's
// output for the input layer, an upload for the others).
func (t *trainer) wholeDeviceBytes(owned []int64, nnz int64) int64 {
	nd := int64(len(owned))
	ns := nd + int64(len(t.halo))
	const f = 4 // bytes of a float32 or an int32
	var total, inputs int64
	fin := int64(t.store.Cols())
	for _, ly := range t.m.Layers {
		fout := int64(ly.OutDim())
		inputs = max(inputs, ns*fin*f)
		b := (nd+1+2*nnz)*f + nd*(fin+fout)*f
		if t.cfg.Model.Kind == model.KindGAT {
			heads := int64(max(t.cfg.Model.Heads, t.cfg.Model.OutHeads, 1))
			edges := nnz + nd // with self-loops
			b += ns*heads*fout*f + (nd+ns)*heads*f + 2*edges*heads*f + (3*edges+nd+ns+2)*f
		}
		total += b
		fin = fout
	}
	return total + 2*inputs
}

// wholeIndexable reports whether the block of the rank's vertices owned,
// of nnz entries (and a self-loop a destination: GAT's attended edges,
// times its heads), and its sources fit the 32-bit indices of cuSPARSE
// and the kernels.
func (t *trainer) wholeIndexable(owned []int64, nnz int64) bool {
	entries := nnz + int64(len(owned))
	if t.cfg.Model.Kind == model.KindGAT {
		entries *= int64(max(t.cfg.Model.Heads, t.cfg.Model.OutHeads, 1))
	}
	return entries <= math.MaxInt32 && int64(len(owned)+len(t.halo)) < math.MaxInt32
}

// wholeHostFits reports whether inference in one chunk keeps the host's
// inference memory within the chunks' bound: a hidden layer reads the
// rank's rows in place when the rank has no halo, and otherwise gathers
// its own and its halo's rows, which must fit twice evalValues (the
// chunks' inputs and the halo rows they hold at most).
func (t *trainer) wholeHostFits(owned []int64) bool {
	if len(t.halo) == 0 {
		return true
	}
	ns := int64(len(owned) + len(t.halo))
	for _, ly := range t.m.Layers[:len(t.m.Layers)-1] {
		if ns*int64(ly.OutDim()) > 2*t.evalValues() {
			return false
		}
	}
	return true
}

// identityBlock returns the full-neighbour block of the rank's vertices
// owned when it is the graph's adjacency itself: the rank holds the whole
// graph (rows 0..n−1, in order, all owned), whose rows are sorted and
// free of repeats and carry no weights, so that relabelling would change
// nothing. ok is false otherwise.
func (t *trainer) identityBlock(owned []int64) (blk sampling.Block, ok bool) {
	a := t.d.Adj
	n := int64(len(owned))
	if t.d.RowLo != 0 || a.NRows != n || a.NCols != n || a.Values != nil || len(t.halo) != 0 {
		return sampling.Block{}, false
	}
	for i, g := range owned {
		if g != int64(i) {
			return sampling.Block{}, false
		}
	}
	for i := range n {
		row := a.Indices[a.Indptr[i]:a.Indptr[i+1]]
		for k := 1; k < len(row); k++ {
			if row[k] <= row[k-1] {
				return sampling.Block{}, false
			}
		}
	}
	return sampling.Block{Adj: a, Dst: owned, Src: owned}, true
}

// releaseInference frees the device memory that layer-wise inference grew
// (the model's buffers, the tier store's output buffer of slot 0), so that
// training gets it back; the next step and the next inference allocate
// theirs again.
func (t *trainer) releaseInference() error {
	if t.dev == nil {
		return nil
	}
	errs := []error{t.dev.m.FreeBuffers()}
	if s := t.spare(); s.out != nil {
		errs = append(errs, s.out.Free())
		s.x.gpu.Ptr = 0
	}
	return errors.Join(errs...)
}

// wholeBounds returns the chunk boundaries of inference in one chunk per
// layer: owned[0:len(owned)] for each of L layers.
func wholeBounds(L, n int) [][]int {
	b := make([][]int, L)
	for l := range b {
		b[l] = []int{0, n}
	}
	return b
}
