package perfmodel

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"gnnmpi/collective"
	"gnnmpi/metrics"
)

func TestLatency(t *testing.T) {
	for _, k := range Kinds {
		require.Zero(t, Latency(k, 1), k)
	}
	require.Equal(t, 6.0, Latency(Allreduce, 8))
	require.Equal(t, 8.0, Latency(Allreduce, 9))
	require.Equal(t, 3.0, Latency(Allgatherv, 8))
	require.Equal(t, 10.0, Latency(Bcast, 1024))
	require.Equal(t, 1.0, Latency(Barrier, 2))
	require.Equal(t, 7.0, Latency(Alltoallv, 8))
	require.Equal(t, 1.0, Latency(Sendrecv, 64))
}

func TestShare(t *testing.T) {
	require.Equal(t, 1.0, Node{}.Share(8))
	require.Equal(t, 1.0, Node{CoresPerNode: 2}.Share(2))
	require.Equal(t, 0.5, Node{CoresPerNode: 2}.Share(4))
	require.Equal(t, 0.25, Node{CoresPerNode: 2}.Share(8))
	require.Equal(t, 1.0, Node{CoresPerNode: 64, RanksPerNode: 8}.Share(1024))
	require.Equal(t, 0.5, Node{CoresPerNode: 4, RanksPerNode: 8}.Share(1024))
}

func synthNet(t *testing.T, noise float64) (*Network, map[Kind]Link) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[Kind]Link{}
	var ss []Sample
	for i, k := range Kinds {
		l := Link{Alpha: float64(i+1) * 1e-6, Beta: float64(i+1) / 1e10}
		if k == Barrier {
			l.Beta = 0
		}
		want[k] = l
		for _, p := range []int{2, 4, 8} {
			for b := 16.0; b <= 1<<24; b *= 4 {
				if k == Barrier {
					b = 0
				}
				s := l.Alpha*Latency(k, p) + l.Beta*b
				ss = append(ss, Sample{Kind: k, P: p, Bytes: b, Seconds: s * (1 + noise*rng.NormFloat64())})
				if k == Barrier {
					break
				}
			}
		}
	}
	n, err := FitNetwork("synth", ss)
	require.NoError(t, err)
	return n, want
}

func TestFitNetworkExact(t *testing.T) {
	n, want := synthNet(t, 0)
	require.NoError(t, n.Validate())
	for k, w := range want {
		got := n.Links[k]
		require.InEpsilon(t, w.Alpha, got.Alpha, 1e-6, k)
		if w.Beta > 0 {
			require.InEpsilon(t, w.Beta, got.Beta, 1e-6, k)
		}
		require.InDelta(t, 1, got.R2, 1e-9, k)
	}
}

func TestFitNetworkNoise(t *testing.T) {
	n, want := synthNet(t, 0.05)
	for k, w := range want {
		got := n.Links[k]
		require.InEpsilon(t, w.Alpha, got.Alpha, 0.25, k)
		if w.Beta > 0 {
			require.InEpsilon(t, w.Beta, got.Beta, 0.05, k)
		}
	}
}

func TestNonNegative(t *testing.T) {
	// b = 2 − 1·x: the unconstrained slope is negative; NNLS fixes it at 0.
	rows := [][]float64{{1, 0}, {1, 1}, {1, 2}}
	x, _, err := NonNegLeastSquares(rows, []float64{2, 1, 0})
	require.NoError(t, err)
	require.Zero(t, x[1])
	require.InDelta(t, 1, x[0], 1e-12)
	_, _, err = NonNegLeastSquares(rows[:1], []float64{1})
	require.ErrorIs(t, err, ErrTooFewRows)
}

func TestPresets(t *testing.T) {
	for _, name := range PresetNames() {
		n, err := Preset(name)
		require.NoError(t, err)
		require.NoError(t, n.Validate())
	}
	n, _ := Preset("ib-hdr100")
	// 1 MiB allreduce at 4 ranks: 4 latency steps and 1 MiB at 12 GB/s.
	require.InEpsilon(t, 4*1.5e-6+float64(1<<20)/12e9, n.Time(Allreduce, 4, 1, 1<<20), 1e-12)
	_, err := Preset("infiniband")
	require.ErrorContains(t, err, "ib-hdr100")
}

