package sampling

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"gnnmpi/internal/rng"
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

// Sampler draws the computation graphs of minibatches, many at once (bulk
// sampling: one sparse product per layer serves them all).
//
// Sample returns one MiniBatch per element of batches, which holds each
// minibatch's seeds; minibatch b draws its randomness only from keys[b],
// through the streams of RowStream. A minibatch therefore depends only on
// its seeds, its key and the graph: not on the other minibatches sampled
// with it, nor on the order or the rank in which the rows of the products
// are computed. Sample does not modify batches.
type Sampler interface {
	Sample(batches [][]int64, keys []uint64) ([]*MiniBatch, error)
}

// RowStream returns the generator of the draws that a sampler makes for the
// frontier vertex v at hop h (h = 0 at the seeds) of the minibatch with
// the given key: PCG seeded with (key, rng.Mix(h, v)). Layer-wise samplers,
// which draw per minibatch rather than per vertex, use v = −1.
func RowStream(key uint64, h int, v int64) *rand.Rand {
	return rand.New(rand.NewPCG(key, rng.Mix(uint64(h), uint64(v))))
}

// streams hands out RowStream generators without allocating: at reseeds
// one generator, valid until the next call.
type streams struct {
	pcg rand.PCG
	r   *rand.Rand
}

func newStreams() *streams {
	s := &streams{}
	s.r = rand.New(&s.pcg)
	return s
}

func (s *streams) at(key uint64, h int, v int64) *rand.Rand {
	s.pcg.Seed(key, rng.Mix(uint64(h), uint64(v)))
	return s.r
}

// checkAdj reports whether adj is a valid square CSR, as the samplers need.
func checkAdj(adj *sparse.CSR) error {
	if adj == nil {
		return fmt.Errorf("sampling: nil adjacency")
	}
	if err := adj.Validate(); err != nil {
		return fmt.Errorf("sampling: adjacency: %w", err)
	}
	if adj.NRows != adj.NCols {
		return fmt.Errorf("sampling: adjacency is %d×%d, not square", adj.NRows, adj.NCols)
	}
	return nil
}

// checkBatches validates the seed sets of a Sample call on n vertices.
// Its scratch is one sorted copy of the largest minibatch, not O(n).
func checkBatches(batches [][]int64, keys []uint64, n int64) error {
	if len(keys) != len(batches) {
		return fmt.Errorf("sampling: %d keys for %d minibatches", len(keys), len(batches))
	}
	var sorted []int64
	for b, seeds := range batches {
		for _, v := range seeds {
			if v < 0 || v >= n {
				return fmt.Errorf("sampling: minibatch %d: seed %d outside [0,%d)", b, v, n)
			}
		}
		sorted = append(sorted[:0], seeds...)
		slices.Sort(sorted)
		for x := 1; x < len(sorted); x++ {
			if sorted[x] == sorted[x-1] {
				return fmt.Errorf("sampling: minibatch %d: seed %d repeated", b, sorted[x])
			}
		}
	}
	return nil
}

// rowRange returns rows [lo, hi) of a with their own row offsets; the
// indices and values are shared.
func rowRange(a *sparse.CSR, lo, hi int64) *sparse.CSR {
	s, e := a.Indptr[lo], a.Indptr[hi]
	ptr := make([]int64, hi-lo+1)
	for i := range ptr {
		ptr[i] = a.Indptr[lo+int64(i)] - s
	}
	out := &sparse.CSR{NRows: hi - lo, NCols: a.NCols, Indptr: ptr, Indices: a.Indices[s:e:e]}
	if a.Values != nil {
		out.Values = a.Values[s:e:e]
	}
	return out
}
