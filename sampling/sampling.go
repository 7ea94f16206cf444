package sampling

import (
	"math/rand/v2"

	"gnnmpi/sparse"
)

// Block is one GNN layer's bipartite graph, in the style of DGL's blocks.
//
// Adj is len(Dst)×len(Src): row i lists the sources aggregated into
// destination Dst[i], and column j is the source vertex Src[j], so the
// columns of Adj are local indices into Src. The first len(Dst) sources are
// the destinations themselves (Src[:len(Dst)] equals Dst), so that a layer
// finds a destination's own previous representation in row i of its input.
// Adj is a pattern matrix (nil Values) for node-wise sampling, its rows are
// sorted and hold no repeats.
type Block struct {
	Adj *sparse.CSR // len(Dst)×len(Src), columns index Src
	Dst []int64     // global ids of the destination vertices
	Src []int64     // global ids of the source vertices; Src[:len(Dst)] == Dst
}

// MiniBatch is the sampled computation graph of a set of seeds: one Block per
// layer, from the input layer to the output layer.
//
// Blocks[l].Dst equals Blocks[l+1].Src: the output of layer l is the input
// of layer l+1. The slices of a MiniBatch may alias one another
// (Blocks[l].Dst is a prefix view of Blocks[l].Src, Seeds is the last
// block's Dst); treat a MiniBatch as read-only.
type MiniBatch struct {
	Seeds  []int64 // output vertices, = Blocks[len(Blocks)-1].Dst
	Blocks []Block // Blocks[0] is the input layer
}

// Input returns the global ids of the vertices whose features the minibatch
// needs: Blocks[0].Src, or Seeds when there are no blocks. The slice aliases
// the minibatch.
func (m *MiniBatch) Input() []int64 {
	if len(m.Blocks) == 0 {
		return m.Seeds
	}
	return m.Blocks[0].Src
}

// Sampler draws the computation graph of a minibatch.
//
// Sample returns the MiniBatch of the given seeds, drawing its randomness
// from rng only, so that the same seeds and the same rng state give the same
// MiniBatch. It does not modify seeds.
type Sampler interface {
	Sample(seeds []int64, rng *rand.Rand) (*MiniBatch, error)
}
