package blas_test

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/blas"

	gpublas "gnnmpi/gpu/blas"
)

// layer queues the products of a GCN layer's forward pass on the device:
// H = X·W on cuBLAS, then the aggregation Y = Â·H on cuSPARSE. x, w, h and
// y are device addresses of row-major float32 matrices (n×fin, fin×fout,
// n×fout, n×fout) and adj is Â (n×n) in CSR on the device.
func layer(b *gpublas.BLAS, s *gpublas.Sparse, adj gpublas.CSR, x, w, h, y uintptr, fin, fout int) error {
	if err := b.Sgemm(blas.NoTrans, blas.NoTrans, adj.Rows, fout, fin, 1, x, w, 0, h); err != nil {
		return err
	}
	return s.SpMM(blas.NoTrans, 1, adj, h, fout, 0, y)
}

// Loading the libraries: on a machine without CUDA, NewBLAS fails with an
// error that wraps ErrNoCUBLAS (and NewSparse one that wraps
// ErrNoCUSPARSE), and the caller stays on the CPU path.
func Example() {
	b, err := gpublas.NewBLAS(0) // the default stream
	if errors.Is(err, gpublas.ErrNoCUBLAS) {
		fmt.Println("no cuBLAS: training on the CPU")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	var alloc gpublas.Allocator // gpu/cuda's device memory
	s, err := gpublas.NewSparse(alloc, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	var adj gpublas.CSR
	var x, w, h, y uintptr // device buffers from gpu/cuda
	if err := layer(b, s, adj, x, w, h, y, 16, 8); err != nil {
		fmt.Println(err)
	}
}
