package gpu

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Link is a device's PCIe link to the host as NVML reports it: the current
// generation and width (lanes), which a device may lower when idle, and
// the maximum the device and slot support.
type Link struct {
	Gen, Width       int // current
	MaxGen, MaxWidth int // supported
}

// perLaneGBps is the usable bandwidth of one PCIe lane and direction in
// GB/s (10⁹ bytes) by generation, after line coding (8b/10b up to gen 2,
// 128b/130b from gen 3; gen 6 counted at its raw rate less FLIT overhead).
var perLaneGBps = map[int]float64{1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}

// GBps returns the theoretical one-way bandwidth of the link at its
// maximum generation and width in GB/s, or 0 when NVML did not report
// them (or reports a generation this package does not know).
func (l Link) GBps() float64 {
	return perLaneGBps[l.MaxGen] * float64(l.MaxWidth)
}

// LinkOf returns the PCIe link of NVML device index, initializing and
// shutting down lib around the query. It returns an error wrapping
// ErrNoGPU without NVML, or the nvml.Return of a failed query.
func LinkOf(lib nvml.Interface, index int) (l Link, err error) {
	if _, err := Discover(lib); err != nil { // checks the library and the index range below
		return Link{}, err
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return Link{}, fmt.Errorf("gpu: NVML init: %w", ret)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			err = fmt.Errorf("gpu: NVML shutdown: %w", ret)
		}
	}()
	h, ret := lib.DeviceGetHandleByIndex(index)
	if ret != nvml.SUCCESS {
		return Link{}, fmt.Errorf("gpu: device %d: handle: %w", index, ret)
	}
	for _, q := range []struct {
		what string
		f    func() (int, nvml.Return)
		dst  *int
	}{
		{"PCIe link generation", h.GetCurrPcieLinkGeneration, &l.Gen},
		{"PCIe link width", h.GetCurrPcieLinkWidth, &l.Width},
		{"max PCIe link generation", h.GetMaxPcieLinkGeneration, &l.MaxGen},
		{"max PCIe link width", h.GetMaxPcieLinkWidth, &l.MaxWidth},
	} {
		v, ret := q.f()
		if ret != nvml.SUCCESS {
			return Link{}, fmt.Errorf("gpu: device %d: %s: %w", index, q.what, ret)
		}
		*q.dst = v
	}
	return l, nil
}

// LinkSystem is LinkOf on the real NVML library (libnvidia-ml.so.1).
func LinkSystem(index int) (Link, error) { return LinkOf(nvml.New(), index) }
