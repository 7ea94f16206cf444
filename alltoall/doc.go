// Package alltoall will hold distributed feature fetching: a pure plan of
// which rows to request from which rank, the Alltoallv exchange, c-fold
// replication and the VIP cache of SALIENT++.
//
// It is empty until the training and feature-store issues fill it.
package alltoall
