// Package sampling will hold minibatch sampling written as sparse matrix
// products (GraphSAGE node-wise and LADIES layer-wise, bulk over many
// minibatches), producing per-layer bipartite blocks.
//
// It is empty until the training and sampling issues fill it.
package sampling
