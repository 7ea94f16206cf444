package perfmodel

import (
	"fmt"
	"math"

	"gnnmpi/collective"
	"gnnmpi/metrics"
)

// Phases lists the modelled phases of a minibatch epoch, in epoch order.
var Phases = []string{metrics.PhaseSample, metrics.PhaseFetch, metrics.PhaseCompute, metrics.PhaseGrad}

// Node describes how ranks share a node's cores.
type Node struct {
	CoresPerNode int // 0: unknown, every rank gets a whole core
	RanksPerNode int // 0: all ranks on one node
}

// Share returns the part of a core a rank gets at p ranks:
// min(1, CoresPerNode / ranks on a node), the ranks on a node being
// min(p, RanksPerNode) (p when RanksPerNode is 0).
func (n Node) Share(p int) float64 {
	if n.CoresPerNode <= 0 {
		return 1
	}
	rpn := p
	if n.RanksPerNode > 0 {
		rpn = min(p, n.RanksPerNode)
	}
	return math.Min(1, float64(n.CoresPerNode)/float64(rpn))
}

// Traffic is the calls and bytes (max of sent and received) of one kind of
// call on one rank in one epoch: the metrics' Traffic.
type Traffic = metrics.Traffic

// Workload is what one epoch does at P ranks, on the slowest rank: calls
// and bytes by phase and kind, and the units of compute.
type Workload struct {
	P         int
	Batches   float64                     // minibatches per rank
	Seeds     float64                     // training seeds per rank (|train| / P)
	FetchRows float64                     // feature rows a rank fetches (its own included)
	Comm      map[string]map[Kind]Traffic // phase → kind → traffic (max over ranks)
	Source    string                      // where the workload came from
}

// Run is a measured run: its workload and what it measured per epoch.
type Run struct {
	Name string
	Workload
	Overlap      bool
	PhaseSeconds map[string]float64 // median seconds per phase, slowest rank
	CommSeconds  map[string]float64 // seconds inside collectives per phase, slowest rank
	EpochSeconds float64            // median epoch seconds
}

// units returns the regressors of phase ph, each divided by share (the
// part of a core the rank gets): a constant per epoch, and the phase's
// work: the seeds a rank samples and trains (sample, compute), the rows it
// gathers (fetch), or the collective calls it makes (grad: the CPU of each
// call and the wait for the slowest rank, none with one rank).
func units(ph string, w *Workload, share float64) []float64 {
	var x float64
	switch ph {
	case metrics.PhaseFetch:
		x = w.FetchRows
	case metrics.PhaseGrad:
		if w.P > 1 {
			for _, t := range w.Comm[ph] {
				x += t.Calls
			}
		}
	default:
		x = w.Seeds
	}
	return []float64{1 / share, x / share}
}

// UnitNames names the coefficients of PhaseFit.Gamma per phase.
func UnitNames(ph string) []string {
	switch ph {
	case metrics.PhaseFetch:
		return []string{"const", "row"}
	case metrics.PhaseGrad:
		return []string{"const", "call"}
	}
	return []string{"const", "seed"}
}

// PhaseFit is the fitted compute of one phase: the metrics' PhaseFit.
type PhaseFit = metrics.PhaseFit

// Compute is the fitted compute model.
type Compute struct {
	Node Node // the node of the fitting runs
	// Theta is the contention exponent: a rank computes at Share(p)^Theta
	// of a core. 1 when the ranks on a node compete for its cores all the
	// time; below 1 when some wait (in collectives, yielding the core)
	// while others compute, as oversubscribed ranks do.
	Theta  float64
	Phases map[string]PhaseFit // by phase
}

// share is the part of a core a rank gets at p ranks on node.
func (c *Compute) share(node Node, p int) float64 { return math.Pow(node.Share(p), c.Theta) }

// MeasuredCompute returns a run's compute seconds in phase ph under network
// net: the phase's seconds less the time net predicts for its collectives,
// never negative. What the collectives measured beyond that prediction
// (waiting for the slowest rank, packing, a descheduled peer) counts as
// the phase's compute, so the fit learns it from the units.
func (r *Run) MeasuredCompute(net *Network, ph string) float64 {
	comm := 0.0
	for k, tr := range r.Comm[ph] {
		comm += net.Time(k, r.P, tr.Calls, tr.Bytes)
	}
	return math.Max(0, r.PhaseSeconds[ph]-comm)
}

// thetaSteps is the grid FitCompute searches Theta over: 0, 1/20, …, 1.
const thetaSteps = 20

// FitCompute fits c_φ and γ_φ ≥ 0 per phase by least squares over runs
// measured on node under network net (one row per run), and the contention
// exponent Theta: of a grid over [0, 1], the value whose fit predicts the
// runs' epochs with the least sum of squared relative errors. It returns
// an error when a phase has more parameters than there are runs.
func FitCompute(runs []Run, node Node, net *Network) (*Compute, error) {
	var best *Compute
	bestErr := math.Inf(1)
	for i := 0; i <= thetaSteps; i++ {
		c, err := fitAt(runs, node, net, float64(i)/thetaSteps)
		if err != nil {
			return nil, err
		}
		e := 0.0
		for j := range runs {
			pr := c.Predict(net, &runs[j].Workload, node, runs[j].Overlap)
			d := pr.Epoch/runs[j].EpochSeconds - 1
			e += d * d
		}
		if e < bestErr {
			best, bestErr = c, e
		}
	}
	return best, nil
}

