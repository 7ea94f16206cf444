package nccl

import "gnnmpi/collective"

// NewCounted returns New(world, dev) wrapped in collective.WithStats over
// world's counters (collective.StatsOf), so that the NCCL calls add to
// the bytes counted on world; New's setup traffic is not counted. It is
// collective over world, as New.
func NewCounted(world collective.Comm, dev DeviceMemory) (collective.Comm, error) {
	nc, err := New(world, dev)
	if err != nil {
		return nil, err
	}
	return collective.WithStats(nc, collective.StatsOf(world)), nil
}