// synthRuns makes runs whose compute follows a known law with contention
// exponent theta, and whose collectives take what net predicts.
func synthRuns(node Node, net *Network, theta float64, ps []int, noise float64) []Run {
	rng := rand.New(rand.NewPCG(3, 4))
	gamma := map[string][]float64{metrics.PhaseSample: {0.001, 2e-5}, metrics.PhaseFetch: {0.0005, 2e-6}, metrics.PhaseCompute: {0.01, 1e-4}, metrics.PhaseGrad: {0, 0.0001}}
	var runs []Run
	for _, p := range ps {
		b := float64(Batches(p, 10000, 64, 0))
		w := Workload{P: p, Batches: b, Seeds: 10000 / float64(p), FetchRows: b * (500 + 300*float64(p-1)/float64(p)),
			Comm: map[string]map[Kind]Traffic{metrics.PhaseGrad: {Allreduce: {Calls: b, Bytes: b * 4e5}}, metrics.PhaseFetch: {Alltoallv: {Calls: b, Bytes: b * 1e5}}}}
		r := Run{Workload: w, PhaseSeconds: map[string]float64{}, CommSeconds: map[string]float64{}}
		share := math.Pow(node.Share(p), theta)
		for ph, g := range gamma {
			u := units(ph, &w, share)
			s := 0.0
			for j := range g {
				s += g[j] * u[j]
			}
			comm := 0.0
			for k, tr := range w.Comm[ph] {
				comm += net.Time(k, p, tr.Calls, tr.Bytes)
			}
			r.CommSeconds[ph] = comm
			r.PhaseSeconds[ph] = s*(1+noise*rng.NormFloat64()) + comm
			r.EpochSeconds += r.PhaseSeconds[ph]
		}
		runs = append(runs, r)
	}
	return runs
}

func TestFitCompute(t *testing.T) {
	node := Node{CoresPerNode: 2}
	net, _ := Preset("25gbe")
	runs := synthRuns(node, net, 0.75, []int{1, 2, 3, 4, 8}, 0)
	c, err := FitCompute(runs, node, net)
	require.NoError(t, err)
	require.Equal(t, 0.75, c.Theta)
	require.InDelta(t, 1e-4, c.Phases[metrics.PhaseCompute].Gamma[1], 1e-12)
	require.InDelta(t, 0.01, c.Phases[metrics.PhaseCompute].Gamma[0], 1e-12)
	require.InDelta(t, 2e-6, c.Phases[metrics.PhaseFetch].Gamma[1], 1e-12)
	require.InDelta(t, 1e-4, c.Phases[metrics.PhaseGrad].Gamma[1], 1e-12)
	// The fit reproduces every run's compute and epoch.
	for _, r := range runs {
		pr := c.Predict(net, &r.Workload, node, false)
		for _, ph := range Phases {
			require.InDelta(t, r.MeasuredCompute(net, ph), pr.Phases[ph].Compute, 1e-12, ph)
		}
		require.InEpsilon(t, r.EpochSeconds, pr.Epoch, 1e-9)
	}
	noisy, err := FitCompute(synthRuns(node, net, 1, []int{1, 2, 3, 4, 6, 8, 12, 16}, 0.02), node, net)
	require.NoError(t, err)
	require.InEpsilon(t, 1e-4, noisy.Phases[metrics.PhaseCompute].Gamma[1], 0.1)
	require.InDelta(t, 1, noisy.Theta, 0.1)

	_, err = FitCompute(runs[:1], node, net)
	require.ErrorIs(t, err, ErrTooFewRows)
}

func TestPredictOverlap(t *testing.T) {
	net, _ := Preset("25gbe")
	c := &Compute{Theta: 1, Phases: map[string]PhaseFit{metrics.PhaseSample: {Gamma: []float64{1, 0}}, metrics.PhaseFetch: {Gamma: []float64{0, 0}}, metrics.PhaseCompute: {Gamma: []float64{3, 0}}, metrics.PhaseGrad: {Gamma: []float64{0, 0}}}}
	w := &Workload{P: 4, Batches: 10, Comm: map[string]map[Kind]Traffic{metrics.PhaseGrad: {Allreduce: {Calls: 10, Bytes: 2.9e9}}}}
	pr := c.Predict(net, w, Node{}, true)
	comm := 10*4*15e-6 + 1.0
	require.InDelta(t, comm, pr.Phases[metrics.PhaseGrad].Comm, 1e-12)
	require.InDelta(t, 3+comm, pr.Epoch, 1e-12) // loader (1 s) hidden
	pr = c.Predict(net, w, Node{}, false)
	require.InDelta(t, 4+comm, pr.Epoch, 1e-12)
}

