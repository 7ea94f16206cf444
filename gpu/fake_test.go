package gpu

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeGPU is what one fake device reports.
type fakeGPU struct {
	name, uuid, busID string
	total, free       uint64

	// Non-SUCCESS values make the matching call fail.
	nameRet, uuidRet, memRet, pciRet nvml.Return
}

// busID returns an nvml.PciInfo.BusId holding s.
func busID(s string) [32]uint8 {
	var b [32]uint8
	copy(b[:], s)
	return b
}

// newFakeDevice returns a mock.Device that reports g.
func newFakeDevice(g fakeGPU) *mock.Device {
	return &mock.Device{
		GetNameFunc: func() (string, nvml.Return) { return g.name, g.nameRet },
		GetUUIDFunc: func() (string, nvml.Return) { return g.uuid, g.uuidRet },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: g.total, Free: g.free, Used: g.total - g.free}, g.memRet
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{BusId: busID(g.busID)}, g.pciRet
		},
	}
}

// newFakeLib returns a mock.Interface whose Init returns initRet and which
// lists gpus. Functions the code under test must not call are left nil, so
// calling them panics.
func newFakeLib(initRet nvml.Return, gpus ...fakeGPU) *mock.Interface {
	devs := make([]nvml.Device, len(gpus))
	for i, g := range gpus {
		devs[i] = newFakeDevice(g)
	}
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return initRet },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
}

// Two H100s as a DGX H100 reports them; memory figures are those of an
// 80 GB part (81559 MiB total) with a CUDA context open on the first.
var (
	h100a = fakeGPU{
		name:  "NVIDIA H100 80GB HBM3",
		uuid:  "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6",
		busID: "00000000:18:00.0",
		total: 81559 << 20, free: 80965 << 20,
	}
	h100b = fakeGPU{
		name:  "NVIDIA H100 80GB HBM3",
		uuid:  "GPU-2c4b7e1a-0f5e-4b0c-9d1e-7a3f8c6d5e42",
		busID: "00000000:2A:00.0",
		total: 81559 << 20, free: 81079 << 20,
	}
)

// wantDevice is the Device that g at NVML index i should become.
func wantDevice(i int, g fakeGPU) Device {
	return Device{Index: i, Name: g.name, UUID: g.uuid, MemoryTotal: g.total, MemoryFree: g.free, PCIBusID: g.busID}
}
