package train

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/sat"
	"gnnmpi/model"
	"gnnmpi/pipe"
	"gnnmpi/sparse"
)

// footprint is what a minibatch trainer will allocate on one rank beyond
// what it holds once loaded (the topology and the loaded feature rows,
// already in use), by part, in bytes. estimateFootprint computes it from
// the configuration and the data's shapes before anything is allocated.
type footprint struct {
	Model int64 // weights, gradients, the flat gradients and weights, optimiser moments
	Norm  int64 // the row-normalised copy of the features (0 when normalised in place)
	Store int64 // the feature store's copy of the rows the rank owns
	Cache int64 // the store's cached rows
	Batch int64 // the minibatches in flight: gathered inputs, blocks and activations
	Held  int64 // what of Batch stays through inference: one slot's inputs and every slot's blocks
	Infer int64 // layer-wise inference: two layers' outputs and one chunk's inputs
	Halo  int64 // layer-wise inference's halo rows, fetched once per layer (at the widest layer input), or one piece of them and the sums

	// Slack is Batch with every sampled row counted as new (the batch
	// times the product of (fanout + 1), at most n): the heap limit's
	// room for a step's buffers and garbage (heapSlack). It is not a part
	// of Total.
	Slack int64
}

// Total returns what f's parts hold at once, saturating at
// math.MaxInt64: the state's parts, and the larger of the minibatches
// (training) and inference beside what it keeps of them (releaseTraining
// drops the activations and the other slots' inputs before inference).
func (f footprint) Total() int64 {
	var s int64
	for _, v := range []int64{f.Model, f.Norm, f.Store, f.Cache} {
		s = sat.Add(s, v)
	}
	return sat.Add(s, max(f.Batch, sat.Add(f.Held, sat.Add(f.Infer, f.Halo))))
}

// String lists f's parts.
func (f footprint) String() string {
	return fmt.Sprintf("model and optimiser %s, normalised features %s, feature store %s, cache %s, minibatches %s (%s through inference), inference %s, inference halo %s",
		gib(f.Model), gib(f.Norm), gib(f.Store), gib(f.Cache), gib(f.Batch), gib(f.Held), gib(f.Infer), gib(f.Halo))
}

// featShape is the shape of one rank's feature rows: rows × cols, with
// nnz stored entries when sparse (nnz < 0: dense).
type featShape struct {
	rows, cols, nnz int64
	owned           bool // dense rows in memory the process owns (normalised in place)
}

// rowBytes returns the bytes of one average row as held: 4 per column
// dense (2 with f16), 12 per nonzero sparse (column index and value).
func (s featShape) rowBytes(dtype alltoall.DType) float64 {
	if s.nnz >= 0 {
		if s.rows == 0 {
			return 0
		}
		return 12 * float64(s.nnz) / float64(s.rows)
	}
	if dtype == alltoall.F16 {
		return 2 * float64(s.cols)
	}
	return 4 * float64(s.cols)
}

