// Package nccl is planned (issue 22): it will implement collective.Comm
// for device buffers over NCCL, loaded at run time so that no build needs
// CUDA.
//
// The package holds no code today: nothing in gnnmpi communicates or
// computes on a GPU yet. See docs/architecture.md of the repository for
// what exists for GPUs (package gpu) and what is planned.
package nccl
