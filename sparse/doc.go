// Package sparse holds local sparse-matrix storage and kernels that do no
// communication.
//
// # Overview
//
// CSR is the storage used throughout gnnmpi: 64-bit row offsets and 64-bit
// column indices, so that graphs with billions of edges or vertices fit.
// Mul is the local sparse matrix–matrix product (Gustavson's row-by-row
// algorithm), on which samplers build: P = Q·A selects and merges rows of A.
// Distributed products live in package spgemm and call into this package
// for their local work.
package sparse
