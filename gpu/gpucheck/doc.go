// Package gpucheck is the check suite of the GPU path: every CUDA kernel
// against its CPU reference, cuBLAS's Sgemm against dense.Gemm,
// cuSPARSE's SpMM against sparse.Mul, the collective conformance suite on
// NCCL, the zero-copy gather microbenchmark and the comparison of a
// training's loss curve on the GPU with the CPU's.
//
// # Overview
//
// Like collective/collectivetest for the communicators, the suite is run
// both by tests and by the program: the tests of gpu/cuda and gpu/blas run
// Cases on the fake libraries of gpu/gputest, and `gnnmpi gpucheck` runs
// Run on the machine's device and prints its Report.
//
// Cases returns the per-device checks (kernel/<name>, cublas/sgemm,
// cusparse/spmm); each takes a Device (an open context and the kernels
// compiled on it) and a random source, and returns nil or the first
// difference. Run is collective: it opens one device per rank, runs every
// case, NCCL's conformance cases, the benchmark and an optional training
// comparison, and reduces each row's verdict over the ranks.
//
// The training comparison needs package train, which sits above this
// package in the layer table; Run therefore takes the training as a
// function (Options.Train) that the caller wires to train, and only
// compares the two loss curves it returns.
package gpucheck
