// Elementwise kernels of the device training step. Every kernel walks its
// elements (or rows) with a grid-stride loop, so any grid covers them.
// No shared memory, __syncthreads, shuffles or atomics (see gpu/cuda's
// shim): the fake CUDA runs the same source on the CPU.
#ifndef GNNMPI_KERNEL
#define GNNMPI_KERNEL(name)
#endif

// relu_forward: y[i] = max(x[i], 0) for i < n. y may be x.
extern "C" __global__ void relu_forward(float *y, const float *x, long long n) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
	}
}
GNNMPI_KERNEL(relu_forward)

// relu_backward: dx[i] = dy[i] where x[i] > 0, else 0 (x: the forward input
// or output). dx may be dy.
extern "C" __global__ void relu_backward(float *dx, const float *dy, const float *x, long long n) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
	}
}
GNNMPI_KERNEL(relu_backward)

// add_bias: x[r, c] += b[c] for the rows×cols row-major x.
extern "C" __global__ void add_bias(float *x, const float *__restrict__ b, long long rows, int cols) {
	const long long n = rows * cols;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		x[i] += b[i % cols];
	}
}
GNNMPI_KERNEL(add_bias)

// scale_add: y[i] += a * x[i] (axpy).
extern "C" __global__ void scale_add(float *__restrict__ y, float a, const float *__restrict__ x, long long n) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		y[i] += a * x[i];
	}
}
GNNMPI_KERNEL(scale_add)

// softmax_xent: per row r of the rows×cols logits, one thread computes the
// cross-entropy loss[r] = logsumexp(z) - z[label[r]] and the gradient
// grad[r, :] = scale * (softmax(z) - onehot(label[r])). A row whose label is
// negative is masked: loss 0, gradient 0.
extern "C" __global__ void softmax_xent(float *__restrict__ grad, float *__restrict__ loss,
		const float *__restrict__ logits, const int *__restrict__ label, int rows, int cols, float scale) {
	for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += (long long)gridDim.x * blockDim.x) {
		const float *z = logits + r * cols;
		float *g = grad + r * cols;
		const int y = label[r];
		if (y < 0) {
			loss[r] = 0.0f;
			for (int c = 0; c < cols; c++) {
				g[c] = 0.0f;
			}
			continue;
		}
		float m = z[0];
		for (int c = 1; c < cols; c++) {
			m = max(m, z[c]);
		}
		float sum = 0.0f;
		for (int c = 0; c < cols; c++) {
			sum += expf(z[c] - m);
		}
		const float lse = m + logf(sum);
		loss[r] = lse - z[y];
		for (int c = 0; c < cols; c++) {
			g[c] = scale * (expf(z[c] - lse) - (c == y ? 1.0f : 0.0f));
		}
	}
}
GNNMPI_KERNEL(softmax_xent)

// adam_step: one Adam update with PyTorch's semantics, as model.Adam.Step:
// g' = g + wd*w; m = b1*m + (1-b1)*g'; v = b2*v + (1-b2)*g'^2;
// w -= step * m / (sqrt(v)/bc2s + eps), where the caller passes
// step = lr/(1-b1^t) and bc2s = sqrt(1-b2^t).
extern "C" __global__ void adam_step(float *__restrict__ w, const float *__restrict__ g, float *__restrict__ m,
		float *__restrict__ v, long long n, float step, float bc2s, float b1, float b2, float eps, float wd) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		const float gi = g[i] + wd * w[i];
		m[i] = b1 * m[i] + (1.0f - b1) * gi;
		v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
		const float den = sqrtf(v[i]) / bc2s + eps;
		w[i] = w[i] - step * m[i] / den;
	}
}
GNNMPI_KERNEL(adam_step)

// mul_mask: y[i] = x[i] * mask[i] (dropout with a mask from dropout_mask,
// and its backward). y may be x.
extern "C" __global__ void mul_mask(float *y, const float *x, const float *__restrict__ mask, long long n) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		y[i] = x[i] * mask[i];
	}
}
GNNMPI_KERNEL(mul_mask)

// gnnmpi_pcg_next advances the 128-bit PCG state (hi, lo) as model's
// rng.PCG.Next does (one LCG step) and returns its output.
__device__ __forceinline__ unsigned long long gnnmpi_pcg_next(unsigned long long *hi, unsigned long long *lo) {
	const unsigned long long mul_hi = 2549297995355413924ULL, mul_lo = 4865540595714422341ULL;
	const unsigned long long inc_hi = 6364136223846793005ULL, inc_lo = 1442695040888963407ULL;
	const unsigned long long p_hi = *hi, p_lo = *lo;
	unsigned long long h = __umul64hi(p_lo, mul_lo) + p_hi * mul_lo + p_lo * mul_hi;
	const unsigned long long l = p_lo * mul_lo + inc_lo;
	h += inc_hi + (l < inc_lo ? 1ULL : 0ULL);
	*hi = h;
	*lo = l;
	unsigned long long x = h;
	x ^= x >> 32;
	x *= 0xda942042e4dd58b5ULL;
	x ^= x >> 48;
	x *= l | 1ULL;
	return x;
}

// dropout_mask: the inverted-dropout mask that model.Dropout.Mask draws on
// the host, drawn on the device: row r of the rows×cols row-major mask takes
// its decisions from the PCG stream (hi = key, lo = ids[r]), or lo = r when
// ids is null (ids: the rows' global vertex ids), four 16-bit
// decisions per draw, low bits first; an element is kept (mask keep) when
// its bits are at least t, else dropped (0). With skip_zeros, an element
// whose x is 0 draws nothing and gets 0 (x is read only then). One thread a
// row, in column order (the decisions are sequential within a row).
extern "C" __global__ void dropout_mask(float *__restrict__ mask, const float *__restrict__ x,
		const long long *__restrict__ ids, long long rows, int cols, long long key, int t, float keep, int skip_zeros) {
	for (long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += (long long)gridDim.x * blockDim.x) {
		unsigned long long hi = (unsigned long long)key, lo = (unsigned long long)(ids ? ids[r] : r), bits = 0;
		int left = 0;
		float *m = mask + r * cols;
		const float *xr = x + r * cols;
		for (int c = 0; c < cols; c++) {
			if (skip_zeros && xr[c] == 0.0f) {
				m[c] = 0.0f;
				continue;
			}
			if (left == 0) {
				bits = gnnmpi_pcg_next(&hi, &lo);
				left = 4;
			}
			left--;
			m[c] = (bits & 0xffffULL) >= (unsigned long long)t ? keep : 0.0f;
			bits >>= 16;
		}
	}
}
GNNMPI_KERNEL(dropout_mask)

// col_sum: y[c] = sum over r of x[r, c] for the rows×cols row-major x (the
// bias gradient): one thread per column loops over the rows, in row order.
extern "C" __global__ void col_sum(float *__restrict__ y, const float *__restrict__ x, long long rows, int cols) {
	for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += (long long)gridDim.x * blockDim.x) {
		float s = 0.0f;
		for (long long r = 0; r < rows; r++) {
			s += x[r * cols + c];
		}
		y[c] = s;
	}
}
GNNMPI_KERNEL(col_sum)