// estimateFootprint returns what a minibatch trainer of cfg (whose model
// has In and Out set) will allocate on a rank whose feature rows have
// shape feat, with n vertices in the graph of mean degree meanDeg, evalRows vertices to compute
// in layer-wise inference (haloRows of them not its own: the halo, which
// a layer computed in several chunks fetches once), cacheRows cached rows
// and norm the feature normalisation. It returns an error if cfg.Model is
// invalid.
//
// Inference's outputs have the layers' output widths: a sparse input
// layer projects its rows before aggregating, so no buffer is as wide as
// the input. A minibatch's sampled rows are bounded hop by hop by
// sampledRows; Slack bounds them by the batch times the product of
// (fanout + 1) and by n instead.
//
// With cfg.EvalFanouts, evaluation holds one of its minibatches (one
// slot, EvalBatchSize seeds) instead of layer-wise inference's buffers,
// counted as a training minibatch of those fanouts, all neighbours (−1)
// counting as meanDeg draws a vertex.
func estimateFootprint(cfg Config, feat featShape, n int64, meanDeg float64, evalRows, haloRows, cacheRows int64, norm FeatureNorm) (footprint, error) {
	var f footprint
	params, err := cfg.Model.NumParams()
	if err != nil {
		return f, err
	}
	// W and G, the flat gradients and the flat weights kept for model
	// selection, and the optimiser's moments.
	moments := int64(0)
	switch {
	case cfg.Optimizer == model.OptimizerAdam:
		moments = 2
	case cfg.Momentum != 0:
		moments = 1
	}
	f.Model = sat.Mul(params, 4*(4+moments))
	sparse := feat.nnz >= 0
	row := feat.rowBytes(cfg.FeatureDType)
	switch {
	case norm != FeatureNormRow:
	case sparse:
		f.Norm = int64(row*float64(feat.rows)) + 8*(feat.rows+1)
	case !feat.owned:
		f.Norm = sat.Mul(feat.rows, sat.Mul(feat.cols, 4))
	}
	if sparse {
		f.Store = 8*feat.nnz + 8*feat.rows
	} else {
		f.Store = int64(row * float64(feat.rows))
	}
	f.Cache = int64(row * float64(cacheRows))

	// The minibatches: at the expected distinct rows, and (the heap
	// limit's slack) at every draw a new row.
	widths := layerWidths(cfg.Model)
	slots := int64(1)
	if cfg.Overlap {
		slots = prefetch + 1
	}
	var input, edges int64
	f.Batch, input, edges = batchBytes(cfg, widths, sparse, row, slots, sampledRows(cfg, n, true))
	f.Held = sat.Add(input, sat.Mul(slots, edges))
	f.Slack, _, _ = batchBytes(cfg, widths, sparse, row, slots, sampledRows(cfg, n, false))

	// Inference: the outputs of two consecutive layers (layer l−1's,
	// its input, and layer l's; the input layer's own alone), and a
	// chunk's gathered inputs with the layer's intermediate rows.
	var wide int64
	for l, w := range widths {
		if l > 0 {
			w = sat.Add(w, widths[l-1])
		}
		wide = max(wide, w)
	}
	chunk := min(sat.Mul(cfg.EvalMemory, 4), int64(row*float64(n)))
	if !sparse {
		chunk = min(sat.Mul(evalChunkValues(cfg.EvalMemory, feat), 4), int64(row*float64(n)))
	}
	if cfg.EvalEvery > 0 && cfg.EvalFanouts != nil {
		ev := cfg
		ev.BatchSize, ev.Fanouts = cfg.EvalBatchSize, slices.Clone(cfg.EvalFanouts)
		for h, k := range ev.Fanouts {
			if k < 0 {
				ev.Fanouts[h] = max(int(math.Ceil(meanDeg)), 1)
			}
		}
		f.Infer, _, _ = batchBytes(ev, widths, sparse, row, 1, sampledRows(ev, n, true))
		return f, nil
	}
	if cfg.EvalEvery > 0 {
		f.Infer = sat.Add(sat.Mul(evalRows, sat.Mul(wide, 4)), sat.Mul(2, chunk))
		// The halo rows of the layer that holds the most: a layer's halo
		// is fetched once, and held, only when its values at the layer's
		// input width fit in a chunk's bound (planChunks); the features'
		// rows as held, a hidden layer's at its width. A larger halo of
		// SAGE or GCN over dense rows is fetched in pieces of at most the
		// bound, beside a sum of the layer's input width per vertex
		// (inferPieces); the ranks decide that together, so a rank with
		// a halo counts the pieces even when its own halo fits.
		limit := cfg.EvalMemory
		if !sparse {
			limit = evalChunkValues(cfg.EvalMemory, feat)
		}
		fin := feat.cols
		for l := range widths {
			if l > 0 {
				fin = widths[l-1]
			}
			if haloRows > 0 && cfg.Model.Kind != model.KindGAT && (l > 0 || !sparse) {
				f.Halo = max(f.Halo, sat.Mul(sat.Add(sat.Mul(evalRows, fin), min(limit, sat.Mul(haloRows, fin))), 4))
			}
			if sat.Mul(haloRows, fin) > limit {
				continue
			}
			b := sat.Mul(haloRows, sat.Mul(fin, 4))
			if l == 0 {
				b = sat.Mul(haloRows, int64(row)+8)
			}
			f.Halo = max(f.Halo, b)
		}
	}
	return f, nil
}

// distinctMargin is sampledRows' factor on the expected number of new
// rows a hop adds. That expectation is an upper bound of the mean over
// batches when the seeds are drawn uniformly (the number of distinct
// vertices hit is largest, for a given number of draws, when every
// vertex is equally likely: it is concave in the vertices' chances);
// beyond the first hop the frontier clusters around the seeds, so its
// neighbours repeat more. The margin covers a batch above the mean (the
// count's standard deviation is at most its square root: under 1% at
// 10,000 rows) and the draws of one vertex being distinct rather than
// independent.
const distinctMargin = 1.1

