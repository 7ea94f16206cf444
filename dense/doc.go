// Package dense holds row-major float32 matrices.
//
// # Overview
//
// Matrix is the storage of node features and embeddings. Products go
// through gonum's BLAS interface (OpenBLAS when available); this package
// does no communication.
package dense
