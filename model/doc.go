// Package model holds GNN layers with explicit forward and backward passes,
// the softmax cross-entropy loss and optimizers. It does no communication.
//
// # Overview
//
// A Layer maps a bipartite block and its source features to destination
// features. A block is an NDst×NSrc *sparse.CSR in which row i lists the
// sources of destination i, and the first NDst sources are the destinations
// themselves (DGL's block convention), so x's rows 0..NDst−1 are the
// destinations' own features. SAGE (mean aggregator), GCN (with GCNNorm to
// build its normalised block) and GAT (multi-head attention) implement Layer.
// Model stacks them with activations and dropout, as built by New from a
// Config, and exposes its parameters as one flat buffer for a single
// Allreduce (FlattenGrads, SetGrads) and for checkpoints (FlattenWeights,
// SetWeights). Adam and SGD implement Optimizer with PyTorch's semantics and
// a State that round-trips exactly.
//
// Deep full-graph models (GCN, SAGE, ResGCN and GCNII stacks of tens of
// layers) are assembled by the caller from the parts that DeepConfig
// describes: a Linear input layer, Layers Convs of width Hidden built by
// NewConv, and a Linear output layer, with dropout applied between them by
// the caller. A Conv includes its nonlinearity (for ResGCN DeeperGCN's
// pre-activation: a per-row LayerNorm and ReLU before the convolution, none
// after the residual addition) and takes an aux input for
// residuals (ResGCN's undropped input, GCNII's initial representation H⁰);
// Shared copies of a Linear or Conv share its Params but not its cache, so
// several graph chunks can be in flight through one layer. A Conv computes
// on a Block, a block's CSR together with what layers derive from the block
// alone (its values as float32, scaled by GCNII's 1−α; the transpose that
// Backward gathers through): the Block computes each once and every layer
// and copy on it shares them, so that a layer keeps only what depends on
// its input (see Conv.Forward).
//
// # Sparse input
//
// Bag-of-words features (0.4–1.3% nonzero) enter the first layer as CSR
// rows, a *sparse.Matrix[float32] whose Values may be nil for a pattern
// (every stored value 1, never materialised). Model.ForwardSparse and
// Model.ForwardLayerSparse take them in place of Forward's and
// ForwardLayer's dense x; every layer kind implements SparseLayer, whose
// ForwardSparse projects first (SAGE: X_dst·W_self + mean_A(X·W_neigh) + b;
// GCN: Â·(X·W) + b; GAT: Z = X·W, then attention), and Backward after it
// adds Xᵀ·dZ into the weight gradients without densifying X (there is no
// dL/dX). Linear.ForwardSparse does the same for the deep models' input
// layer. The input Dropout of a Model draws one random number per nonzero
// (Dropout.SkipZeros) in row-major order, as Dropout.ForwardSparse does per
// stored nonzero, so the dense and the sparse path drop the same entries
// and train to the same losses up to float32 rounding. Each row draws from
// its own stream, keyed by the layer's key and the row's index or, with
// ForwardIDs and ForwardSparseIDs, the row's global vertex id (GAT's
// attention dropout then by the edge's two ids, AttentionMask), so that a
// minibatch trainer's masks do not depend on where a vertex's row is.
//
// # Computation
//
// All values are float32, in row-major *dense.Matrix. Dense products go
// through an injected blas.Float32Level3 (nil selects gonum's pure Go BLAS;
// main passes OpenBLAS), using transposed operands rather than transposed
// copies. Sparse aggregation is a CSR×dense product split across goroutines
// by rows (gather) or by feature columns (scatter, for backward), so its
// results do not depend on the number of goroutines; the sparse-input
// products do the same (rows for X·W; fixed blocks of 64 columns for Xᵀ·dZ,
// each summing in row-major entry order).
//
// # Ownership and determinism
//
// Forward methods cache what Backward needs and keep references to their
// inputs, which must not change until Backward returns. Returned matrices are
// new and owned by the caller. Backward adds into Param.Grad; call ZeroGrad
// before a fresh gradient (it only marks the gradients zero, and the next
// Backward overwrites them). Nothing draws from a global random source: weight
// initialisation and dropout take a *rand.Rand, so equal seeds give
// bit-identical results. Types in this package are not safe for concurrent
// use, but for Block.
//
// The GraphSAGE step on a GPU (forward, backward and Adam in device memory,
// with this package's shapes, initialisation and dropout masks) is package
// gpu/gnn; it sits under gpu/ because it needs the CUDA libraries, which
// this pure-Go package never links.
//
// How to add a layer is described in docs/architecture.md of the
// repository; the minibatch models in docs/training.md, the deep ones in
// docs/full-graph.md.
package model
