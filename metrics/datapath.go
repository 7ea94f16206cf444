package metrics

import (
	"fmt"
	"slices"
)

// DataPath is the rate the data path of minibatch training (sampling plus
// the feature fetch) delivers minibatches at on its own, timed by the
// loader over the run's epochs: a minibatch's preparation is timed, not
// the compute that consumes it. With overlap (train's --overlap) the
// loader shares the cores with the compute loop, so the rates are those
// it reached beside it; with --overlap=false it ran alone.
type DataPath struct {
	// Minibatches is the number of minibatches each rank prepared.
	Minibatches int64 `json:"minibatches"`
	// MinibatchesPerS is every rank's Minibatches over its sample plus
	// fetch seconds.
	MinibatchesPerS []float64 `json:"minibatches_per_s"`
	// GatheredBytes is the bytes of the input rows rank 0 (the record's
	// writer) fetched: rows × features × 4 for dense rows as float32, the
	// arrays of the sparse rows, or the device buffer's bytes.
	GatheredBytes int64 `json:"gathered_bytes"`
	// GatherGBps is GatheredBytes over rank 0's fetch seconds (network
	// included when rows come from other ranks), in GB/s (10⁹ bytes).
	GatherGBps float64 `json:"gather_gbps"`
	// CopyGBps is the machine's copy bandwidth as rank 0's process
	// measured it once (the best of three memmoves of a 32 MiB buffer):
	// the bound GatherGBps is compared with.
	CopyGBps float64 `json:"copy_gbps"`
	// OnDevice is set when a GPU gathered the rows from its feature tiers
	// (train's --device cuda with dense rows): they cross the host link
	// or come from device memory, so the host's copy bandwidth does not
	// bound GatherGBps, and Summary does not compare them.
	OnDevice bool `json:"on_device,omitempty"`
}

// Summary returns the data path's rates as a log line: the slowest and the
// fastest rank's minibatches/s, and rank 0's gather rate against its copy
// bandwidth (not compared when the rows were gathered on a GPU).
func (d *DataPath) Summary() string {
	lo, hi := 0.0, 0.0
	if len(d.MinibatchesPerS) > 0 {
		lo, hi = slices.Min(d.MinibatchesPerS), slices.Max(d.MinibatchesPerS)
	}
	share := 0.0
	if d.CopyGBps > 0 {
		share = 100 * d.GatherGBps / d.CopyGBps
	}
	head := fmt.Sprintf("data path (sample+fetch alone): %.1f minibatches/s (slowest rank; fastest %.1f); ", lo, hi)
	if d.OnDevice {
		return head + fmt.Sprintf("rank 0's GPU gathers %.2f GB/s from its feature tiers", d.GatherGBps)
	}
	return head + fmt.Sprintf("rank 0 gathers %.2f GB/s, %.0f%% of its %.1f GB/s copy bandwidth", d.GatherGBps, share, d.CopyGBps)
}
