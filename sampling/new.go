package sampling

import (
	"fmt"

	"gnnmpi/collective"
	"gnnmpi/internal/enum"
	"gnnmpi/sparse"
)

// New returns the sampler of the given kind over the graph adj: KindSAGE
// (NodeWise, fanouts per vertex), KindLADIES (LayerWise, fanouts per
// minibatch and layer) or KindPlain (Plain, the per-batch baseline),
// replicated when g is nil, else distributed in the 1.5D layout of g
// (Distributed15D, collective over g.Comm). adj is the whole graph on
// every rank; a distributed sampler keeps only its block of it. For a
// topology built from a row block, use NewOn.
func New(kind Kind, adj *sparse.CSR, fanouts []int, g *collective.Grid) (Sampler, error) {
	if err := checkAdj(adj); err != nil {
		return nil, err
	}
	switch kind {
	case KindSAGE:
		if g == nil {
			return NewNodeWise(adj, fanouts)
		}
		top, err := Distributed15D(g, adj)
		if err != nil {
			return nil, err
		}
		return NewNodeWiseOn(top, fanouts)
	case KindLADIES:
		if g == nil {
			return NewLayerWise(adj, fanouts)
		}
		if err := checkSizes(fanouts); err != nil {
			return nil, err
		}
		top, err := Distributed15D(g, GCNNormalized(adj))
		if err != nil {
			return nil, err
		}
		return NewLayerWiseOn(top, fanouts)
	case KindPlain:
		if g != nil {
			return nil, fmt.Errorf("sampling: the plain sampler reads a replicated graph only")
		}
		return NewPlain(adj, fanouts)
	}
	return nil, fmt.Errorf("sampling: unknown sampler %q (want %s)", kind, enum.Or(Kinds))
}

// NewOn returns the sampler of the given kind over the matrix held by top,
// which may come from a row block (Distributed15DBlock, Distributed2D):
// KindSAGE (NodeWiseOn; top holds the adjacency A) or KindLADIES
// (LayerWiseOn; top must hold Â = GCNNormalized(A), which
// GCNNormalizedBlock computes block by block). The plain sampler reads a
// replicated graph only: use New. It returns an error for an unknown or
// plain kind or bad fanouts; it does not communicate.
func NewOn(kind Kind, top Topology, fanouts []int) (Sampler, error) {
	switch kind {
	case KindSAGE:
		return NewNodeWiseOn(top, fanouts)
	case KindLADIES:
		return NewLayerWiseOn(top, fanouts)
	case KindPlain:
		return nil, fmt.Errorf("sampling: the plain sampler reads a replicated graph only (use New)")
	}
	return nil, fmt.Errorf("sampling: unknown sampler %q (want sage or ladies)", kind)
}

// NewBlock returns the sampler of kind (KindSAGE or KindLADIES) over a
// distributed adjacency that no rank holds whole: this rank's row block
// local (rows [bounds[g.Row], bounds[g.Row+1]) of the n×n adjacency,
// global column ids; bounds has g.PR+1 entries, the same on every rank)
// in the layout Layout15D (Distributed15DBlock) or Layout2D (Distributed2D, a
// square grid). For ladies the block is first normalised
// (GCNNormalizedBlock over g.ColComm, one rank per block). It is
// collective over g.
func NewBlock(kind Kind, layout Layout, g *collective.Grid, bounds []int64, local *sparse.CSR, fanouts []int) (Sampler, error) {
	if kind == KindLADIES {
		if err := checkSizes(fanouts); err != nil {
			return nil, err
		}
		var err error
		if local, err = GCNNormalizedBlock(g.ColComm, bounds, local); err != nil {
			return nil, err
		}
	}
	var top Topology
	var err error
	switch layout {
	case Layout15D:
		top, err = Distributed15DBlock(g, bounds, local)
	case Layout2D:
		top, err = Distributed2D(g, bounds, local)
	default:
		return nil, fmt.Errorf("sampling: unknown distributed layout %q (want 1.5d or 2d)", layout)
	}
	if err != nil {
		return nil, err
	}
	return NewOn(kind, top, fanouts)
}
