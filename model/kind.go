package model

import "gnnmpi/internal/enum"

// Kind names a kind of GNN layer: the layers of a minibatch model
// (Config.Kind: KindSAGE, KindGCN or KindGAT) or the Hidden→Hidden Convs of
// a deep full-graph model (DeepConfig.Kind: KindGCN, KindSAGE, KindResGCN
// or KindGCNII). Its value is the name flags, configs and metrics spell.
// It implements flag.Value.
type Kind string

// Kinds of layers.
const (
	KindSAGE   Kind = "sage"   // GraphSAGE with the mean aggregator
	KindGCN    Kind = "gcn"    // GCN (Kipf and Welling 2017)
	KindGAT    Kind = "gat"    // GAT (minibatch models only)
	KindResGCN Kind = "resgcn" // DeeperGCN's residual GCN block (deep models only)
	KindGCNII  Kind = "gcnii"  // GCNII (deep models only)
)

// Kinds lists every kind, in the order flags and errors list them.
var Kinds = []Kind{KindSAGE, KindGCN, KindGAT, KindResGCN, KindGCNII}

// MinibatchKinds lists the kinds of Config (minibatch models).
var MinibatchKinds = []Kind{KindSAGE, KindGCN, KindGAT}

// DeepKinds lists the kinds of DeepConfig (deep full-graph models).
var DeepKinds = []Kind{ConvGCN, ConvSAGE, ConvResGCN, ConvGCNII}

// ParseKind returns the kind named s, or an error listing the kinds.
func ParseKind(s string) (Kind, error) {
	return enum.Parse("model", "model", s, Kinds...)
}

// String returns the kind's name.
func (k Kind) String() string { return string(k) }

// Set sets k to the kind named s, leaving it alone when s names none (flag.Value).
func (k *Kind) Set(s string) error { return enum.Set(k, ParseKind, s) }

// OptimizerKind names an optimizer that NewOptimizer builds. It implements
// flag.Value.
type OptimizerKind string

// Optimizer kinds.
const (
	OptimizerAdam OptimizerKind = "adam" // NewAdam
	OptimizerSGD  OptimizerKind = "sgd"  // NewSGD, with momentum
)

// OptimizerKinds lists the optimizer kinds.
var OptimizerKinds = []OptimizerKind{OptimizerAdam, OptimizerSGD}

// ParseOptimizerKind returns the optimizer kind named s, or an error listing
// the kinds.
func ParseOptimizerKind(s string) (OptimizerKind, error) {
	return enum.Parse("model", "optimizer", s, OptimizerKinds...)
}

// String returns the optimizer's name.
func (k OptimizerKind) String() string { return string(k) }

// Set sets k to the optimizer kind named s, leaving it alone when s names none (flag.Value).
func (k *OptimizerKind) Set(s string) error { return enum.Set(k, ParseOptimizerKind, s) }