// sampledRows returns the vertices of a minibatch of cfg at every hop
// (rows[0] the seeds, rows[h+1] the sources of hop h, which include
// hop h's destinations) in a graph of n vertices. With expected, hop h
// adds to its r destinations at most distinctMargin times the expected
// number of the other n − r vertices that r·k uniform draws hit,
// (n − r)·(1 − (1 − 1/n)^(r·k)) for fanout k; otherwise every draw counts
// as a new vertex, r·(k + 1). Either is at most n (a fanout below 0, all
// neighbours, gives n).
func sampledRows(cfg Config, n int64, expected bool) []int64 {
	L := len(cfg.Fanouts)
	rows := make([]int64, L+1)
	rows[0] = min(int64(cfg.BatchSize), n)
	for h, k := range cfg.Fanouts {
		r, next := rows[h], n
		if k >= 0 {
			next = min(sat.Mul(r, int64(k)+1), n)
		}
		if expected && k >= 0 && n > 0 {
			draws := float64(r) * float64(k)
			hit := float64(n-r) * -math.Expm1(draws*math.Log1p(-1/float64(n)))
			next = min(next, r+int64(math.Ceil(distinctMargin*hit)))
		}
		rows[h+1] = next
	}
	return rows
}

// batchBytes returns the bytes of the minibatches in flight (slots of
// them) of cfg, with rows[h] vertices at hop h (sampledRows), layer
// output widths, and row bytes per input row: the activations of one and
// the inputs and blocks of every slot. It returns as well one slot's
// inputs and blocks.
func batchBytes(cfg Config, widths []int64, sparse bool, row float64, slots int64, rows []int64) (batch, input, edges int64) {
	L := len(cfg.Fanouts)
	var act int64
	for l := range widths { // layer l's destinations are rows[L-1-l]
		dst := rows[max(L-1-l, 0)]
		var fin int64
		switch {
		case l > 0:
			fin = widths[l-1]
		case sparse:
			fin = widths[0] // a sparse input layer projects its rows first
		default:
			fin = int64(cfg.Model.In)
		}
		// Two input-wide and four output-wide rows per destination, in the
		// forward and the backward pass; the input layer's inputs get no
		// gradient, so its input-wide rows count once.
		in := sat.Mul(2*fin, 4*2)
		if l == 0 {
			in = sat.Mul(2*fin, 4)
		}
		act = sat.Add(act, sat.Mul(dst, sat.Add(in, sat.Mul(4*widths[l], 4*2))))
		if l < L {
			edges = sat.Add(edges, sat.Mul(dst, 20*max(int64(cfg.Fanouts[L-1-l]), 1)))
		}
	}
	input = int64(row * float64(rows[L]))
	return sat.Add(act, sat.Mul(slots, sat.Add(input, edges))), input, edges
}

// layerWidths returns the output width of every layer of a model of c.
func layerWidths(c model.Config) []int64 {
	w := make([]int64, max(c.Layers, 0))
	for l := range w {
		switch {
		case l == len(w)-1:
			w[l] = int64(c.Out)
		case c.Kind == model.KindGAT:
			w[l] = sat.Mul(int64(max(c.Heads, 1)), int64(c.Hidden))
		default:
			w[l] = int64(c.Hidden)
		}
	}
	return w
}

// evalChunkValues returns the values one chunk of layer-wise inference
// gathers at most: EvalMemory, and no more than an eighth of the rank's
// feature values (at least 4 Mi values), so that the chunk's inputs and
// intermediate rows stay small beside the state.
func evalChunkValues(evalMemory int64, feat featShape) int64 {
	return min(evalMemory, max(feat.rows*feat.cols/8, 1<<22))
}

