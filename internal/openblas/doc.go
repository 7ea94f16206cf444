// Package openblas selects the BLAS implementation that dense products use.
//
// # Overview
//
// In the default build, Implementation returns gonum's cgo binding
// (gonum.org/v1/netlib/blas/netlib) linked against OpenBLAS with
// -lopenblas, so no CGO_LDFLAGS are needed. Built with the noblas tag it
// returns gonum's pure Go implementation instead, for machines without
// OpenBLAS. Both satisfy blas.Float32Level3, which is what package model
// takes as an argument; only main (and tests) import this package.
//
// OpenBLAS reads OPENBLAS_NUM_THREADS at start-up; under mpirun with several
// ranks per node, set it so that ranks do not oversubscribe the cores.
package openblas