// fitAt fits the phases with the contention exponent theta.
func fitAt(runs []Run, node Node, net *Network, theta float64) (*Compute, error) {
	c := &Compute{Node: node, Theta: theta, Phases: map[string]PhaseFit{}}
	for _, ph := range Phases {
		if len(runs) < len(UnitNames(ph)) {
			return nil, fmt.Errorf("perfmodel: the %s phase has %d parameters and there are %d fitting runs: %w", ph, len(UnitNames(ph)), len(runs), ErrTooFewRows)
		}
		rows := make([][]float64, len(runs))
		b := make([]float64, len(runs))
		for i := range runs {
			rows[i] = units(ph, &runs[i].Workload, c.share(node, runs[i].P))
			b[i] = runs[i].MeasuredCompute(net, ph)
		}
		x, r2, err := NonNegLeastSquares(rows, b)
		if err != nil {
			return nil, fmt.Errorf("perfmodel: fitting %s: %w", ph, err)
		}
		c.Phases[ph] = PhaseFit{Gamma: x, R2: r2}
	}
	return c, nil
}

// PhaseTime is one phase's predicted seconds: the metrics' PhaseTime.
type PhaseTime = metrics.PhaseTime

// Prediction is the predicted epoch at P ranks.
type Prediction struct {
	P      int
	Phases map[string]PhaseTime
	Loop   float64 // compute + grad
	Loader float64 // sample + fetch
	Epoch  float64
	Source string // the workload's source
}

// Predict predicts the epoch of workload w on node with network net. With
// overlap the loader runs beside the loop: epoch = loop + max(0, loader −
// loop); without, epoch = loop + loader.
func (c *Compute) Predict(net *Network, w *Workload, node Node, overlap bool) Prediction {
	pr := Prediction{P: w.P, Phases: map[string]PhaseTime{}, Source: w.Source}
	share := c.share(node, w.P)
	for _, ph := range Phases {
		var t PhaseTime
		for k, tr := range w.Comm[ph] {
			t.Comm += net.Time(k, w.P, tr.Calls, tr.Bytes)
		}
		u := units(ph, w, share)
		for j, g := range c.Phases[ph].Gamma {
			t.Compute += g * u[j]
		}
		pr.Phases[ph] = t
	}
	sum := func(phs ...string) float64 {
		s := 0.0
		for _, ph := range phs {
			s += pr.Phases[ph].Comm + pr.Phases[ph].Compute
		}
		return s
	}
	pr.Loop, pr.Loader = sum(metrics.PhaseCompute, metrics.PhaseGrad), sum(metrics.PhaseSample, metrics.PhaseFetch)
	if overlap {
		pr.Epoch = pr.Loop + math.Max(0, pr.Loader-pr.Loop)
	} else {
		pr.Epoch = pr.Loop + pr.Loader
	}
	return pr
}

// Batches returns the minibatches per rank per epoch at p ranks for
// trainVertices training vertices split evenly (the global shuffle's rule,
// and the local one's when the partition balances the training vertices):
// ⌈⌈N/p⌉ / b⌉, at least 1, where b is batch per rank, or ⌈global/p⌉ when
// global > 0 (--global-batch-size).
func Batches(p, trainVertices, batch, global int) int {
	if global > 0 {
		batch = (global + p - 1) / p
	}
	n := (trainVertices + p - 1) / p
	return max(1, (n+batch-1)/batch)
}

// Basis returns the extrapolation basis at p for n observations: the first
// min(n, 3) of {1, 1/p, log2 p}. (1, 1/p and (p−1)/p are linearly
// dependent, so (p−1)/p, the share of a volume that crosses ranks, is
// covered by 1 and 1/p.)
func Basis(p, n int) []float64 {
	b := []float64{1, 1 / float64(p), math.Log2(float64(p))}
	return b[:min(n, len(b))]
}

// Extrapolate fits a per-minibatch law on Basis to each quantity of the
// runs (calls and bytes per phase and kind, fetched rows) and returns the
// workload at p with batches minibatches per rank. The grad allreduce
// bytes are exact instead: calls × collective.AllreduceVolume of params
// float32 gradients (busiest rank). Negative extrapolations become 0.
func Extrapolate(runs []Run, p, batches int, seeds float64, params int) (*Workload, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("perfmodel: no runs to extrapolate from")
	}
	ps := make([]int, len(runs))
	for i, r := range runs {
		ps[i] = r.P
	}
	comms := make([]map[string]map[Kind]Traffic, len(runs))
	per := make([]float64, len(runs))
	rows := make([]float64, len(runs))
	for i, r := range runs {
		comms[i], per[i] = r.Comm, math.Max(r.Batches, 1)
		rows[i] = r.FetchRows / per[i]
	}
	w := &Workload{P: p, Batches: float64(batches), Seeds: seeds, Source: fmt.Sprintf("extrapolated from p=%v", sortedCopy(ps))}
	fetched, err := lawAt(ps, rows, p)
	if err != nil {
		return nil, err
	}
	w.FetchRows = fetched * float64(batches)
	w.Comm, err = extrapolateComm(Phases, comms, ps, per, p, float64(batches), func(ph string, k Kind, calls float64) (float64, bool) {
		if ph != metrics.PhaseGrad || k != Allreduce || params <= 0 {
			return 0, false
		}
		v, _ := collective.AllreduceVolume(0, p, params, 4)
		return calls * float64(v), true
	})
	if err != nil {
		return nil, err
	}
	return w, nil
}
