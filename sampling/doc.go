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
// A minibatch draws only from its key, through RowStream (one stream per
// minibatch, hop and frontier vertex): the same seeds and key give the same
// MiniBatch whatever the bulk, the rank count, the Topology (Replicated or
// Distributed15D, with any replication factor) and the backend.
//
// # Topology and communication
//
// With a Replicated topology the package does no communication. With
// Distributed15D the graph's rows are spread over a (p/c)×c grid and every
// hop is one collective 1.5D product P = Q·A (spgemm.Mul15D) plus the
// gathers of the frontiers and the return of the sampled rows; Sample is
// then collective. Plain is the per-batch baseline written without
// matrices, for benchmarks.
//
// VIP computes SALIENT++'s vertex-inclusion probabilities for the
// node-wise sampler, which score alltoall's static cache. How training
// uses the samplers, and the flags, are described in docs/training.md of
// the repository; measured rates in bench/results/README.md.
package sampling