func TestExtrapolate(t *testing.T) {
	// Per-minibatch laws: fetch bytes 1000·(p−1)/p, calls 2, rows 500+300/p;
	// grad bytes exact from the parameter count.
	const params = 1000
	var runs []Run
	for _, p := range []int{1, 2, 4} {
		b := float64(Batches(p, 10000, 64, 0))
		w := Workload{P: p, Batches: b, FetchRows: b * (500 + 300/float64(p)), Comm: map[string]map[Kind]Traffic{
			metrics.PhaseFetch: {Alltoallv: {Calls: 2 * b, Bytes: b * 1000 * float64(p-1) / float64(p)}},
			metrics.PhaseGrad:  {Allreduce: {Calls: b, Bytes: 0}},
		}}
		runs = append(runs, Run{Workload: w})
	}
	p := 1024
	nb := Batches(p, 10000, 64, 0)
	w, err := Extrapolate(runs, p, nb, 10000/float64(p), params)
	require.InEpsilon(t, 10000/float64(p), w.Seeds, 1e-12)
	require.NoError(t, err)
	b := float64(nb)
	require.InEpsilon(t, b*(500+300/float64(p)), w.FetchRows, 1e-9)
	require.InEpsilon(t, 2*b, w.Comm[metrics.PhaseFetch][Alltoallv].Calls, 1e-9)
	require.InEpsilon(t, b*1000*float64(p-1)/float64(p), w.Comm[metrics.PhaseFetch][Alltoallv].Bytes, 1e-9)
	v, _ := collective.AllreduceVolume(0, p, params, 4)
	require.InEpsilon(t, b*float64(v), w.Comm[metrics.PhaseGrad][Allreduce].Bytes, 1e-9)
	require.Equal(t, 1, Batches(1024, 10000, 64, 0))
	require.Equal(t, 3, Batches(2, 140, 32, 0))
	require.Equal(t, 3, Batches(4, 140, 0, 64)) // global 64: 16 per rank, 35 vertices
	require.False(t, math.IsNaN(w.Batches))
}

// FullUnits counts the critical path of each layout; FitFull recovers a
// known law (θ on the grid) and ExtrapolateFull a known traffic law.
func TestFullModel(t *testing.T) {
	require.Equal(t, 2*1000.0/4, FullUnits(2, 1000, 4, 1, 1))             // graph: L·n/p
	require.Equal(t, 2*1000.0*(4+4-1)/(4*4), FullUnits(2, 1000, 1, 4, 4)) // pipe, 4 stages, 4 chunks
	require.Equal(t, 2*500.0*(3+2-1)/(2*3), FullUnits(2, 1000, 2, 2, 3))  // hybrid: 2 pipelines of 2 stages
	require.Equal(t, 7.0/4, FullSteps(4, 4))
	// The stage-to-stage transfers count once per schedule step.
	net0, _ := Preset("25gbe")
	w0 := FullWorkload{P: 4, Steps: 2, Comm: map[string]map[Kind]Traffic{"act": {Sendrecv: {Calls: 1, Bytes: 1e6}}, "grad": {Allreduce: {Calls: 1, Bytes: 1e6}}}}
	ct := w0.commTime(net0)
	require.InDelta(t, 2*net0.Time(Sendrecv, 4, 1, 1e6), ct["act"], 1e-15)
	require.InDelta(t, net0.Time(Allreduce, 4, 1, 1e6), ct["grad"], 1e-15)
	node := Node{CoresPerNode: 2}
	net, _ := Preset("25gbe")
	var runs []FullRun
	for _, p := range []int{1, 2, 4, 8} {
		w := FullWorkload{P: p, Units: FullUnits(8, 34000, 1, p, 4), Steps: FullSteps(p, 4), Comm: map[string]map[Kind]Traffic{
			"act":  {Sendrecv: {Calls: 4 * float64(p-1) / float64(p), Bytes: 1e6 * float64(p-1) / float64(p)}},
			"grad": {Allreduce: {Calls: 1, Bytes: 4e5}},
		}}
		comm := 0.0
		for _, t := range w.commTime(net) {
			comm += t
		}
		runs = append(runs, FullRun{FullWorkload: w, EpochSeconds: comm + (0.01+2e-6*w.Units)/math.Pow(node.Share(p), 0.5)})
	}
	c, err := FitFull(runs[:3], node, net)
	require.NoError(t, err)
	require.Equal(t, 0.5, c.Theta)
	require.InDelta(t, 2e-6, c.Gamma[1], 1e-12)
	pr := c.Predict(net, &runs[3].FullWorkload, node)
	require.InEpsilon(t, runs[3].EpochSeconds, pr.Epoch, 1e-9)
	w, err := ExtrapolateFull(runs[:3], 8, runs[3].Units, runs[3].Steps)
	require.NoError(t, err)
	require.InEpsilon(t, 1e6*7/8.0, w.Comm["act"][Sendrecv].Bytes, 1e-9)
	require.InEpsilon(t, 4e5, w.Comm["grad"][Allreduce].Bytes, 1e-9)
	_, err = FitFull(runs[:1], node, net)
	require.ErrorIs(t, err, ErrTooFewRows)
}
