// gather_rows builds a minibatch's input matrix from a tiered feature
// store: out[i, :] = row slot[i] of the device tier (tier[i] == 0: hot rows,
// resident in device memory), of the mapped host tier (tier[i] == 1: the
// other resident rows, in page-locked host memory read zero-copy through
// its device pointer) or of the remote tier (tier[i] == 2: rows received
// from other ranks into a second mapped buffer). out is n×width, row-major
// and contiguous; a tier's row s starts at base + s*stride floats. A tier
// no row reads may have a null base.
//
// PyTorch-Direct alignment: one warp per output row; its 32 lanes read
// 4-byte words so that each pass of the warp covers exactly one aligned
// 128-byte segment of the source row. The first pass starts at the segment
// holding the row's first word (lanes before the row's start idle), so rows
// of any width (ragged, not a multiple of 32 words) and rows that do not
// start on a 128-byte boundary cost one PCIe transaction per segment they
// touch. Rows are spread over the grid with a grid-stride loop; blockDim.x
// must be a multiple of 32.
//
// No shared memory, __syncthreads, shuffles or atomics (see gpu/cuda's
// shim): the fake CUDA runs the same source on the CPU.
#ifndef GNNMPI_KERNEL
#define GNNMPI_KERNEL(name)
#endif

extern "C" __global__ void gather_rows(float *__restrict__ out, const float *__restrict__ dev, long long devStride,
		const float *__restrict__ host, long long hostStride, const float *__restrict__ remote,
		long long remoteStride, const int *__restrict__ tier, const int *__restrict__ slot, int n, int width) {
	const int lane = threadIdx.x % warpSize;
	const int warps = blockDim.x / warpSize;
	for (long long i = (long long)blockIdx.x * warps + threadIdx.x / warpSize; i < n; i += (long long)gridDim.x * warps) {
		const int t = __ldg(&tier[i]);
		const long long s = __ldg(&slot[i]);
		const float *src = t == 0 ? dev + s * devStride : t == 1 ? host + s * hostStride : remote + s * remoteStride;
		// Words of src's 128-byte segment that precede the row.
		const int skip = (int)(((unsigned long long)src & 127ull) >> 2);
		float *dst = out + i * width;
		for (int j = lane - skip; j < width; j += warpSize) {
			if (j >= 0) {
				dst[j] = src[j];
			}
		}
	}
}
GNNMPI_KERNEL(gather_rows)
