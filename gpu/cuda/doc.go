// Package cuda runs gnnmpi's kernels on an NVIDIA GPU through the CUDA
// driver API and NVRTC, both loaded at run time: no build needs CUDA, and
// a machine without a driver gets an error wrapping ErrNoCUDA from Open.
//
// # Overview
//
// The package is pure Go over the cgo leaf gnnmpi/gpu/internal/cudadl, which
// dlopens libcuda.so.1 and libnvrtc as gnnmpi/internal/dl's Driver and
// NVRTC searches say (GNNMPI_CUDA_DRIVER_DIR and GNNMPI_CUDA_LIBDIR name
// directories searched first; then CUDA_HOME, CUDA_PATH, the Python
// wheels and the loader's path). Open(device) retains the device's primary context;
// every method makes it current on a locked OS thread for the duration of
// the call, so a Context may be used from any goroutine.
//
//   - Memory: Alloc/Free of device memory (DevicePtr, a device address;
//     offsets are plain addition), CopyHtoD/CopyDtoH of []float32, []int32,
//     []byte (any Elem), HostMapped: page-locked host memory mapped into
//     the device (cuMemHostAlloc with DEVICEMAP|PORTABLE), seen from Go as
//     Mapped.Host and from kernels at Mapped.Dev, read zero-copy.
//   - Memory{Ctx}: the context's device memory, page-locked host memory
//     and streams behind the interfaces of the packages that do not
//     import this one, nccl.DeviceMemory and gpu/blas.Allocator, which it
//     satisfies structurally.
//   - Streams and events: NewStream, NewNonBlockingStream (no implicit
//     synchronization with the default stream: NCCL's), Stream.Wait (with
//     a timeout, ErrStreamTimeout), CopyHtoDAsync from mapped memory,
//     CopyHtoDAsyncBytes and CopyDtoHAsyncBytes through HostAlloc's
//     page-locked memory, NewEvent, Event.Record, Elapsed (milliseconds).
//   - A context is current on the calling OS thread only inside Do (and
//     the Context's own calls); afterwards the thread's previous context is
//     current again.
//   - Kernels: Context.Compile(src, name) compiles CUDA C with NVRTC for
//     the highest architecture NVRTC supports up to the device's compute
//     capability, to a CUBIN (-arch=sm_XY) or, where NVRTC gives none or
//     the driver refuses it, to PTX (-arch=compute_XY) for the driver to
//     compile (Module.Image says which), each image once per process, and
//     loads it once per context; Module.Function
//     finds an extern "C" kernel; Function.Launch packs DevicePtr, int32,
//     uint32, float32 and int64 arguments into C memory for cuLaunchKernel.
//
// gnnmpi's kernels are CUDA C source in gnnmpi/gpu/kernels (embedded):
// gather_rows, the tiered feature gather, and the elementwise kernels of
// a training step.
//
// # Feature tiers
//
// A rank's feature rows live in tiers (gnnmpi/gpu/tier): the hot rows
// (the most sampled) in device memory, addressed by slot, the rest in
// mapped page-locked host memory (HostMapped), which kernels read over the
// bus without a copy (PyTorch-Direct, Min et al., VLDB 2021), and the rows
// a minibatch fetches from other ranks in a second mapped buffer. gather_rows builds a minibatch's
// input matrix from per-row (tier, slot) pairs with one warp per row whose
// lanes read 4-byte words covering aligned 128-byte segments, for rows of
// any width and any alignment.
//
// # Testing without a GPU
//
// The tests build a fake libcuda.so.1 and libnvrtc.so from testdata/ with
// gcc and point GNNMPI_CUDA_LIBDIR at them. The fake device ("gnnmpi fake
// device", capability 8.0) uses host memory as device memory; the fake
// NVRTC compiles only for its release's architectures and the fake
// driver refuses PTX of a newer ISA than its own and CUBINs for another
// device, as the real ones do (environment variables make them other
// releases and devices: see testdata); the fake
// NVRTC compiles the kernels as C++ with testdata/shim.h force-included,
// and the fake cuLaunchKernel runs every thread of every block one after
// another. The shim supports __global__, __device__, __forceinline__,
// __restrict__, threadIdx/blockIdx/blockDim/gridDim, warpSize, min/max,
// expf/logf/sqrtf and __ldg; it does not support __syncthreads, shared
// memory, warp shuffles or atomics, so gnnmpi's kernels use none of them.
// Each kernel ends with GNNMPI_KERNEL(name), empty under real NVRTC, which
// registers the launcher the fake calls. Where libcuda.so.1 exists,
// TestRealCUDA runs the same tests on the real driver in a child process.
package cuda
