// Package tier is one rank's device feature store: the rows of an
// alltoall.Store split into tiers by hotness, and the gather that builds a
// minibatch's input matrix in device memory from them, zero-copy
// (PyTorch-Direct, Min et al., VLDB 2021).
//
// # Tiers
//
// The store's resident rows (its own part and its cache of remote rows)
// are ordered hottest first by the store's score (VIP, degree, simulated
// accesses). New copies the first Tiers()[0].Rows of them (the fraction
// StoreOptions.GPUFrac) into device memory, the device tier, and the rest
// into page-locked host memory mapped into the device (cuda.HostMapped),
// the host tier, which kernels read over PCIe/NVLink without a copy. Rows
// that a minibatch needs from other ranks are fetched by the store's
// all-to-all (alltoall.Store.FetchSlots) straight into a third, mapped
// buffer, the remote tier, which grows as needed and is reused.
//
// Gather maps the minibatch's ids to (tier, slot) pairs on the host,
// uploads the two int32 arrays and launches the gather_rows kernel of
// gnnmpi/gpu/kernels into a reusable device output buffer: no feature value
// is gathered or staged by the CPU. GatherTo writes into a buffer of the
// caller's (NewOut) instead, so that a loader preparing minibatches ahead
// keeps each one's matrix until it has been computed. Reads counts the rows and bytes each
// tier served, for the metrics.
//
// Dense stores of either dtype are supported. The tiers of an F16 store
// hold its half-precision rows (half the device and mapped host memory),
// the remote rows arrive as they travel, in half precision
// (alltoall.Store.FetchSlotsF16), and the gather_rows_f16 kernel converts
// each value to float32 as it gathers, so the matrix is float32 either
// way, equal bit for bit to the store's Fetch. A sparse store is an error
// (alltoall.ErrNotF32). The package is pure Go over gnnmpi/gpu/cuda;
// its tests run on the fake CUDA of gnnmpi/gpu/gputest.
package tier
