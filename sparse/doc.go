// Package sparse holds local sparse-matrix storage and kernels that do no
// communication.
//
// # Overview
//
// Matrix[T] is compressed sparse row storage with 64-bit row offsets and
// 64-bit column indices, so that graphs with billions of edges or vertices
// fit; CSR, an alias of Matrix[float64], is the type used throughout
// gnnmpi. A nil Values slice makes a pattern matrix. Vec is a sparse
// float64 vector (ascending indices, missing entries 0): the cache scores
// of the vertices a rank knows. FromDense keeps the
// nonzeros of a row-major dense matrix (sparse feature rows are
// Matrix[float32]).
//
// # Sparse products
//
// MulSR is the local sparse matrix–matrix product (SpGEMM) over a Semiring:
// PlusTimes (float32, float64 and integers), MinPlus (shortest paths, whose
// zero is +Inf), OrAnd (reachability), or any type with Zero, One, Add and
// Mul. It runs Gustavson's row-by-row algorithm with a symbolic phase (exact
// row sizes, so C is allocated once) and a numeric phase, each over row
// blocks balanced by flops on Options.Threads goroutines; every row picks a
// dense or a hash accumulator by its flops and the width of B, and rows come
// out sorted. Results do not depend on the number of threads.
//
// MulRowsSR multiplies only chosen rows of A, and MulMaskedSR only at the
// positions of a mask; both cost in proportion to their output and flops,
// however large A and B are. MulSRTo writes the product into a matrix
// whose arrays it reuses. Mul is the (+, ×) product over CSR, on which
// samplers build: P = Q·A selects and merges rows of A (SelectRowsSR;
// SelectRowsSRTo into reused arrays, copying rows that are sorted and
// distinct without running the product).
//
// SelectRows is the one row selection of a CSR (the rows a rank owns, the
// rows of a frontier): the readers, the samplers and the spgemm command
// all use it.
//
// Distributed products live in package spgemm and call into this package
// for their local work.
package sparse
