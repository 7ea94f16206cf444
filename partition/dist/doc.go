// Package dist partitions a graph that is spread over the ranks of a
// communicator in row blocks, without any rank holding the whole graph.
//
// # Overview
//
// Rank r of p holds rows [lo_r, hi_r) of the adjacency (BlockRange gives
// the usual split), as a *sparse.CSR of hi_r−lo_r rows with global column
// ids; the blocks are consecutive in rank order. Every function here is
// collective over the communicator and holds O(rows + edges of the block
// + halo) per rank; the only arrays of length p+1 are the block bounds.
//
//   - Symmetrize makes the block's rows those of A ∪ Aᵀ without
//     self-loops, sorted and without repeats, by sending the reverse of
//     every edge to the owner of its target (Alltoallv): what partitioners
//     such as PT-Scotch require.
//   - Partition symmetrizes and calls an Engine, which returns the part of
//     each row of the block. The engine is injected, since the only
//     engine so far, PT-Scotch, needs the MPI communicator beneath c: main
//     builds it from collective/mpi and partition/ptscotch, which this
//     package does not import, so that it stays pure Go and runs on the
//     in-process backend in tests.
//   - EdgeCut counts the block's edges whose endpoints lie in different
//     parts, fetching the parts of the remote endpoints (a halo exchange);
//     Sizes counts the vertices of each part; GatherParts collects the
//     parts on one rank, in vertex order, for the partition book.
//   - Redistribute turns the ranks' row blocks of a dataset (adjacency,
//     features, labels, split members) and their parts into the parts of
//     a relabelled partitioned dataset, each on the rank that writes it
//     (Writer: part q on rank q mod p): NewIDs gives the new ids
//     (graph.Relabel's, from a prefix over the ranks of per-part counts),
//     the remote columns' new ids come from their owners (a halo
//     exchange), and the rows travel by Alltoallv. Reciprocal checks that
//     every edge's reverse is stored.
//
// The algorithms do no I/O: the caller reads its block (graph.BinaryRows
// reads one from a .gnn file) and writes the book or the part files.
package dist
