// Package nccl implements collective.Comm over NCCL, loaded at run time
// (libnccl.so.2, through the cgo leaf nccl/internal/nccldl), so that no build
// needs CUDA or NCCL.
//
// New(world, dev) creates a communicator over the ranks of an existing
// (MPI) communicator: rank 0 creates NCCL's unique id, broadcasts it over
// world and every rank calls ncclCommInitRank. Split splits the host
// communicator and creates one NCCL communicator per color with a new id.
//
// The collective.Comm methods take host buffers: they are staged through
// device buffers that dev (a DeviceMemory: allocation, copies, the stream,
// Sync) provides and that the Comm keeps and grows. Allreduce reduces in
// place on the device (16-bit words, which NCCL cannot reduce, are widened
// to 32 bits); Allgatherv is one ncclAllGather padded to the largest count;
// Alltoallv is a group of ncclSend/ncclRecv; Bcast is ncclBroadcast;
// Barrier is an allreduce of one int32. Send and Recv carry a 16-byte
// header (tag, length) before the payload: NCCL has no tags, so messages
// between two ranks must be received in the order sent. Results are the
// same on every rank (NCCL's ring reduces in one order for all). Wrapped in
// collective.WithStats, a Comm counts the same bytes per phase as the MPI
// backend for the same calls (the closed forms of collective/volume.go).
//
// AllreduceDevice, ReduceScatterDevice, AllGatherDevice and
// BroadcastDevice work on device buffers directly, enqueued on dev's
// stream.
//
// A missing library is an error wrapping ErrNoNCCL that names the files
// tried; LibDirEnv (GNNMPI_NCCL_LIBDIR) names a directory searched first.
// HostMemory is a DeviceMemory over host memory, for an NCCL taking host
// pointers: the fake NCCL over MPI (testdata/fakenccl.c, built by package
// nccltest) with which the MPI suite runs the conformance suite
// (`gnnmpi selftest --backend nccl`). A GPU's DeviceMemory is package
// gpu/cuda's Memory.
package nccl
