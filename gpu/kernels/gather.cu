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

// half_bits_to_float returns the float32 of the IEEE half-precision value
// with bits h, exactly (every half is a float): sign, exponent rebiased
// from 15 to 127, fraction widened by 13 bits; subnormal halves are
// normalized, and infinities and NaNs (their payload kept) stay so. It is
// written on the bits, without cuda_fp16.h, so the test shim's C++
// compiler runs it too.
static __device__ __forceinline__ float half_bits_to_float(unsigned short h) {
	const unsigned sign = (unsigned)(h & 0x8000u) << 16;
	unsigned exp = (h >> 10) & 0x1fu;
	unsigned frac = h & 0x3ffu;
	unsigned bits;
	if (exp == 0x1fu) {
		bits = sign | 0x7f800000u | frac << 13;
	} else if (exp != 0) {
		bits = sign | (exp + 112u) << 23 | frac << 13;
	} else if (frac == 0) {
		bits = sign;
	} else {
		exp = 113u; // 127 − 14, lowered once per leading zero of frac
		while ((frac & 0x400u) == 0) {
			frac <<= 1;
			exp--;
		}
		bits = sign | exp << 23 | (frac & 0x3ffu) << 13;
	}
	union {
		unsigned u;
		float f;
	} v;
	v.u = bits;
	return v.f;
}

// gather_rows_f16 is gather_rows over tiers that hold IEEE half-precision
// rows (a feature store of dtype f16): a tier's row s starts at base +
// s*stride halves, and out receives the rows converted to float32, n×width
// row-major and contiguous, for the float32 step. Each lane of a warp
// reads one 4-byte pair of halves, so a pass of the warp covers one
// aligned 128-byte segment (64 halves) of the source row, starting at the
// segment that holds the row's first half: rows of any width, odd or
// ragged, at any 2-byte alignment.
extern "C" __global__ void gather_rows_f16(float *__restrict__ out, const unsigned short *__restrict__ dev,
		long long devStride, const unsigned short *__restrict__ host, long long hostStride,
		const unsigned short *__restrict__ remote, long long remoteStride, const int *__restrict__ tier,
		const int *__restrict__ slot, int n, int width) {
	const int lane = threadIdx.x % warpSize;
	const int warps = blockDim.x / warpSize;
	for (long long i = (long long)blockIdx.x * warps + threadIdx.x / warpSize; i < n; i += (long long)gridDim.x * warps) {
		const int t = __ldg(&tier[i]);
		const long long s = __ldg(&slot[i]);
		const unsigned short *src = t == 0 ? dev + s * devStride : t == 1 ? host + s * hostStride : remote + s * remoteStride;
		// Halves of src's 128-byte segment that precede the row.
		const int skip = (int)(((unsigned long long)src & 127ull) >> 1);
		float *dst = out + i * width;
		for (int j = 2 * lane - skip; j < width; j += 2 * warpSize) {
			if (j >= 0) {
				dst[j] = half_bits_to_float(__ldg(&src[j]));
			}
			if (j + 1 >= 0 && j + 1 < width) {
				dst[j + 1] = half_bits_to_float(__ldg(&src[j + 1]));
			}
		}
	}
}
GNNMPI_KERNEL(gather_rows_f16)
