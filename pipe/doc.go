// Package pipe trains deep GNNs on the whole graph with GNNPipe (Chen,
// Chen, Qian, 2023), graph parallelism, or a hybrid of the two.
//
// # Overview
//
// A Layout puts p ranks in pipelines of stages: rank r is stage r mod S of
// pipeline r / S, so graph parallelism is S = 1, GNNPipe one pipeline of p
// stages, and the hybrid several pipelines, one per graph part. A Plan is
// the replicated, communication-free description of the graph: which part
// and chunk every vertex belongs to. A rank trains on its part's PartPlan:
// every chunk's block, the rows it needs from other parts and those it
// serves them; Plan.PartPlan derives it from the whole graph, NewBlockPlan
// (collective) from the part's own rows of a graph whose parts are
// contiguous id ranges, with the same result. The conv layers are split
// into S contiguous stages. Schedule is a pure function that returns every stage's steps
// (GPipe order: all chunks forward, then backward in reverse chunk order);
// its tests simulate it with synchronous sends and prove it deadlock-free,
// without communication. The executor runs the steps over a
// collective.Comm: activations and activation gradients go between stages
// by Send/Recv (phases "act" and "act-grad"), rows between parts by
// Alltoallv ("halo"), weight gradients by Allreduce ("grad"), and exact
// evaluation runs each part as one chunk ("eval").
//
// A chunk reads its neighbours in other chunks from historical embeddings
// (fresh when their chunk already ran this epoch, else the previous
// epoch's), and the staleness remedies (chunk shuffling, clearing late
// gradients, periodic snapshots) are switches in Config. With one chunk per
// part nothing is historical and every layout computes exact full-graph
// training. Analytical gives the exact bytes per epoch of a plan; State is
// what a rank checkpoints. Package train drives the trainer from its epoch
// loop.
//
// The design, the volume formulas and the checkpoint format are described
// in docs/full-graph.md of the repository.
package pipe
