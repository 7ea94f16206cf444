package gpu_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"gnnmpi/gpu"
)

// fakeNode returns go-nvml's fake NVML with two GPUs, so that the example's
// output does not depend on the machine it runs on. On a real node the
// library is nvml.New(), or simply call gpu.DiscoverSystem.
func fakeNode() nvml.Interface {
	dev := func(name, uuid, bus string, totalMiB, freeMiB uint64) nvml.Device {
		var busID [32]uint8
		copy(busID[:], bus)
		return &mock.Device{
			GetNameFunc: func() (string, nvml.Return) { return name, nvml.SUCCESS },
			GetUUIDFunc: func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
			GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
				return nvml.Memory{Total: totalMiB << 20, Free: freeMiB << 20}, nvml.SUCCESS
			},
			GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) { return nvml.PciInfo{BusId: busID}, nvml.SUCCESS },
		}
	}
	devices := []nvml.Device{
		dev("NVIDIA A100-SXM4-40GB", "GPU-5a1b", "00000000:07:00.0", 40960, 40448),
		dev("NVIDIA A100-SXM4-40GB", "GPU-9c2d", "00000000:0F:00.0", 40960, 40960),
	}
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devices), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return devices[i], nvml.SUCCESS
		},
	}
}

func Example() {
	devices, err := gpu.Discover(fakeNode())
	gpu.Report(os.Stdout, devices, err)

	// Local rank 3 of a node started with
	// mpirun -np 8 --map-by ppr:4:node ./gnnmpi.
	getenv := func(k string) string {
		return map[string]string{
			"OMPI_COMM_WORLD_LOCAL_RANK": "3",
			"OMPI_COMM_WORLD_LOCAL_SIZE": "4",
		}[k]
	}
	localRank, localSize, ok := gpu.LocalRankFromEnv(getenv)
	if !ok {
		// Here collective would compute the local rank with an MPI
		// shared-memory split.
		return
	}
	d, err := gpu.Bind(localRank, devices)
	switch {
	case errors.Is(err, gpu.ErrNoGPU):
		fmt.Println("train on the CPU:", err)
	case err != nil:
		fmt.Println("abort:", err)
	default:
		fmt.Printf("local rank %d of %d -> GPU %d (%s)\n", localRank, localSize, d.Index, d.UUID)
	}

	// The same program on a node without the NVIDIA driver.
	noDriver := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	devices, err = gpu.Discover(noDriver)
	gpu.Report(os.Stdout, devices, err)
	fmt.Println(errors.Is(err, gpu.ErrNoGPU))

	// Output:
	// 2 GPUs
	// INDEX  NAME                   UUID      PCI BUS ID        TOTAL     FREE
	// 0      NVIDIA A100-SXM4-40GB  GPU-5a1b  00000000:07:00.0  40.0 GiB  39.5 GiB
	// 1      NVIDIA A100-SXM4-40GB  GPU-9c2d  00000000:0F:00.0  40.0 GiB  40.0 GiB
	// local rank 3 of 4 -> GPU 1 (GPU-9c2d)
	// no GPU: no NVIDIA driver (libnvidia-ml.so.1 not found)
	// true
}
