// Package alltoall fetches the feature rows of a minibatch from the ranks
// that own them.
//
// # Overview
//
// Vertex features are partitioned across ranks by a partition.Book:
// rank r holds a dense matrix whose row k is the feature row of the vertex
// gid with book.Owner(gid) == r and book.LocalID(gid) == k. A minibatch needs
// the rows of its input vertices (sampling.MiniBatch.Input), most of them
// owned elsewhere.
//
// Planning and communication are separate, in the manner of raft's Ready:
// NewPlan is pure and decides, without communicating, which distinct ids to
// ask each owner for, which rows to copy from the rank's own part (never
// sent), and where each received row goes; Exchange carries a plan out with
// Alltoallv calls over a collective.Comm (request counts, requested ids,
// then the rows). Fetch does both, counting the traffic under the phase
// metrics.PhaseFetch; inference calls NewPlan and Exchange itself under its own phase.
//
// # Volume
//
// With F features per row, p ranks, R distinct remote rows requested by a
// rank and S rows it serves to the others, the rank sends
// 8(p−1) + 8R + 4F·S bytes and receives 8(p−1) + 8S + 4F·R bytes per
// exchange, by the conventions of collective's volume functions (only data
// between distinct ranks counts).
//
// # Sparse rows
//
// NewSparseStore builds a Store of sparse feature rows
// (*sparse.Matrix[float32], a pattern matrix for 0/1 features): own part,
// cache and replication as for dense rows, with only the nonzeros resident.
// On the wire a row is its length and its (column int32, value float32)
// pairs, or its columns only when every rank holds a pattern, so a fetch
// moves 4 + 8·nnz (or 4 + 4·nnz) bytes a row instead of 4F, plus one
// AlltoallCounts of the words per round. FetchSparse returns the rows
// sparse; Fetch returns them dense. Half precision is for dense rows only.
//
// # Store: replication, cache, tiers
//
// A Store is what training fetches from. Its communicator is the rank's
// replica group: with c-fold replication the p ranks hold a p/c-part book,
// part q on the c ranks of grid row q of a (p/c)×c collective.Grid, and a
// rank fetches within its grid column, which holds every part once (the
// 1.5D layout of the distributed sampling paper). Remote traffic falls
// with c, memory per rank grows with it.
//
// On top, each rank caches a static set of remote rows chosen by a score
// (SelectCache: the top k with a positive score), filled once by one
// exchange at start-up, after SALIENT++ (Kaler et al., MLSys 2023). The
// scores are the caller's, a sparse.Vec over the vertices the rank knows
// (no rank needs a score of every vertex): in-degree (InDegree sums it over
// a row-distributed adjacency), the vertex-inclusion probability of the
// sampler (sampling.VIP) or the access counts of simulated epochs. A
// fetch then copies own and cached rows and requests only the misses; the
// counts (Counts) say how many of each. The closed form above holds with R
// the distinct misses.
//
// A Store sends the rows of a fetch in rounds of at most
// StoreOptions.RoundBytes (64 MiB by default) per rank and direction, as
// many as the largest part needs, so that a rank stages one round's rows
// rather than every row it serves and receives: with wide rows (coauthor-
// physics: 8,415 features, 33 KB a row) those buffers, allocated afresh
// for every minibatch, outweighed the rank's own features. The rounds
// change neither the rows nor the bytes.
//
// The resident rows, own and cached, sit in one table ordered hottest
// first, so the hot rows are contiguous. Tiers reports how the first
// GPUFrac of them form a device tier. This package keeps every row in host
// memory; the feature store on a GPU is package gpu/tier, which copies the
// first Tiers()[0].Rows rows to device memory, maps the rest zero-copy from
// page-locked host memory (PyTorch-Direct) and receives remote rows
// through FetchSlots (it sits under gpu/ because it needs the CUDA
// libraries, which this pure-Go package never links). With F16
// the table and the wire hold IEEE half-precision words (internal/f16),
// converted to float32 on gather: half the memory and half the row bytes.
//
// How training uses the store, and its flags, are described in
// docs/training.md of the repository; measured traffic in
// bench/results/README.md.
package alltoall
