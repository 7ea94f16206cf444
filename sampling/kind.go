package sampling

import "gnnmpi/internal/enum"

// Kind names a sampler that New, NewOn and NewBlock build. Its value is
// the name flags, configs and metrics spell. It implements flag.Value.
type Kind string

// Sampler kinds.
const (
	// KindSAGE is node-wise sampling (NodeWise): fanouts[h] neighbours
	// per vertex.
	KindSAGE Kind = "sage"
	// KindLADIES is layer-wise sampling (LayerWise): fanouts[h]
	// vertices per minibatch and layer, weighted by GCN's propagation
	// matrix.
	KindLADIES Kind = "ladies"
	// KindPlain is the per-batch node-wise baseline without matrices
	// (Plain); it reads a replicated graph only.
	KindPlain Kind = "plain"
)

// Kinds lists every sampler kind, in the order flags and errors list them.
var Kinds = []Kind{KindSAGE, KindLADIES, KindPlain}

// ParseKind returns the sampler kind named s, or an error listing the
// kinds.
func ParseKind(s string) (Kind, error) {
	return enum.Parse("sampling", "sampler", s, Kinds...)
}

// String returns the kind's name.
func (k Kind) String() string { return string(k) }

// Set sets k to the kind named s, leaving it alone when s names none (flag.Value).
func (k *Kind) Set(s string) error { return enum.Set(k, ParseKind, s) }

// Layout names where a sampler's graph lives: on every rank, or
// distributed over a grid (NewBlock). It implements flag.Value.
type Layout string

// Layouts of the sampler's graph.
const (
	// LayoutReplicated is the whole graph on every rank; sampling does no
	// communication.
	LayoutReplicated Layout = "replicated"
	// Layout15D is rows over the grid rows, replicated over the grid
	// columns (Distributed15D, Distributed15DBlock): P = Q·A by 1.5D
	// SpGEMM.
	Layout15D Layout = "1.5d"
	// Layout2D is √p×√p blocks (Distributed2D): SUMMA.
	Layout2D Layout = "2d"
)

// Layouts lists every layout, in the order flags and errors list them.
var Layouts = []Layout{LayoutReplicated, Layout15D, Layout2D}

// ParseLayout returns the layout named s, or an error listing the
// layouts.
func ParseLayout(s string) (Layout, error) {
	return enum.Parse("sampling", "topology", s, Layouts...)
}

// String returns the layout's name.
func (l Layout) String() string { return string(l) }

// Set sets l to the layout named s, leaving it alone when s names none (flag.Value).
func (l *Layout) Set(s string) error { return enum.Set(l, ParseLayout, s) }
