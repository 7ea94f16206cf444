// Package sampling draws the computation graphs of GNN minibatches, written
// as sparse matrix products.
//
// # Overview
//
// A MiniBatch is plain data: the seeds (output vertices) and one bipartite
// Block per layer, Blocks[0] being the input layer, like DGL's blocks and
// PyG's SamplerOutput. A Block's Adj is a len(Dst)×len(Src) CSR whose
// columns index Src, and Src begins with Dst. MiniBatch.Input lists the
// vertices whose features the minibatch needs; package alltoall fetches
// them.
//
// NodeWise is GraphSAGE's uniform neighbour sampler with per-layer fanouts
// (Fanouts[0] is the first hop from the seeds, i.e. the output layer). It
// follows the matrix formulation of Tripathy, Yelick and Buluç, "Distributed
// Matrix-Based Sampling for Graph Neural Network Training" (MLSys 2024): for
// a frontier F it builds the selection matrix Q (|F|×n, Q(i, F[i]) = 1),
// computes P = Q·A with sparse.Mul, and selects from each row of P by
// inverse-transform sampling over the row's prefix sums ("dart throwing",
// rejecting darts that land on an entry already taken). The row selection is
// written over the values of P, so that the layer-wise (LADIES, P = Q·(A∘A))
// and bulk samplers can share it. FullBlock gives a block with all
// neighbours, for exact layer-wise inference.
//
// # Determinism
//
// A sampler draws only from the *rand.Rand it is given (see internal/rng):
// the same seeds and generator state give the same MiniBatch, on every rank
// count and backend. The package does no communication.
package sampling
