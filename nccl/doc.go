// Package nccl implements collective.Comm over NCCL, loaded at run time
// (libnccl.so.2, through the cgo leaf nccl/internal/nccldl), so that no build
// needs CUDA or NCCL.
//
// New(world, dev) creates a communicator over the ranks of an existing
// (MPI) communicator: rank 0 creates NCCL's unique id, broadcasts it over
// world and every rank calls ncclCommInitRank. Split splits the host
// communicator and creates one NCCL communicator per color with a new id.
//
// New first checks, collectively, that no two ranks use the same GPU
// (DeviceMemory.DeviceID): NCCL refuses such a communicator, so every rank
// gets an error wrapping ErrSharedDevice before NCCL is called. NCCL takes
// the device of the calling thread's current CUDA context: call New (and
// Split) inside the context (gpu/cuda's Context.Do).
//
// # Streams and the order of calls
//
// Each Comm has its own stream, created by dev without synchronization
// with the legacy default stream (CU_STREAM_NON_BLOCKING). The
// collective.Comm methods take host buffers: they copy them into
// page-locked staging memory, enqueue the asynchronous upload, the NCCL
// call and the asynchronous download on the Comm's stream, and wait for
// that stream before returning. On a GPU an NCCL collective blocks its
// stream until every rank of the communicator has posted it; since a host
// call never leaves work behind and never waits on another stream, two
// Comms used by different goroutines at once (collective.Dup, conformance
// case ConcurrentComms) cannot hold each other up, whatever the order of
// their calls on different ranks. The *Device calls do leave work on the
// stream: enqueue them on every rank in the same order across Comms, as
// NCCL requires, and call Sync. SetWaitTimeout bounds every wait (package
// main sets it from --comm-timeout).
//
// Device staging buffers and their page-locked twins are kept and grown by
// the Comm. Allreduce reduces in
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
// BroadcastDevice work on device buffers directly, enqueued on the Comm's
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
