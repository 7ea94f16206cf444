package train

import (
	"fmt"

	"gnnmpi/alltoall"
	"gnnmpi/collective"
	"gnnmpi/dense"
	"gnnmpi/model"
	"gnnmpi/partition"
	"gnnmpi/sampling"
	"gnnmpi/sparse"
)

// blocks turns a minibatch into the model's per-layer adjacencies,
// normalised for GCN; deg, when not nil, holds the degrees of the input
// rows mb.Input() (fetched on a partitioned dataset, see fetchDegrees).
func (t *trainer) blocks(mb *sampling.MiniBatch, deg []int64) []*sparse.CSR {
	out := make([]*sparse.CSR, len(mb.Blocks))
	for l, b := range mb.Blocks {
		out[l] = t.adjacency(b, deg)
	}
	return out
}

// adjacency returns block b's adjacency as the model takes it: normalised
// by the degrees for GCN. deg holds the degrees of b.Src or of a longer
// list that starts with it (a block's sources are a prefix of the
// minibatch's input rows, and its destinations a prefix of its sources);
// nil reads them from the whole graph's degrees, which a rank holding the
// whole graph keeps.
func (t *trainer) adjacency(b sampling.Block, deg []int64) *sparse.CSR {
	if t.cfg.Model.Kind != model.KindGCN || b.Adj.Values != nil {
		return b.Adj // LADIES blocks carry their propagation weights
	}
	if deg == nil {
		deg = make([]int64, len(b.Src))
		for j, g := range b.Src {
			deg[j] = t.deg[g]
		}
	}
	return model.GCNNorm(b.Adj, deg[:len(b.Dst)], deg[:len(b.Src)])
}

// needDegrees reports whether GCN normalisation needs degrees this rank
// does not hold: a partitioned dataset with a GCN model. Training blocks
// of LADIES carry their weights and need none.
func (t *trainer) needDegrees(training bool) bool {
	return t.d.Partitioned() && t.cfg.Model.Kind == model.KindGCN && !(training && t.cfg.Sampler == SamplerLADIES)
}

// ownDegrees returns the degrees of the vertices rank r owns under book
// (one float32 column, in local-id order: exact below 2²⁴), all of them
// among the rows d holds.
func ownDegrees(d *Data, book *partition.Book, r int) (*dense.Matrix, error) {
	owned := book.Owned(r)
	x := dense.New(len(owned), 1)
	for k, g := range owned {
		deg := int64(len(d.Row(g)))
		if deg >= 1<<24 {
			return nil, fmt.Errorf("train: vertex %d has degree %d, beyond what the degree exchange carries exactly (2^24)", g, deg)
		}
		x.Data[k] = float32(deg)
	}
	return x, nil
}

// fetchDegrees returns the degrees of ids, fetched from their owners under
// book over c (own rows from own, the owners' ownDegrees): one Alltoallv of
// a float32 per distinct remote vertex. It is collective over c.
func fetchDegrees(c collective.Comm, book *partition.Book, own *dense.Matrix, plan *alltoall.Plan, ids []int64) ([]int64, error) {
	if plan == nil {
		plan = alltoall.NewPlan(ids, book, c.Rank())
	}
	x, err := alltoall.ExchangeTo(c, nil, plan, book, own)
	if err != nil {
		return nil, err
	}
	deg := make([]int64, len(ids))
	for i := range deg {
		deg[i] = int64(x.Data[i])
	}
	return deg, nil
}
