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
// MiniBatch whatever the bulk, the rank count, the Topology (Replicated,
// Distributed15DBlock with any replication factor, or Distributed2D), the
// row bounds, the chunk sizes and the backend.
//
// # Topology and communication
//
// With a Replicated topology the package does no communication. The
// distributed topologies hold the matrix in row blocks that no rank holds
// whole: Distributed15DBlock (the 1.5D layout on a (p/c)×c grid, row block
// i on the c ranks of grid row i) and Distributed2D (a √p×√p grid, rank
// (i, j) holding the entries of row block i in column block j), each built
// from the rank's own rows with global column ids and the row bounds (for
// instance a partitioned dataset's part offsets); GCNNormalizedBlock gives
// a block's rows of Â for LADIES and NewOn builds a sampler on such a
// topology. Distributed15D cuts a matrix every rank holds.
//
// A distributed hop gathers the frontiers of a grid row and streams
// P = Q·M through spgemm.Mul15DStream or spgemm.Mul2DStream: every row of
// P is thinned as soon as it is whole (1.5D: in the chunk that forms it,
// on the replica whose stages hold its vertex; 2D: on the rank that asked
// for it, once the pieces of the grid row's ranks are joined), and only the
// thinned rows are kept, so a rank holds its block, one received piece of a block and
// one chunk (1.5D) or one stage's pieces (2D) of P besides the sample;
// Sample is then collective. Plain is the per-batch baseline written
// without matrices, for benchmarks.
//
// VIP computes SALIENT++'s vertex-inclusion probabilities for the
// node-wise sampler, which score alltoall's static cache. How training
// uses the samplers, and the flags, are described in docs/training.md of
// the repository; measured rates in bench/results/README.md.
package sampling
