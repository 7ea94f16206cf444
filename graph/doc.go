// Package graph is gnnmpi's data layer: graph storage, file formats,
// transformations, generators and partitioning.
//
// # Overview
//
// A Dataset holds a graph's adjacency (sparse.CSR with 64-bit offsets and
// global ids), float32 features, integer labels and named
// train/valid/test splits, either whole or only the rows a rank owns. The
// features are dense (Feat) or sparse rows (FeatCSR, a pattern matrix for
// 0/1 bag-of-words); ReadOptions.FeatureFormat picks, and its default,
// auto, keeps them sparse below SparseDensity nonzeros (decided over the
// whole file, so that every rank agrees). The sparse readers never hold
// the dense matrix.
//
// Readers take the OGB raw layout (edge.csv.gz, node-feat.csv.gz,
// node-label.csv.gz, split/<name>/{train,valid,test}.csv.gz), OGB's
// binary layout of NumPy archives (raw/data.npz, raw/node-label.npz, read
// through package npy: mapped or streamed by rows; NaN labels are
// Unlabelled), SNAP-style
// edge lists and Matrix Market coordinate files; every malformed input is
// reported as an error naming the file and line. The binary format written by
// `gnnmpi convert` is versioned, checksummed and memory-mapped on load.
//
// Generators make R-MAT graphs with Graph500 parameters and planted-partition
// stochastic block models with class-correlated features. MetisPartition
// partitions a Dataset with METIS (through the cgo leaf partition/metis),
// balancing the split's train/valid/test vertices, and returns a
// *partition.Book; the book itself, the block and random partitioners and
// the book file live in the pure-Go package partition, so that packages
// needing only the book do not link libmetis. The binary writer goes
// through internal/atomicfile.
//
// # Partitioned datasets
//
// WriteParts relabels a whole Dataset by a book (Relabel: part q owns the
// contiguous ids [offsets[q], offsets[q+1])) and writes one binary part
// file per part plus a PartManifest. LoadParts reads a contiguous range
// of parts, touching only their files and verifying them against the
// manifest, as a Part: a row block with global column ids, and nothing of
// the whole graph's size. PartManifest.RunParts says which parts a rank of
// a run holds.
//
// The formats are described in docs/data-formats.md of the repository.
package graph
