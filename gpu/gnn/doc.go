// Package gnn runs the minibatch training step and layer-wise inference of
// GraphSAGE, GCN and GAT on an NVIDIA GPU: forward, loss, backward and the
// Adam update of a model whose weights live in device memory, mirroring
// model.Model of kind "sage", "gcn" or "gat" on dense or sparse (CSR)
// input features to float32 rounding.
//
// # Overview
//
// New builds a Model for a model.Config on a gpu/cuda Context: the flat
// weights, gradients and Adam moments in device memory, in the order of
// model.Model.FlattenWeights, cuBLAS and cuSPARSE handles (gpu/blas) and
// the kernels of gpu/kernels. Step takes a minibatch (the sampled blocks,
// input layer first, the input rows, the seeds' labels) with the input
// either on the host (Step: uploaded once per minibatch), already on the
// device (StepDevice: what the feature tiers' gather produces) or as
// sparse rows on the host (StepSparse: uploaded in CSR form), and leaves
// the gradients on the device. Per layer l, with A the block, X its input
// (NSrc×fin) and M the row-mean matrix of A (values 1/deg, like model's
// mean aggregation):
//
//	X' = X ⊙ mask_l (dropout, training),  G = M·X' (cuSPARSE SpMM),
//	H  = X'[:NDst]·W_self + G·W_neigh + b (cuBLAS SGEMM, add_bias),
//
// with ReLU between layers and softmax cross-entropy (softmax_xent) on the
// logits; the backward pass mirrors it (col_sum for the bias gradient,
// SpMM with Mᵀ for the input gradient). The aggregation always comes
// first (model.SAGE may multiply first; both orders agree to rounding).
// A GCN layer has one weight and aggregates with the block's Values (Â,
// which the trainer sets with model.GCNNorm) instead of M:
//
//	H = (Â·X')·W + b.
//
// A GAT layer (model.GAT: h heads of width d) projects first, Z = X'·W
// (SGEMM; SpMM for sparse input rows), and attends over the block's edges
// with self-loops (model.AttendedEdges, uploaded with their transpose,
// model.EdgesBySource) in the kernels of gpu/kernels' gat.cu: the scores
// el = Z[:NDst]·a_l and er = Z·a_r, the softmax over each destination's
// edges of LeakyReLU(el_i + er_j), and the weighted sum of the sources'
// rows, heads concatenated (hidden layers) or averaged (the output
// layer); ELU follows a hidden layer. Its backward pass computes dα, the
// softmax's backward, and dZ by a gather over each source's edges (no
// atomics: the same gradients whatever the schedule); the attention
// vectors' gradients are the diagonal blocks of one SGEMM Eᵀ·Z, and
// dW = X'ᵀ·dZ. The attention dropout scales are drawn on the host with
// model.AttentionMask, right after the layer's feature dropout, as
// model.GAT.Forward draws them.
//
// With sparse input rows X (StepSparse), the input layer projects first,
// as model's ForwardSparse does, every product a cuSPARSE SpMM of the CSR
// rows: Z = X·W_neigh, H = X[:NDst]·W_self + M·Z + b (GCN: Z = X·W,
// H = Â·Z + b), and backward dW_self = X[:NDst]ᵀ·dH, dW_neigh = Xᵀ·(Mᵀ·dH)
// (GCN: dW = Xᵀ·(Âᵀ·dH)), with op(X) = Xᵀ; the sparse rows get no
// gradient. Their dropout is applied on the host with
// model.Dropout.ForwardSparse (the same draws) before the upload.
//
// The dropout masks are made on the device: the host draws each layer's
// key (model.Dropout.MaskKey) from the same rng stream, in the same order,
// as model.Model.Forward draws them, and the dropout_mask kernel makes
// from it the mask model.Dropout.Mask would (one PCG stream per row), which
// mul_mask applies: the device drops exactly the elements the host model
// drops. The input layer's dropout draws nothing for zero inputs
// (Dropout.SkipZeros), which the kernel reads on the device. (Drawn on the
// host and uploaded, with the input downloaded for the zeros, the masks
// took about 150 ms a step on an H200 for a minibatch of 150,000 input rows
// of 100 features: bench/results/gpu-h200.)
//
// AdamStep applies model.Adam's update on the device (adam_step) with the
// host optimizer's hyperparameters and step count (model.Adam.Advance);
// LoadAdam and StoreAdam move its moments between the host optimizer and
// the device, so that checkpoints see them. Grads and SetGrads move the
// flat gradient through host memory, for an Allreduce over MPI between
// ranks (host staging); LoadWeights and StoreWeights move the weights, so
// that checkpoints see them.
//
// InferLayer (InferLayerDevice, InferLayerSparse) runs one layer in
// evaluation, without dropout, on a chunk of layer-wise inference: the
// chunk's full-neighbour block and its input rows, on the host (uploaded)
// or on the device, with the output downloaded, as model.Model's
// ForwardLayer computes it. InferAggregated computes a SAGE or GCN layer
// from its destinations' aggregated sums, as ForwardLayerAggregated does.
//
// # Limits
//
// GraphSAGE, GCN and GAT run on the device: normalised hidden layers
// (--normalize) and the SGD optimizer (--optimizer sgd) are errors naming
// the flag (ErrUnsupported).
//
// # Threads
//
// cuBLAS and cuSPARSE work in the calling thread's current context, so
// every method runs inside cuda.Context.Do, and a Model is not safe for
// concurrent use.
package gnn
