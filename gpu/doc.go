// Package gpu finds the NVIDIA GPUs of a node and binds each MPI rank to one.
//
// # Overview
//
// gnnmpi runs as p SPMD ranks, several per node. Before training, each rank
// asks this package which GPUs its node has (Discover, DiscoverSystem),
// which local rank it is (LocalRankFromEnv), and which device is its own
// (Bind). "gnnmpi info --gpu" prints the same discovery with Report.
//
// The package is a leaf: it imports only the standard library and
// github.com/NVIDIA/go-nvml. It has no cgo of its own and needs no CUDA or
// NVML at build time; go-nvml dlopens libnvidia-ml.so.1 when NVML is first
// initialized, so one binary runs on GPU and CPU-only nodes alike.
//
// # Discovery
//
// Discover takes an nvml.Interface, so it runs the same on the real library
// (nvml.New) and on go-nvml's fake (github.com/NVIDIA/go-nvml/pkg/nvml/mock),
// which the tests and the Example use. It initializes NVML, copies the
// name, UUID, memory and PCI bus ID of every device into a Device, and
// shuts NVML down again; no NVML handle outlives the call. DiscoverSystem
// is Discover on the real library followed by FilterVisible, which applies
// CUDA_VISIBLE_DEVICES (NVML ignores it, the CUDA runtime does not), so the
// position of a Device in DiscoverSystem's result is its CUDA device
// ordinal, while Device.Index stays the node-wide NVML index.
//
// # No GPU
//
// Running without a GPU is a normal outcome, not a failure. Every error that
// means "this process has no usable GPU" satisfies errors.Is(err, ErrNoGPU):
// no libnvidia-ml.so.1, NVIDIA kernel driver not loaded, no permission on the
// device files, zero devices, all devices hidden by CUDA_VISIBLE_DEVICES, and
// Bind with no devices. Discover never returns an empty slice with a nil
// error, so callers write
//
//	devices, err := gpu.DiscoverSystem()
//	switch {
//	case errors.Is(err, gpu.ErrNoGPU):
//		// train on the CPU
//	case err != nil:
//		// a real NVML failure (e.g. a lost GPU): abort the job
//	}
//
// Calling the real library never panics on a machine without the driver; it
// returns ErrNoGPU. Errors that do not satisfy ErrNoGPU wrap the nvml.Return
// that caused them.
//
// # Binding ranks to devices
//
// LocalRankFromEnv reads the local rank that the launcher exported (Open MPI,
// MVAPICH2, Hydra, PMI, then Slurm), and Bind deals local ranks round-robin
// over the devices: local rank r gets devices[r%len(devices)]. When no
// launcher variable is set, package collective computes the local rank with
// an MPI shared-memory split and passes it to Bind; this package does no
// communication and does not import collective.
//
// # Planned: tiered feature storage
//
// Nothing in gnnmpi computes on a GPU yet. GPU-centric data access in the
// style of PyTorch-Direct is planned (issue 22): deciding, from the device
// memory that Discover reports, which node features stay in GPU memory and
// which stay in pinned host memory that kernels read directly over PCIe or
// NVLink instead of copying them in per minibatch. See docs/architecture.md
// of the repository.
package gpu
