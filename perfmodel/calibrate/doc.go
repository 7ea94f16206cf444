// Package calibrate measures the network model of package perfmodel on a
// communicator: the α–β microbenchmark of gnnmpi predict --calibrate.
//
// # Overview
//
// Network times every kind of call of the model (Allreduce, Alltoallv,
// Allgatherv, Bcast, Sendrecv pairs, Barrier) at message sizes growing by
// powers of 4, takes each size's median over repetitions of the slowest
// rank's time, and fits α and β per kind (perfmodel.FitNetwork). The bytes
// of a sample are those the busiest rank moves (collective's volume
// functions), the quantity the model's workloads count.
package calibrate
