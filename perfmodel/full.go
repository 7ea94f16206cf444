package perfmodel

import (
	"fmt"
	"math"
	"sort"

	"gnnmpi/metrics"
)

// The phases of a full-graph epoch (pipe's TrainPhases): activations and
// their gradients between stages, the halo exchange between graph parts,
// and the weight-gradient Allreduce.
var FullPhases = []string{metrics.PhaseAct, metrics.PhaseActGrad, metrics.PhaseHalo, metrics.PhaseGrad}

// FullUnits is the compute on the critical path of a full-graph epoch, in
// layer·vertex products: a pipeline of stages stages trains n/pipelines
// vertices through layers layers in chunks chunks; each stage holds
// layers/stages of the layers, and the schedule (forward and backward) is
// chunks + stages − 1 steps of one chunk on one stage:
//
//	layers · (n / pipelines) · (chunks + stages − 1) / (stages · chunks).
//
// Graph parallelism is pipelines = p, stages = chunks = 1 (layers·n/p);
// GNNPipe is stages = p, pipelines = 1.
func FullUnits(layers int, n int64, pipelines, stages, chunks int) float64 {
	return float64(layers) * float64(n) / float64(pipelines) * float64(chunks+stages-1) / float64(stages*chunks)
}

// FullWorkload is one full-graph epoch at P ranks: its compute units
// (FullUnits) and, on the busiest rank, the calls and bytes by phase and
// kind.
type FullWorkload struct {
	P     int
	Units float64
	// Steps is the pipeline's schedule length per chunk a stage handles,
	// (chunks + stages − 1) / chunks (FullSteps): a stage sends and
	// receives its chunks' activations once each, but the critical path
	// passes every boundary, so the transfers of the stage-to-stage phases
	// (act, act-grad) count Steps times. 1 without a pipeline.
	Steps  float64
	Comm   map[string]map[Kind]Traffic // phase → kind → traffic
	Source string
}

// FullSteps returns FullWorkload.Steps for a schedule of chunks chunks
// through stages stages.
func FullSteps(stages, chunks int) float64 {
	return float64(chunks+stages-1) / float64(chunks)
}

// FullRun is a measured full-graph run.
type FullRun struct {
	Name string
	FullWorkload
	EpochSeconds float64 // median epoch
}

// FullCompute is the fitted compute of a full-graph epoch: (Gamma[0] +
// Gamma[1]·units) / Share(p)^Theta seconds.
type FullCompute struct {
	Node  Node
	Theta float64
	Gamma []float64 // seconds per epoch, seconds per unit
	R2    float64
}

// commTime is what net predicts for the collectives of w by phase on the
// critical path: the stage-to-stage phases' Steps times.
func (w *FullWorkload) commTime(net *Network) map[string]float64 {
	out := map[string]float64{}
	for ph, kinds := range w.Comm {
		f := 1.0
		if (ph == metrics.PhaseAct || ph == metrics.PhaseActGrad) && w.Steps > 0 {
			f = w.Steps
		}
		for k, t := range kinds {
			out[ph] += f * net.Time(k, w.P, t.Calls, t.Bytes)
		}
	}
	return out
}

// FullPrediction is the predicted full-graph epoch at P ranks.
type FullPrediction struct {
	P       int
	Comm    map[string]float64 // seconds in collectives by phase
	Compute float64
	Epoch   float64
	Source  string
}

// Predict predicts the epoch of w on node with network net: its
// collectives' time plus the fitted compute.
func (c *FullCompute) Predict(net *Network, w *FullWorkload, node Node) FullPrediction {
	pr := FullPrediction{P: w.P, Comm: w.commTime(net), Source: w.Source}
	pr.Compute = (c.Gamma[0] + c.Gamma[1]*w.Units) / math.Pow(node.Share(w.P), c.Theta)
	pr.Epoch = pr.Compute
	for _, t := range pr.Comm {
		pr.Epoch += t
	}
	return pr
}

