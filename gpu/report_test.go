package gpu

import (
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
)

func TestReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		devices []Device
		err     error
		want    string
	}{
		{
			name: "library not found",
			err:  ErrNoGPU,
			want: "no GPU: no NVIDIA driver (libnvidia-ml.so.1 not found)\n",
		},
		{
			name: "driver not loaded",
			err:  &noGPUError{reason: "NVIDIA kernel driver not loaded: ERROR_DRIVER_NOT_LOADED", ret: nvml.ERROR_DRIVER_NOT_LOADED},
			want: "no GPU: NVIDIA kernel driver not loaded: ERROR_DRIVER_NOT_LOADED\n",
		},
		{
			name: "other error",
			err:  errors.New("gpu: nvml init: ERROR_UNKNOWN"),
			want: "no GPU: nvml init: ERROR_UNKNOWN\n",
		},
		{
			name: "empty",
			want: "no GPU: no devices\n",
		},
		{
			name:    "one device",
			devices: []Device{{Index: 0, Name: "Tesla V100-SXM2-16GB", UUID: "GPU-1", PCIBusID: "00000000:06:00.0", MemoryTotal: 16 << 30, MemoryFree: 15 << 30}},
			want: "1 GPU\n" +
				"INDEX  NAME                  UUID   PCI BUS ID        TOTAL     FREE\n" +
				"0      Tesla V100-SXM2-16GB  GPU-1  00000000:06:00.0  16.0 GiB  15.0 GiB\n",
		},
		{
			name:    "two devices",
			devices: []Device{wantDevice(0, h100a), wantDevice(1, h100b)},
			// 81559 MiB = 79.65 GiB; 80965 MiB = 79.07 GiB; 81079 MiB = 79.18 GiB.
			want: "2 GPUs\n" +
				"INDEX  NAME                   UUID                                      PCI BUS ID        TOTAL     FREE\n" +
				"0      NVIDIA H100 80GB HBM3  GPU-8932f937-d72c-4106-c12f-20bd9faed9f6  00000000:18:00.0  79.6 GiB  79.1 GiB\n" +
				"1      NVIDIA H100 80GB HBM3  GPU-2c4b7e1a-0f5e-4b0c-9d1e-7a3f8c6d5e42  00000000:2A:00.0  79.6 GiB  79.2 GiB\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			Report(&b, tc.devices, tc.err)
			assert.Equal(t, tc.want, b.String())
		})
	}
}
