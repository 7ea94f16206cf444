// Kernels of the device GAT layer (model.GAT on gpu/gnn): attention scores,
// the edge softmax, the weighted sum and their backward passes, plus ELU,
// the activation between GAT layers.
//
// A layer has h heads of width d; Z = X·W is NSrc×(h·d) row-major, head k
// of row j being z[j*h*d + k*d : …+d]. The edges of destination i are
// esrc[eptr[i] : eptr[i+1]] (model.AttendedEdges: the block's row, then the
// self-loop), edst[e] is edge e's destination, and per-edge arrays hold h
// values, edge e's head k at e*h+k. The backward pass gathers over each
// source's edges through the transpose: tedge[tptr[j] : tptr[j+1]] are the
// edges whose source is j, in increasing order. Every sum is a loop in a
// fixed order (no atomics), so a step's gradients do not depend on the
// schedule. `concat` (0 or 1) says whether the heads are concatenated (an
// output of width h·d) or averaged (width d, each head's term times 1/h).
// `drop` is the attention dropout scale per edge and head, or NULL.
#ifndef GNNMPI_KERNEL
#define GNNMPI_KERNEL(name)
#endif

// elu_forward: y[i] = x[i] for x[i] > 0, else expm1(x[i]). y may be x.
extern "C" __global__ void elu_forward(float *y, const float *x, long long n) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		y[i] = x[i] > 0.0f ? x[i] : expm1f(x[i]);
	}
}
GNNMPI_KERNEL(elu_forward)

// elu_backward: dx[i] = dy[i] where the forward output y[i] > 0, else
// dy[i]·(y[i]+1) (= dy·eˣ). dx may be dy.
extern "C" __global__ void elu_backward(float *dx, const float *dy, const float *y, long long n) {
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		dx[i] = y[i] > 0.0f ? dy[i] : dy[i] * (y[i] + 1.0f);
	}
}
GNNMPI_KERNEL(elu_backward)

// gat_scores: per source j and head k, er[j*h+k] = att_r[k]·z_jk and, for
// the destinations (j < nd), el[j*h+k] = att_l[k]·z_jk.
extern "C" __global__ void gat_scores(float *__restrict__ el, float *__restrict__ er, const float *__restrict__ z,
		const float *__restrict__ att_l, const float *__restrict__ att_r, int ns, int nd, int h, int d) {
	const long long n = (long long)ns * h;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const long long j = t / h;
		const int k = (int)(t % h);
		const float *zk = z + j * h * d + (long long)k * d;
		float sl = 0.0f, sr = 0.0f;
		for (int c = 0; c < d; c++) {
			sl += att_l[k * d + c] * zk[c];
			sr += att_r[k * d + c] * zk[c];
		}
		er[t] = sr;
		if (j < nd) {
			el[t] = sl;
		}
	}
}
GNNMPI_KERNEL(gat_scores)

// gat_softmax: per destination i and head k, the logits
// s[e*h+k] = el[i*h+k] + er[esrc[e]*h+k] of i's edges and their attention
// coefficients alpha = softmax over the edges of LeakyReLU_slope(s), the
// row's maximum subtracted.
extern "C" __global__ void gat_softmax(float *__restrict__ s, float *__restrict__ alpha, const float *__restrict__ el,
		const float *__restrict__ er, const int *__restrict__ eptr, const int *__restrict__ esrc, int nd, int h, float slope) {
	const long long n = (long long)nd * h;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const long long i = t / h;
		const int k = (int)(t % h);
		float m = 0.0f; // every row has an edge (its self-loop)
		for (int e = eptr[i]; e < eptr[i + 1]; e++) {
			float v = el[t] + er[(long long)esrc[e] * h + k];
			s[(long long)e * h + k] = v;
			v = v < 0.0f ? v * slope : v;
			alpha[(long long)e * h + k] = v;
			m = e == eptr[i] ? v : max(m, v);
		}
		float sum = 0.0f;
		for (int e = eptr[i]; e < eptr[i + 1]; e++) {
			const float v = expf(alpha[(long long)e * h + k] - m);
			alpha[(long long)e * h + k] = v;
			sum += v;
		}
		const float inv = 1.0f / sum;
		for (int e = eptr[i]; e < eptr[i + 1]; e++) {
			alpha[(long long)e * h + k] *= inv;
		}
	}
}
GNNMPI_KERNEL(gat_softmax)

// gat_aggregate: per destination i and output column, the weighted sum of
// its edges' sources: with concat, column k*d+c is Σ_e α'[e,k]·z[src, k*d+c];
// averaged, column c is (1/h)·Σ_k Σ_e α'[e,k]·z[src, k*d+c], where α' is
// alpha times drop.
extern "C" __global__ void gat_aggregate(float *__restrict__ out, const float *__restrict__ alpha, const float *__restrict__ drop,
		const float *__restrict__ z, const int *__restrict__ eptr, const int *__restrict__ esrc, int nd, int h, int d, int concat) {
	const int od = concat ? h * d : d, hd = h * d;
	const long long n = (long long)nd * od;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const long long i = t / od;
		const int col = (int)(t % od);
		const int c = col % d;
		const int k0 = concat ? col / d : 0, k1 = concat ? k0 + 1 : h;
		float acc = 0.0f;
		for (int k = k0; k < k1; k++) {
			for (int e = eptr[i]; e < eptr[i + 1]; e++) {
				float a = alpha[(long long)e * h + k];
				if (drop) {
					a *= drop[(long long)e * h + k];
				}
				acc += a * z[(long long)esrc[e] * hd + k * d + c];
			}
		}
		out[t] = concat ? acc : acc / (float)h;
	}
}
GNNMPI_KERNEL(gat_aggregate)

