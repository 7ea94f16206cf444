package train

import (
	"slices"

	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/internal/rng"
	"gnnmpi/metrics"
	"gnnmpi/sampling"
)

// Evaluation by sampling (Config.EvalFanouts). Each rank takes the
// validation and test vertices it owns in evaluation (ebook), in
// minibatches of EvalBatchSize seeds, and computes their logits as a
// training step computes a minibatch's, without dropout: node-wise
// sampling of their neighbourhoods with EvalFanouts, the fetch of the
// input rows (phase "eval"), the forward pass on the host model or the
// device. With −1 for every hop the blocks are the vertices' full
// neighbourhoods, so the logits are those of layer-wise inference (to
// rounding: the sums go in another order) while only the receptive fields
// of the evaluated vertices are computed. Every minibatch samples with one
// key, and node-wise sampling draws a vertex's neighbours at a hop from
// that key, the hop and the vertex alone (sampling.RowStream), so a
// vertex's sample does not depend on the minibatch it is in, nor on the
// rank count. The ranks take as many rounds as the rank with the most
// minibatches (a rank out of seeds samples and fetches nothing), since
// sampling and fetching are collective.

// evaluateSampled is evaluate with Config.EvalFanouts.
func (t *trainer) evaluateSampled() (evaluation, error) {
	c := t.c
	defer collective.SetPhase(c, metrics.PhaseEval)()
	defer collective.SetPhase(t.lc, metrics.PhaseEval)()
	var targets []int64
	for _, g := range t.ebook.Owned(c.Rank()) {
		if t.valMask[g-t.d.RowLo] || t.testMask[g-t.d.RowLo] {
			targets = append(targets, g)
		}
	}
	var sc scores
	if err := t.forSampled(targets, func(seeds []int64, logits *dense.Matrix) { t.score(&sc, seeds, logits) }); err != nil {
		return evaluation{}, err
	}
	return sc.evaluation(c)
}

// forSampled computes the logits of the vertices targets (this rank's) in
// evaluation's minibatches of Config.EvalBatchSize seeds, sampled with
// Config.EvalFanouts, and calls fn with each minibatch's seeds and logits
// (one row a seed). It is collective over t.c and the sampler's and the
// store's communicators: the ranks take as many rounds as the rank with
// the most minibatches.
func (t *trainer) forSampled(targets []int64, fn func(seeds []int64, logits *dense.Matrix)) error {
	if err := t.newEvalSampler(); err != nil {
		return err
	}
	bs := t.cfg.EvalBatchSize
	rounds := []int64{int64((len(targets) + bs - 1) / bs)}
	if err := collective.AllreduceSlice(t.c, rounds, collective.Max); err != nil {
		return err
	}
	if t.dev != nil {
		if err := t.dev.loadWeights(t.m); err != nil {
			return err
		}
	}
	key := rng.Mix(t.cfg.Seed, streamEvalSample)
	buf := t.spare()
	for b := range int(rounds[0]) {
		seeds := targets[min(b*bs, len(targets)):min((b+1)*bs, len(targets))]
		logits, err := t.evalBatch(buf, seeds, key)
		if err != nil {
			return err
		}
		fn(seeds, logits)
	}
	return t.releaseInference()
}

// evalBatch samples the minibatch of seeds with key, fetches its input
// rows into buf (on the device with the tier store) and returns its
// logits in evaluation, one row a seed. It is collective over the
// sampler's and the store's communicators, also for no seeds.
func (t *trainer) evalBatch(buf *slot, seeds []int64, key uint64) (*dense.Matrix, error) {
	mbs, err := t.evalSampler.Sample([][]int64{seeds}, []uint64{key})
	if err != nil {
		return nil, err
	}
	mb := mbs[0]
	ids := mb.Input()
	onTiers := t.dev != nil && t.dev.tier != nil
	if onTiers {
		if buf.x.gpu, err = buf.gatherTiers(t.dev.tier, ids); err != nil {
			return nil, err
		}
	} else if _, err := t.fetch(&buf.x, ids); err != nil {
		return nil, err
	}
	var deg []int64
	if t.needDegrees(false) {
		if deg, err = fetchDegrees(t.fcomm, t.d.Book, t.featDeg, nil, ids); err != nil {
			return nil, err
		}
	}
	if len(seeds) == 0 {
		return dense.New(0, t.m.Layers[len(t.m.Layers)-1].OutDim()), nil
	}
	blocks := t.blocks(mb, deg)
	sparseRows := t.store.Sparse()
	if t.dev != nil {
		t.inferDevice = t.dev.ctx.Name()
	}
	switch {
	case onTiers:
		return t.dev.m.InferDevice(blocks, buf.x.gpu.Ptr, buf.x.gpu.Rows)
	case t.dev != nil && sparseRows:
		return t.dev.m.InferSparse(blocks, buf.x.csr)
	case t.dev != nil:
		return t.dev.m.Infer(blocks, buf.x.dense)
	case sparseRows:
		return t.m.ForwardSparse(blocks, buf.x.csr, false, nil), nil
	default:
		return t.m.Forward(blocks, buf.x.dense, false, nil), nil
	}
}

// newEvalSampler makes, once, the node-wise sampler of evaluation with
// Config.EvalFanouts over the training sampler's topology (the same rows,
// replicated or distributed), or over the rank's whole adjacency when the
// training sampler is LADIES (replicated only: Validate).
func (t *trainer) newEvalSampler() error {
	if t.evalSampler != nil {
		return nil
	}
	var err error
	if tp, ok := t.sampler.(interface{ Topology() sampling.Topology }); ok && t.cfg.Sampler == SamplerSAGE {
		t.evalSampler, err = sampling.NewNodeWiseOn(tp.Topology(), t.cfg.EvalFanouts)
	} else {
		t.evalSampler, err = sampling.NewNodeWise(t.d.Adj, t.cfg.EvalFanouts)
	}
	return err
}

// sampledLogits returns the logits of the vertices targets (this rank's)
// computed by forSampled, in their order: Infer with Config.EvalFanouts.
// With embed set (the last layer: Infer checks) inf.Embeddings gets a
// copy; progress, if not nil, is called with the layer count at the end.
func (t *trainer) sampledLogits(targets []int64, embed int, inf *Inference, progress func(layer int)) (*dense.Matrix, error) {
	out := dense.New(len(targets), t.m.Layers[len(t.m.Layers)-1].OutDim())
	k := 0
	if err := t.forSampled(targets, func(seeds []int64, logits *dense.Matrix) {
		copy(out.Data[k*out.Cols:], logits.Data)
		k += len(seeds)
	}); err != nil {
		return nil, err
	}
	if embed != 0 {
		inf.Embeddings = &dense.Matrix{Rows: out.Rows, Cols: out.Cols, Data: slices.Clone(out.Data)}
	}
	if progress != nil {
		progress(len(t.m.Layers))
	}
	return out, nil
}