// FitFull fits the full-graph compute on runs measured on node under
// network net: each run's epoch less its collectives' predicted time is
// (c + γ·units)/Share(p)^θ, c, γ ≥ 0 by least squares, θ on the grid of
// FitCompute (the value whose fit predicts the epochs best). It needs two
// runs.
func FitFull(runs []FullRun, node Node, net *Network) (*FullCompute, error) {
	if len(runs) < 2 {
		return nil, fmt.Errorf("perfmodel: a full-graph fit has 2 parameters and there are %d runs: %w", len(runs), ErrTooFewRows)
	}
	var best *FullCompute
	bestErr := math.Inf(1)
	for i := 0; i <= thetaSteps; i++ {
		theta := float64(i) / thetaSteps
		rows := make([][]float64, len(runs))
		b := make([]float64, len(runs))
		for j := range runs {
			s := math.Pow(node.Share(runs[j].P), theta)
			rows[j] = []float64{1 / s, runs[j].Units / s}
			comm := 0.0
			for _, t := range runs[j].commTime(net) {
				comm += t
			}
			b[j] = math.Max(0, runs[j].EpochSeconds-comm)
		}
		x, r2, err := NonNegLeastSquares(rows, b)
		if err != nil {
			return nil, fmt.Errorf("perfmodel: fitting the full-graph compute: %w", err)
		}
		c := &FullCompute{Node: node, Theta: theta, Gamma: x, R2: r2}
		e := 0.0
		for j := range runs {
			d := c.Predict(net, &runs[j].FullWorkload, node).Epoch/runs[j].EpochSeconds - 1
			e += d * d
		}
		if e < bestErr {
			best, bestErr = c, e
		}
	}
	return best, nil
}

// ExtrapolateFull returns the full-graph workload at p with the given
// units and schedule steps: every phase's calls and bytes per kind fitted over the runs' p on
// Basis (as Extrapolate does per minibatch). Negative extrapolations
// become 0.
func ExtrapolateFull(runs []FullRun, p int, units, steps float64) (*FullWorkload, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("perfmodel: no runs to extrapolate from")
	}
	ps := make([]int, len(runs))
	for i, r := range runs {
		ps[i] = r.P
	}
	w := &FullWorkload{P: p, Units: units, Steps: steps, Comm: map[string]map[Kind]Traffic{}, Source: fmt.Sprintf("extrapolated from p=%v", sortedCopy(ps))}
	comms := make([]map[string]map[Kind]Traffic, len(runs))
	per := make([]float64, len(runs))
	for i, r := range runs {
		comms[i], per[i] = r.Comm, 1
	}
	var err error
	if w.Comm, err = extrapolateComm(FullPhases, comms, ps, per, p, 1, nil); err != nil {
		return nil, err
	}
	return w, nil
}

// extrapolateComm fits, for every phase of phases and kind of call in
// comms (one per run, at ps), the calls and bytes divided by per[i] on
// Basis (lawAt) and returns their values at p times scale. exact, when
// not nil, may give a kind's bytes from its extrapolated calls instead.
func extrapolateComm(phases []string, comms []map[string]map[Kind]Traffic, ps []int, per []float64, p int, scale float64,
	exact func(ph string, k Kind, calls float64) (float64, bool)) (map[string]map[Kind]Traffic, error) {
	out := map[string]map[Kind]Traffic{}
	law := func(q func(c map[string]map[Kind]Traffic) float64) (float64, error) {
		ys := make([]float64, len(comms))
		for i, c := range comms {
			ys[i] = q(c) / per[i]
		}
		v, err := lawAt(ps, ys, p)
		return v * scale, err
	}
	for _, ph := range phases {
		kinds := map[Kind]bool{}
		for _, c := range comms {
			for k := range c[ph] {
				kinds[k] = true
			}
		}
		for k := range kinds {
			var t Traffic
			var err error
			if t.Calls, err = law(func(c map[string]map[Kind]Traffic) float64 { return c[ph][k].Calls }); err != nil {
				return nil, err
			}
			var ok bool
			if exact != nil {
				t.Bytes, ok = exact(ph, k, t.Calls)
			}
			if !ok {
				if t.Bytes, err = law(func(c map[string]map[Kind]Traffic) float64 { return c[ph][k].Bytes }); err != nil {
					return nil, err
				}
			}
			if out[ph] == nil {
				out[ph] = map[Kind]Traffic{}
			}
			out[ph][k] = t
		}
	}
	return out, nil
}

// lawAt fits ys (one per ps) on Basis, as many terms as distinct p, and
// returns its value at p, at least 0.
func lawAt(ps []int, ys []float64, p int) (float64, error) {
	sorted := sortedCopy(ps)
	distinct := 0
	for i := range sorted {
		if i == 0 || sorted[i] != sorted[i-1] {
			distinct++
		}
	}
	rows := make([][]float64, len(ps))
	for i, q := range ps {
		rows[i] = Basis(q, distinct)
	}
	x, _, err := leastSquares(rows, ys, false)
	if err != nil {
		return 0, err
	}
	v := 0.0
	for j, b := range Basis(p, distinct) {
		v += x[j] * b
	}
	return math.Max(0, v), nil
}

func sortedCopy(ps []int) []int {
	s := append([]int(nil), ps...)
	sort.Ints(s)
	return s
}
