// shim.h maps the subset of CUDA C that gnnmpi's kernels use onto plain
// C++, so that the fake NVRTC can compile gpu/kernels/*.cu with gcc and the
// fake libcuda can run them on the CPU, one thread after another.
//
// Supported: __global__, __device__, __forceinline__, __restrict__,
// threadIdx/blockIdx/blockDim/gridDim, warpSize, min/max, expf/logf/sqrtf/
// powf/fabsf, __ldg (a plain load), __umul64hi. Not supported: __syncthreads, shared
// memory, warp shuffles, atomics; the kernels must not use them (the
// threads of a block run one after another, to completion).
//
// GNNMPI_KERNEL(name), written after each kernel, defines the launcher
// name__gnnmpi_launch that the fake cuLaunchKernel calls: it loops over
// every block and thread, sets the index variables and calls the kernel
// with the arguments unpacked from kernelParams.
#include <math.h>
#include <stdint.h>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict

struct gnnmpi_dim3 {
	unsigned x, y, z;
};
static thread_local gnnmpi_dim3 threadIdx, blockIdx, blockDim, gridDim;
static const int warpSize = 32;

template <typename T> static inline T min(T a, T b) { return a < b ? a : b; }
template <typename T> static inline T max(T a, T b) { return a < b ? b : a; }
template <typename T> static inline T __ldg(const T *p) { return *p; }
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
	return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

template <typename... A, std::size_t... I>
static inline void gnnmpi_call(void (*k)(A...), void **p, std::index_sequence<I...>) {
	k(*static_cast<A *>(p[I])...);
}

template <typename... A>
static inline void gnnmpi_launch(void (*k)(A...), unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
		unsigned bz, void **p) {
	gridDim = {gx, gy, gz};
	blockDim = {bx, by, bz};
	for (unsigned z = 0; z < gz; z++)
		for (unsigned y = 0; y < gy; y++)
			for (unsigned x = 0; x < gx; x++) {
				blockIdx = {x, y, z};
				for (unsigned tz = 0; tz < bz; tz++)
					for (unsigned ty = 0; ty < by; ty++)
						for (unsigned tx = 0; tx < bx; tx++) {
							threadIdx = {tx, ty, tz};
							gnnmpi_call(k, p, std::index_sequence_for<A...>{});
						}
			}
}

#define GNNMPI_KERNEL(name)                                                                                     \
	extern "C" void name##__gnnmpi_launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,    \
			unsigned bz, void **p) {                                                                            \
		gnnmpi_launch(name, gx, gy, gz, bx, by, bz, p);                                                         \
	}
