package gpu

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiscover(t *testing.T) {
	lost := h100b
	lost.nameRet = nvml.ERROR_GPU_IS_LOST
	noUUID := h100b
	noUUID.uuidRet = nvml.ERROR_UNKNOWN
	noPCI := h100b
	noPCI.pciRet = nvml.ERROR_GPU_IS_LOST
	memFail := h100b
	memFail.memRet = nvml.ERROR_UNKNOWN
	// Unified-memory parts answer ERROR_NOT_SUPPORTED for memory info.
	memUnsupported := h100b
	memUnsupported.memRet = nvml.ERROR_NOT_SUPPORTED
	memUnsupportedWant := wantDevice(1, memUnsupported)
	memUnsupportedWant.MemoryTotal, memUnsupportedWant.MemoryFree = 0, 0

	shutdownFails := newFakeLib(nvml.SUCCESS, h100a)
	shutdownFails.ShutdownFunc = func() nvml.Return { return nvml.ERROR_UNKNOWN }
	countFails := newFakeLib(nvml.SUCCESS, h100a)
	countFails.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
	handleFails := newFakeLib(nvml.SUCCESS, h100a)
	handleFails.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }

	for _, tc := range []struct {
		name string
		lib  *mock.Interface

		want         []Device
		wantIs       []error // errors.Is(err, target) must hold for each
		wantNoGPU    bool    // errors.Is(err, ErrNoGPU)
		wantMsg      string  // substring of err.Error()
		wantShutdown int     // calls to Shutdown
	}{
		{
			name:         "two devices",
			lib:          newFakeLib(nvml.SUCCESS, h100a, h100b),
			want:         []Device{wantDevice(0, h100a), wantDevice(1, h100b)},
			wantShutdown: 1,
		},
		{
			name:      "library not found",
			lib:       newFakeLib(nvml.ERROR_LIBRARY_NOT_FOUND),
			wantNoGPU: true,
			wantMsg:   "gpu: no NVIDIA driver (libnvidia-ml.so.1 not found)",
		},
		{
			name:      "driver not loaded",
			lib:       newFakeLib(nvml.ERROR_DRIVER_NOT_LOADED),
			wantIs:    []error{nvml.ERROR_DRIVER_NOT_LOADED},
			wantNoGPU: true,
			wantMsg:   "kernel driver not loaded",
		},
		{
			name:      "no permission",
			lib:       newFakeLib(nvml.ERROR_NO_PERMISSION),
			wantIs:    []error{nvml.ERROR_NO_PERMISSION},
			wantNoGPU: true,
			wantMsg:   "no permission",
		},
		{
			name:    "init failure",
			lib:     newFakeLib(nvml.ERROR_LIB_RM_VERSION_MISMATCH),
			wantIs:  []error{nvml.ERROR_LIB_RM_VERSION_MISMATCH},
			wantMsg: "gpu: nvml init: ERROR_LIB_RM_VERSION_MISMATCH",
		},
		{
			name:         "zero devices",
			lib:          newFakeLib(nvml.SUCCESS),
			wantNoGPU:    true,
			wantMsg:      "gpu: no GPU: NVML reports 0 devices",
			wantShutdown: 1,
		},
		{
			name:         "device count fails",
			lib:          countFails,
			wantIs:       []error{nvml.ERROR_UNKNOWN},
			wantMsg:      "gpu: nvml device count: ERROR_UNKNOWN",
			wantShutdown: 1,
		},
		{
			name:         "handle fails",
			lib:          handleFails,
			wantIs:       []error{nvml.ERROR_GPU_IS_LOST},
			wantMsg:      "gpu: device 0: handle: ERROR_GPU_IS_LOST",
			wantShutdown: 1,
		},
		{
			name:         "second device lost",
			lib:          newFakeLib(nvml.SUCCESS, h100a, lost),
			wantIs:       []error{nvml.ERROR_GPU_IS_LOST},
			wantMsg:      "gpu: device 1: name: ERROR_GPU_IS_LOST",
			wantShutdown: 1,
		},
		{
			name:         "UUID fails",
			lib:          newFakeLib(nvml.SUCCESS, h100a, noUUID),
			wantIs:       []error{nvml.ERROR_UNKNOWN},
			wantMsg:      "gpu: device 1: UUID: ERROR_UNKNOWN",
			wantShutdown: 1,
		},
		{
			name:         "PCI info fails",
			lib:          newFakeLib(nvml.SUCCESS, h100a, noPCI),
			wantIs:       []error{nvml.ERROR_GPU_IS_LOST},
			wantMsg:      "gpu: device 1: PCI info: ERROR_GPU_IS_LOST",
			wantShutdown: 1,
		},
		{
			name:         "memory info fails",
			lib:          newFakeLib(nvml.SUCCESS, h100a, memFail),
			wantIs:       []error{nvml.ERROR_UNKNOWN},
			wantMsg:      "gpu: device 1: memory info: ERROR_UNKNOWN",
			wantShutdown: 1,
		},
		{
			name:         "memory info not supported",
			lib:          newFakeLib(nvml.SUCCESS, h100a, memUnsupported),
			want:         []Device{wantDevice(0, h100a), memUnsupportedWant},
			wantShutdown: 1,
		},
		{
			name:         "shutdown fails",
			lib:          shutdownFails,
			wantIs:       []error{nvml.ERROR_UNKNOWN},
			wantMsg:      "gpu: nvml shutdown: ERROR_UNKNOWN",
			wantShutdown: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Discover(tc.lib)
			assert.Len(t, tc.lib.InitCalls(), 1, "Init calls")
			assert.Len(t, tc.lib.ShutdownCalls(), tc.wantShutdown, "Shutdown calls")
			if tc.want != nil {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			require.Error(t, err)
			assert.Nil(t, got, "devices returned with an error")
			assert.Contains(t, err.Error(), tc.wantMsg)
			assert.Equal(t, tc.wantNoGPU, errors.Is(err, ErrNoGPU), "errors.Is(%v, ErrNoGPU)", err)
			for _, target := range tc.wantIs {
				assert.ErrorIs(t, err, target)
			}
		})
	}
}

