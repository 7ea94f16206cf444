package gpucheck

import (
	"gnnmpi/collective"
	"gnnmpi/gpu"
)

// Binding is the GPUs one rank sees on its node and the one it binds to.
type Binding struct {
	LocalRank int // the rank's rank among the ranks of c on its node
	LocalSize int // the ranks of c on the node
	// Devices are the GPUs discovered (gpu.DiscoverSystem), and Err why
	// discovery failed; Bound, the device the rank binds to, is valid
	// only when Err is nil.
	Devices []gpu.Device
	Err     error
	Bound   gpu.Device
}

// Bind discovers the GPUs of this rank's node and binds the rank to one
// by its local rank (gpu.Bind): the one the launcher's environment names
// (gpu.LocalRankFromEnv over getenv), else its rank among the ranks of c
// on its node (collective.LocalRank). A failed discovery is reported in
// the Binding's Err, not as an error: the error is that of the
// communicator or of gpu.Bind.
//
// Bind is collective over c when the environment names no local rank: it
// splits c by node (one Split, counted under phase).
func Bind(c collective.Comm, getenv func(string) string, phase string) (Binding, error) {
	var b Binding
	b.Devices, b.Err = gpu.DiscoverSystem()
	var ok bool
	if b.LocalRank, b.LocalSize, ok = gpu.LocalRankFromEnv(getenv); !ok {
		restore := collective.SetPhase(c, phase)
		var err error
		b.LocalRank, b.LocalSize, err = collective.LocalRank(c)
		restore()
		if err != nil {
			return Binding{}, err
		}
	}
	if b.Err != nil {
		return b, nil
	}
	dev, err := gpu.Bind(b.LocalRank, b.Devices)
	if err != nil {
		return Binding{}, err
	}
	b.Bound = dev
	return b, nil
}
