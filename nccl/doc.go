// Package nccl will implement collective.Comm for device buffers over NCCL,
// loaded at run time so that no build needs CUDA.
//
// It is empty: GPU communication comes with the GPU-centric data access
// work. Nothing here claims to work yet.
package nccl
