package pipe

import (
	"math/rand/v2"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// Volume is the analytical traffic of a run: bytes sent, summed over all
// ranks, by phase, for one training epoch (Train) and one exact inference
// (Eval). Train is keyed by TrainPhases (halo only with more than one
// pipeline). A row is Hidden float32 values.
//
//   - act and act-grad: every vertex's rows cross each of the Stages − 1
//     stage boundaries of its pipeline once per epoch, forward
//     (activations) and backward (their gradients): (Stages − 1)·n rows
//     each.
//   - halo: every chunk reads its neighbours in other parts at every
//     convolution layer and sends their gradients back: 2·Layers·HaloRows
//     rows, HaloRows = Plan.HaloRows(false) (zero with one pipeline).
//   - grad: each stage's weight gradients over its pipelines, and
//     GCNII's input layer (held by every stage) over all ranks, each rank
//     counting collective.AllreduceVolume.
//   - eval: one pass with one chunk per part: (Stages − 1)·n rows forward
//     plus Layers·Plan.HaloRows(true).
type Volume struct {
	Train map[string]int64
	Eval  int64
}

// Analytical returns the Volume of a run of mc with layout lay whose parts'
// plans are like plan (any part's: they agree on the totals it reads).
func Analytical(plan *PartPlan, lay Layout, mc model.DeepConfig) Volume {
	row := int64(mc.Hidden) * 4
	n := plan.N
	S, P := lay.Stages, lay.Pipelines
	bound := int64(S-1) * n * row
	v := Volume{Train: map[string]int64{metrics.PhaseAct: bound, metrics.PhaseActGrad: bound}}
	if P > 1 {
		v.Train[metrics.PhaseHalo] = 2 * int64(mc.Layers) * plan.HaloRows(false) * row
		v.Eval = int64(mc.Layers) * plan.HaloRows(true) * row
	}
	v.Eval += bound
	var ar int64
	for s := range S {
		own, in := stageParams(mc, s, S)
		for k := range P {
			sent, _ := collective.AllreduceVolume(k, P, own, 4)
			ar += sent
		}
		if in > 0 {
			for k := range P {
				sent, _ := collective.AllreduceVolume(k*S+s, S*P, in, 4)
				ar += sent
			}
		}
	}
	v.Train[metrics.PhaseGrad] = ar
	return v
}

// stageParams returns the number of weights stage s of stages reduces over
// its pipelines (own) and, for GCNII, the replicated input layer's (in).
func stageParams(mc model.DeepConfig, s, stages int) (own, in int) {
	count := func(ps []*model.Param) int {
		n := 0
		for _, p := range ps {
			n += len(p.W)
		}
		return n
	}
	r := rand.New(rand.NewPCG(0, 0))
	lin := count(model.NewLinear(mc.In, mc.Hidden, r, nil).Params())
	if mc.Kind == model.ConvGCNII {
		in = lin
	} else if s == 0 {
		own += lin
	}
	lo, hi := Layers(mc.Layers, stages, s)
	for l := lo; l < hi; l++ {
		own += count(model.NewConv(mc, l, r, nil).Params())
	}
	if s == stages-1 {
		own += count(model.NewLinear(mc.Hidden, mc.Out, r, nil).Params())
	}
	return own, in
}

// NumParams returns the number of weights of the whole model mc.
func NumParams(mc model.DeepConfig) int {
	own, in := stageParams(mc, 0, 1)
	return own + in
}