// checkFootprint compares what a minibatch trainer of cfg is about to
// allocate on this rank (estimateFootprint; with --device cuda and dense
// f32 features also the mapped host tier beside the store) with what the
// rank may still allocate, before any of it is allocated; evalRows is the
// number of vertices the rank computes in inference, haloRows those of
// them it does not own. It is collective
// over c: every rank fails if one would not fit. The topology and the
// loaded rows are in use already and counted by the budget. On success it
// returns the estimate and a line for the log: the resident memory now, the estimate and
// their sum, the peak the rank should expect (the loaded rows that move
// into the store count twice in it, so it errs high by about the store).
func checkFootprint(c collective.Comm, d *Data, cfg Config, norm FeatureNorm, evalRows, haloRows int64) (footprint, string, error) {
	shape := featShapeOf(d)
	meanDeg := float64(d.Adj.NNZ()) / float64(max(d.Adj.NRows, 1))
	f, err := estimateFootprint(cfg, shape, d.NumNodes(), meanDeg, evalRows, haloRows, int64(cacheRows(cfg.CacheFrac, d.Book.NumNodes(), d.Book.Parts)), norm)
	if err != nil { // the same configuration on every rank: all fail alike
		return footprint{}, "", err
	}
	need, what := f.Total(), f.String()
	// Feature rows in a file mapping are resident now, counted by the
	// budget, and released once the store has copied them
	// (mappedRows.release); the kernel reclaims them under the limit
	// while the store fills, so the store's need is net of them.
	if mapped := min(memlimit.MappedBytes(mappedFeatures(d)...), f.Store); mapped > 0 {
		need = max(0, need-mapped)
		what += ", less the mapped feature rows the store replaces " + gib(mapped)
	}
	if cfg.Device == DeviceCUDA && shape.nnz < 0 && cfg.FeatureDType != alltoall.F16 {
		// The device tiers (gpu/tier) copy the resident rows not in device
		// memory into mapped host memory beside the store.
		host := int64(float64(f.Store+f.Cache) * (1 - cfg.GPUFrac))
		need = sat.Add(need, host)
		what += ", mapped host tier " + gib(host)
	}
	if err := fits(c, need, fmt.Sprintf("training needs %s more (%s)", gib(need), what)); err != nil {
		return footprint{}, "", err
	}
	rss := memlimit.RSS()
	return f, fmt.Sprintf("rank %d holds %s (%d bytes) and needs %s (%d bytes) more (%s): estimated peak %d bytes", c.Rank(), gib(rss), rss, gib(need), need, what, sat.Add(rss, need)), nil
}

// featShapeOf returns the shape of d's feature rows.
func featShapeOf(d *Data) featShape {
	if d.FeatCSR != nil {
		return featShape{rows: d.FeatCSR.NRows, cols: d.FeatCSR.NCols, nnz: int64(len(d.FeatCSR.Indices))}
	}
	if d.Feat16 != nil { // row normalisation widens them into a copy
		return featShape{rows: int64(d.Feat16.Rows), cols: int64(d.Feat16.Cols), nnz: -1}
	}
	return featShape{rows: int64(d.Feat.Rows), cols: int64(d.Feat.Cols), nnz: -1, owned: d.FeatOwned}
}

// mappedRows are arrays of feature rows that may alias a read-only
// mapped file (graph.Load of a binary file read whole, which is never
// unmapped).
type mappedRows [][]byte

// mappedFeatures returns d's feature arrays.
func mappedFeatures(d *Data) mappedRows {
	switch {
	case d.FeatCSR != nil:
		return mappedRows{byteView(d.FeatCSR.Indptr), byteView(d.FeatCSR.Indices), byteView(d.FeatCSR.Values)}
	case d.Feat != nil:
		return mappedRows{byteView(d.Feat.Data)}
	case d.Feat16 != nil:
		return mappedRows{byteView(d.Feat16.Data)}
	}
	return nil
}

// release drops the resident pages of those arrays of m that lie in a
// file mapping (memlimit.ReleaseMapped): the store has copied the rows by
// then, so the mapping's copy no longer counts beside the store's.
func (m mappedRows) release() { memlimit.ReleaseMapped(m...) }

// csrArrays returns the arrays of m as bytes (none for a nil m).
func csrArrays(m *sparse.CSR) [][]byte {
	if m == nil {
		return nil
	}
	return [][]byte{byteView(m.Indptr), byteView(m.Indices), byteView(m.Values)}
}

// byteView returns the bytes of s.
func byteView[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// checkFullFootprint compares the least a full-graph trainer of pc
// allocates on a rank whose part has rows vertices with what the rank may
// still allocate, before pipe.New builds anything: the whole deep model
// with its gradients and optimiser moments (every stage's layers, an upper
// bound for one stage), and one hidden-wide row per vertex and layer (the
// activations a full-graph step keeps for its backward pass).
//
// It decides on this rank alone and makes no collective call, so that the
// setup's traffic is that of a run without the check: a rank that does not
// fit returns its own "out of memory" error, and package main ends the job
// (every rank's budget is its own, so under equal caps every rank reports).
func checkFullFootprint(rank int, pc pipe.Config, rows int64) error {
	params, err := pc.Model.NumParams()
	if err != nil { // the same configuration on every rank: all fail alike
		return err
	}
	moments := int64(0)
	switch {
	case pc.Optimizer == model.OptimizerAdam:
		moments = 2
	case pc.Momentum != 0:
		moments = 1
	}
	weights := sat.Mul(params, 4*(2+moments))
	acts := sat.Mul(rows, sat.Mul(int64(pc.Model.Hidden), sat.Mul(4, int64(pc.Model.Layers))))
	need := sat.Add(weights, acts)
	return fitsLocal(rank, need, fmt.Sprintf("full-graph training needs at least %s more (model and optimiser %s, activations %s)", gib(need), gib(weights), gib(acts)))
}
