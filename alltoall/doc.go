// Package alltoall fetches the feature rows of a minibatch from the ranks
// that own them.
//
// # Overview
//
// Vertex features are partitioned across ranks by a graph.PartitionBook:
// rank r holds a dense matrix whose row k is the feature row of the vertex
// gid with book.Part[gid] == r and book.Local[gid] == k. A minibatch needs
// the rows of its input vertices (sampling.MiniBatch.Input), most of them
// owned elsewhere.
//
// Planning and communication are separate, in the manner of raft's Ready:
// NewPlan is pure and decides, without communicating, which distinct ids to
// ask each owner for, which rows to copy from the rank's own part (never
// sent), and where each received row goes; Exchange carries a plan out with
// Alltoallv calls over a collective.Comm (request counts, requested ids,
// then the rows). Fetch does both, counting the traffic under the phase
// "fetch"; inference calls NewPlan and Exchange itself under its own phase.
//
// # Volume
//
// With F features per row, p ranks, R distinct remote rows requested by a
// rank and S rows it serves to the others, the rank sends
// 8(p−1) + 8R + 4F·S bytes and receives 8(p−1) + 8S + 4F·R bytes per
// exchange, by the conventions of collective's volume functions (only data
// between distinct ranks counts).
//
// Later issues add c-fold replication of the features and the VIP cache of
// SALIENT++ on top of the same plan.
package alltoall
