// Package distpart partitions a binary dataset on disk over the ranks of
// a communicator and writes the partitioned dataset from the ranks' row
// blocks, so that no rank ever holds the whole graph.
//
// # Overview
//
// Every rank reads its block of rows (the split of dist.BlockRange) of a
// Source: a graph.BinaryRows, or an OGB (OpenOGB), which reads OGB's
// binary layout in slices, every rank 1/p of edge_index, and sends each
// edge to the owner of its source's row. Partition symmetrizes the blocks when asked and cuts
// them with an injected dist.Engine (PT-Scotch, wired by the command
// layer, which alone picks the MPI backend) or into consecutive blocks,
// and returns the parts of the rank's rows with the edge cut and the part
// sizes. Book gathers the parts into a partition.Book on rank 0.
// WriteParts writes the partitioned dataset: every rank reads the
// features, labels and split members of its rows, dist.Redistribute sends
// each part to its writer (part q on rank q mod p), the writers write
// their part files (graph.WritePart), and rank 0 writes the manifest
// last, so that a failed run leaves none.
//
// Every function here is collective over its communicator; an error on
// any rank fails every rank (collective.Agree) before the next exchange.
// The package sits above graph in the layer table, so unlike
// partition/dist it is not pure Go (graph links the METIS binding).
package distpart
