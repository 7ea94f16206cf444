// Package spgemm will hold distributed sparse matrix–matrix products (1D,
// 1.5D and 2D SUMMA) over package collective, calling package sparse for the
// local kernels.
//
// It is empty: the products arrive with the SpGEMM issue. Nothing here
// claims to work yet.
package spgemm
