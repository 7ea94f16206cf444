// Package dense holds row-major float32 matrices and the row and BLAS
// helpers that every numeric package shares.
//
// # Overview
//
// Matrix is the storage of node features and embeddings. The row helpers
// gather, scatter and add rows by index (the feature fetch, halo
// exchanges and the layers' backward passes all move rows this way), and
// Reuse and Grow recycle buffers between minibatches and layers. The row
// axpys (AxpyGather, AxpyScatter, AxpyScatterRows, and ScatterRows for
// rows checked once and added tile by tile) are the kernels of a
// sparse-input layer, one whole row per stored entry, in AVX2 assembly on
// amd64 and bitwise equal to one Axpy per entry; so are the elementwise
// kernels of the optimizer, the rectifier and dropout's backward pass
// (AdamUpdate, ReLU, ReLUGrad, Mul), bitwise equal to their Go loops.
// Products
// go through thin GEMM, axpy, scale and dot wrappers over gonum's BLAS
// interface, with the implementation injected by the caller (OpenBLAS when
// available; BLASOrDefault falls back to gonum's pure Go). This package
// does no communication. Row selection of a sparse matrix is
// sparse.SelectRows.
package dense
