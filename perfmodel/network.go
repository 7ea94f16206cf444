package perfmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"gnnmpi/metrics"
)

// Kind is a kind of communication call as the network model sees it.
type Kind string

// The kinds of the network model. Sendrecv stands for collective's send and
// recv (a point-to-point message); Split is counted as an allgatherv.
const (
	Allreduce  Kind = "allreduce"
	Alltoallv  Kind = "alltoallv"
	Allgatherv Kind = "allgatherv"
	Bcast      Kind = "bcast"
	Sendrecv   Kind = "sendrecv"
	Barrier    Kind = "barrier"
)

// Kinds lists every Kind, in the order tables print them.
var Kinds = []Kind{Allreduce, Alltoallv, Allgatherv, Bcast, Sendrecv, Barrier}

// KindOf maps the name of a collective.OpKind ("allreduce", "send", "split",
// ...) to the model's Kind; ok is false for an unknown name.
func KindOf(op string) (k Kind, ok bool) {
	switch op {
	case "allreduce", "alltoallv", "allgatherv", "bcast", "barrier":
		return Kind(op), true
	case "send", "recv":
		return Sendrecv, true
	case "split":
		return Allgatherv, true
	}
	return "", false
}

// ceilLog2 returns ⌈log2 p⌉ for p ≥ 1.
func ceilLog2(p int) int {
	if p <= 1 {
		return 0
	}
	return bits.Len(uint(p - 1))
}

// Latency returns L_k(p), the latency-bound steps of one call of kind k
// among p ranks: allreduce 2⌈log2 p⌉ (reduce-scatter then allgather by
// recursive halving and doubling), allgatherv, bcast and barrier ⌈log2 p⌉,
// alltoallv p−1 (pairwise exchange), sendrecv 1; 0 at p = 1 for every kind.
// It panics on an unknown kind or p < 1.
func Latency(k Kind, p int) float64 {
	if p < 1 {
		panic("perfmodel: p < 1")
	}
	if p == 1 {
		return 0
	}
	switch k {
	case Allreduce:
		return float64(2 * ceilLog2(p))
	case Allgatherv, Bcast, Barrier:
		return float64(ceilLog2(p))
	case Alltoallv:
		return float64(p - 1)
	case Sendrecv:
		return 1
	}
	panic("perfmodel: unknown kind " + string(k))
}

// Link is the fitted (or nominal) cost of one kind of call: the metrics'
// Link.
type Link = metrics.Link

// Network is a network model: a Link per kind. Its JSON form, the file of
// `gnnmpi predict --calibrate --out FILE`, is the metrics' Network.
type Network struct {
	Name   string
	Source string // "preset" or "calibration"
	Links  map[Kind]Link
	// Samples are the calibration measurements (absent for a preset).
	Samples []Sample
}

// Sample is one calibration measurement: a call of Kind among P ranks that
// moved Bytes on the busiest rank took Seconds (the slowest rank's median).
type Sample struct {
	Kind    Kind
	P       int
	Bytes   float64
	Seconds float64
}

// MarshalJSON writes n as a metrics.Network.
func (n Network) MarshalJSON() ([]byte, error) {
	r := metrics.Network{Name: n.Name, Source: n.Source}
	if n.Links != nil {
		r.Links = make(map[string]Link, len(n.Links))
		for k, l := range n.Links {
			r.Links[string(k)] = l
		}
	}
	for _, s := range n.Samples {
		r.Samples = append(r.Samples, metrics.NetworkSample{Kind: string(s.Kind), P: s.P, Bytes: s.Bytes, Seconds: s.Seconds})
	}
	return json.Marshal(r)
}

// UnmarshalJSON reads n from a metrics.Network.
func (n *Network) UnmarshalJSON(b []byte) error {
	var r metrics.Network
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	*n = Network{Name: r.Name, Source: r.Source}
	if r.Links != nil {
		n.Links = make(map[Kind]Link, len(r.Links))
		for k, l := range r.Links {
			n.Links[Kind(k)] = l
		}
	}
	for _, s := range r.Samples {
		n.Samples = append(n.Samples, Sample{Kind: Kind(s.Kind), P: s.P, Bytes: s.Bytes, Seconds: s.Seconds})
	}
	return nil
}

// Time returns the seconds of calls calls of kind k among p ranks that move
// bytes bytes in total on a rank: calls·α_k·L_k(p) + β_k·bytes. A kind the
// network lacks costs nothing (Validate reports it).
func (n *Network) Time(k Kind, p int, calls, bytes float64) float64 {
	l := n.Links[k]
	return calls*l.Alpha*Latency(k, p) + l.Beta*bytes
}