func TestDiscoverLibraryNotFoundIsSentinel(t *testing.T) {
	_, err := Discover(newFakeLib(nvml.ERROR_LIBRARY_NOT_FOUND))
	assert.Same(t, ErrNoGPU, err)
}

func TestDiscoverVisibleDevices(t *testing.T) {
	a, b := wantDevice(0, h100a), wantDevice(1, h100b)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    []Device
		wantMsg string // non-empty: want an ErrNoGPU error containing it
	}{
		{name: "unset", want: []Device{a, b}},
		{name: "all", env: map[string]string{"CUDA_VISIBLE_DEVICES": "0,1"}, want: []Device{a, b}},
		{name: "reversed", env: map[string]string{"CUDA_VISIBLE_DEVICES": "1,0"}, want: []Device{b, a}},
		{name: "by UUID prefix", env: map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-2c4b"}, want: []Device{b}},
		{
			name:    "empty hides all",
			env:     map[string]string{"CUDA_VISIBLE_DEVICES": ""},
			wantMsg: `gpu: no GPU: CUDA_VISIBLE_DEVICES="" hides all 2 devices`,
		},
		{
			name:    "minus one hides all",
			env:     map[string]string{"CUDA_VISIBLE_DEVICES": "-1"},
			wantMsg: `CUDA_VISIBLE_DEVICES="-1" hides all 2 devices`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
			got, err := discover(newFakeLib(nvml.SUCCESS, h100a, h100b), lookup)
			if tc.wantMsg != "" {
				require.ErrorIs(t, err, ErrNoGPU)
				assert.Contains(t, err.Error(), tc.wantMsg)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestDiscoverSystem calls the real NVML library. It passes with devices on
// a GPU node and with ErrNoGPU on a machine without the NVIDIA driver; any
// other error, or a panic, fails it.
func TestDiscoverSystem(t *testing.T) {
	devices, err := DiscoverSystem()
	if errors.Is(err, ErrNoGPU) {
		assert.Nil(t, devices)
		t.Logf("no GPU: %v", err)
		return
	}
	require.NoError(t, err)
	require.NotEmpty(t, devices)
	for _, d := range devices {
		t.Logf("%+v", d)
		assert.NotEmpty(t, d.Name, "device %d name", d.Index)
		assert.NotEmpty(t, d.UUID, "device %d UUID", d.Index)
		assert.NotEmpty(t, d.PCIBusID, "device %d PCI bus ID", d.Index)
		assert.LessOrEqual(t, d.MemoryFree, d.MemoryTotal, "device %d memory", d.Index)
	}
}
