// Package model will hold the GNN layers (GraphSAGE, GCN, GAT, GCNII,
// ResGCN) with explicit forward and backward passes, losses and optimizers.
// It does no communication.
//
// It is empty until the training issue fills it.
package model
