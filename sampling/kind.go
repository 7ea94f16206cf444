package sampling

import (
	"fmt"
	"strings"
)

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
	return parseName("sampler", s, Kinds)
}

// String returns the kind's name.
func (k Kind) String() string { return string(k) }

// Set sets k to the kind named s (flag.Value).
func (k *Kind) Set(s string) (err error) {
	*k, err = ParseKind(s)
	return err
}

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
	return parseName("topology", s, Layouts)
}

// String returns the layout's name.
func (l Layout) String() string { return string(l) }

// Set sets l to the layout named s (flag.Value).
func (l *Layout) Set(s string) (err error) {
	*l, err = ParseLayout(s)
	return err
}

// parseName returns the choice whose name is s, or an error naming what
// and listing the choices.
func parseName[T ~string](what, s string, choices []T) (T, error) {
	for _, c := range choices {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("sampling: unknown %s %q (want %s)", what, s, orNames(choices))
}

// orNames spells choices as "a, b or c".
func orNames[T ~string](choices []T) string {
	s := make([]string, len(choices))
	for i, c := range choices {
		s[i] = string(c)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