// Validate checks that n has a Link for every kind, with α, β ≥ 0.
func (n *Network) Validate() error {
	for _, k := range Kinds {
		l, ok := n.Links[k]
		if !ok {
			return fmt.Errorf("perfmodel: network %q has no %s link", n.Name, k)
		}
		if l.Alpha < 0 || l.Beta < 0 {
			return fmt.Errorf("perfmodel: network %q: %s has a negative α or β", n.Name, k)
		}
	}
	return nil
}

// FitNetwork fits α_k, β_k ≥ 0 per kind by least squares (of relative
// residuals: timings span orders of magnitude) on the rows
// [L_k(p), V] → seconds of the samples of that kind (samples at several p
// are pooled). Barrier moves no bytes: its β is 0. A kind with no samples
// is an error, as is one with fewer samples than parameters.
func FitNetwork(name string, samples []Sample) (*Network, error) {
	by := map[Kind][]Sample{}
	for _, s := range samples {
		if !slices.Contains(Kinds, s.Kind) {
			return nil, fmt.Errorf("perfmodel: unknown kind %q in samples", s.Kind)
		}
		by[s.Kind] = append(by[s.Kind], s)
	}
	n := &Network{Name: name, Source: "calibration", Links: map[Kind]Link{}, Samples: samples}
	for _, k := range Kinds {
		ss := by[k]
		if len(ss) == 0 {
			return nil, fmt.Errorf("perfmodel: no calibration samples of %s", k)
		}
		rows := make([][]float64, len(ss))
		b := make([]float64, len(ss))
		for i, s := range ss {
			rows[i] = []float64{Latency(k, s.P), s.Bytes}
			if k == Barrier {
				rows[i] = rows[i][:1]
			}
			b[i] = s.Seconds
		}
		// Relative residuals: each row is divided by its seconds, so that
		// the microsecond calls weigh as much as the large ones.
		wrows := make([][]float64, len(rows))
		wb := make([]float64, len(b))
		for i, row := range rows {
			w := 1 / math.Max(b[i], 1e-12)
			wrows[i] = make([]float64, len(row))
			for j, v := range row {
				wrows[i][j] = v * w
			}
			wb[i] = b[i] * w
		}
		x, _, err := NonNegLeastSquares(wrows, wb)
		if err != nil {
			return nil, fmt.Errorf("perfmodel: fitting %s: %w", k, err)
		}
		l := Link{Alpha: x[0], R2: rSquared(rows, b, x), Samples: len(ss)}
		if len(x) > 1 {
			l.Beta = x[1]
		}
		n.Links[k] = l
	}
	return n, nil
}

// nominal makes a preset with the same α and β for every kind.
func nominal(name string, alpha, gbps float64) *Network {
	n := &Network{Name: name, Source: "preset", Links: map[Kind]Link{}}
	for _, k := range Kinds {
		l := Link{Alpha: alpha, Beta: 1 / (gbps * 1e9)}
		if k == Barrier {
			l.Beta = 0
		}
		n.Links[k] = l
	}
	return n
}

// Presets are nominal networks, not measured here: α is a typical MPI
// ping-pong half-round-trip latency per hop and 1/β a typical large-message
// MPI bandwidth, as OSU Micro-Benchmarks (osu_latency, osu_bw) results are
// commonly published for these links:
//
//   - "ib-hdr100": 100 Gb/s InfiniBand HDR100 (e.g. ConnectX-6), about
//     1.5 µs and 12 GB/s of the 12.5 GB/s line rate.
//   - "25gbe": 25 Gb/s Ethernet with MPI over TCP, about 15 µs and 2.9 GB/s
//     of the 3.125 GB/s line rate.
//   - "10gbe": 10 Gb/s Ethernet with MPI over TCP, about 25 µs and
//     1.15 GB/s of the 1.25 GB/s line rate.
//
// Every kind gets the same α and β (the algorithms' step counts are in
// Latency, their volumes in the bytes).
var presets = map[string]func() *Network{
	"ib-hdr100": func() *Network { return nominal("ib-hdr100", 1.5e-6, 12) },
	"25gbe":     func() *Network { return nominal("25gbe", 15e-6, 2.9) },
	"10gbe":     func() *Network { return nominal("10gbe", 25e-6, 1.15) },
}

// PresetNames returns the names Preset knows, sorted.
func PresetNames() []string {
	var out []string
	for k := range presets {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Preset returns the named nominal network (see presets), or an error that
// lists the known names.
func Preset(name string) (*Network, error) {
	f, ok := presets[name]
	if !ok {
		return nil, fmt.Errorf("perfmodel: unknown network preset %q (known: %s)", name, strings.Join(PresetNames(), ", "))
	}
	return f(), nil
}