// gat_dalpha: per edge e and head k, dal[e*h+k] = dL/dα (before dropout's
// scale) = hs·(dy_i,k · z_j,k)·drop[e,k], with i = edst[e], j = esrc[e],
// dy_i,k the head's slice of dy's row i (concat) or the whole row
// (averaged), and hs 1 or 1/h.
extern "C" __global__ void gat_dalpha(float *__restrict__ dal, const float *__restrict__ dy, const float *__restrict__ z,
		const float *__restrict__ drop, const int *__restrict__ edst, const int *__restrict__ esrc, long long ne, int h, int d, int concat) {
	const int od = concat ? h * d : d, hd = h * d;
	const float hs = concat ? 1.0f : 1.0f / (float)h;
	const long long n = ne * h;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const long long e = t / h;
		const int k = (int)(t % h);
		const float *g = dy + (long long)edst[e] * od + (concat ? k * d : 0);
		const float *zk = z + (long long)esrc[e] * hd + k * d;
		float dot = 0.0f;
		for (int c = 0; c < d; c++) {
			dot += g[c] * zk[c];
		}
		float v = hs * dot;
		if (drop) {
			v *= drop[t];
		}
		dal[t] = v;
	}
}
GNNMPI_KERNEL(gat_dalpha)

// gat_softmax_backward: per destination i and head k, the gradient of the
// logits before the LeakyReLU, ds[e*h+k] = α·(dal − Σ_e' α·dal)·(slope
// where s ≤ 0), and del[i*h+k] = Σ_e ds[e*h+k].
extern "C" __global__ void gat_softmax_backward(float *__restrict__ ds, float *__restrict__ del, const float *__restrict__ alpha,
		const float *__restrict__ dal, const float *__restrict__ s, const int *__restrict__ eptr, int nd, int h, float slope) {
	const long long n = (long long)nd * h;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const long long i = t / h;
		const int k = (int)(t % h);
		float dot = 0.0f;
		for (int e = eptr[i]; e < eptr[i + 1]; e++) {
			dot += alpha[(long long)e * h + k] * dal[(long long)e * h + k];
		}
		float sum = 0.0f;
		for (int e = eptr[i]; e < eptr[i + 1]; e++) {
			const long long q = (long long)e * h + k;
			float v = alpha[q] * (dal[q] - dot);
			if (s[q] <= 0.0f) {
				v *= slope;
			}
			ds[q] = v;
			sum += v;
		}
		del[t] = sum;
	}
}
GNNMPI_KERNEL(gat_softmax_backward)

// gat_src_grad: per source j and column col = k*d+c of Z, over the edges
// whose source is j (the transpose), dL/dZ:
//   dz[j, col] = Σ_e hs·α'[e,k]·dy[edst[e], concat ? col : c]
//              + der[j,k]·att_r[k,c] + (j < nd ? del[j,k]·att_l[k,c] : 0),
// with der[j,k] = Σ_e ds[e,k], which the thread of c = 0 also stores.
extern "C" __global__ void gat_src_grad(float *__restrict__ dz, float *__restrict__ der, const float *__restrict__ dy,
		const float *__restrict__ alpha, const float *__restrict__ drop, const float *__restrict__ ds, const float *__restrict__ del,
		const float *__restrict__ att_l, const float *__restrict__ att_r, const int *__restrict__ tptr, const int *__restrict__ tedge,
		const int *__restrict__ edst, int ns, int nd, int h, int d, int concat) {
	const int od = concat ? h * d : d, hd = h * d;
	const float hs = concat ? 1.0f : 1.0f / (float)h;
	const long long n = (long long)ns * hd;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const long long j = t / hd;
		const int col = (int)(t % hd);
		const int k = col / d, c = col % d;
		const int oc = concat ? col : c;
		float acc = 0.0f, r = 0.0f;
		for (int q = tptr[j]; q < tptr[j + 1]; q++) {
			const long long e = tedge[q];
			float a = alpha[e * h + k];
			if (drop) {
				a *= drop[e * h + k];
			}
			acc += hs * a * dy[(long long)edst[e] * od + oc];
			r += ds[e * h + k];
		}
		acc += r * att_r[col];
		if (j < nd) {
			acc += del[j * h + k] * att_l[col];
		}
		dz[t] = acc;
		if (c == 0) {
			der[j * h + k] = r;
		}
	}
}
GNNMPI_KERNEL(gat_src_grad)

// diag_blocks: dst[k*d+c] = p[k, k*d+c] for the h×(h·d) row-major p: the
// diagonal blocks of P = Eᵀ·Z (E: rows×h per-head coefficients), which are
// the attention vectors' gradients Σ_j E[j,k]·z[j, k*d+c].
extern "C" __global__ void diag_blocks(float *__restrict__ dst, const float *__restrict__ p, int h, int d) {
	const long long n = (long long)h * d;
	for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
		const long long k = t / d;
		dst[t] = p[k * h * d + t];
	}
}
GNNMPI_KERNEL(diag_blocks)
