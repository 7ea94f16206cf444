// Package partition assigns the vertices of a graph to ranks: a Book maps
// every global vertex id to the rank that owns it and to its local id there,
// modelled on DGL's GraphPartitionBook (nid2partid, nid2localnid).
//
// # Overview
//
// Block and Random make books from the vertex count alone; New wraps any
// assignment, such as one computed by METIS (graph.MetisPartition, which
// keeps the cgo binding out of this package). Contiguous makes the book of a
// relabelled (partitioned) dataset, whose part r owns the id range
// [offsets[r], offsets[r+1]): it stores only the K+1 offsets, so no rank
// holds an array over all vertices. Code outside the package reads every
// book through its methods (Owner, LocalID, Owned, Offsets, Range), never
// through the Part and Local arrays, which such a book lacks. Write and Read store a book in
// a small text file, optionally gzip-compressed, so that a partition computed
// once can be reused by later runs.
//
// The package is pure Go and a leaf: it imports only sparse (to measure edge
// cuts) and internal/rng, so packages that need only the book, such as
// alltoall, do not link METIS.
package partition
