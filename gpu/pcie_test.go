package gpu

import (
	"errors"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// LinkOf reads the four PCIe link queries of the device; GBps is the
// generation's per-lane rate times the lanes; no NVML is ErrNoGPU.
func TestLinkOf(t *testing.T) {
	lib := newFakeLib(nvml.SUCCESS, fakeGPU{name: "NVIDIA H100", uuid: "GPU-1", busID: "00000000:3B:00.0"})
	d, _ := lib.DeviceGetHandleByIndex(0)
	dm := d.(*mock.Device)
	dm.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	dm.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 8, nvml.SUCCESS }
	dm.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 5, nvml.SUCCESS }
	dm.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	l, err := LinkOf(lib, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Link{Gen: 5, Width: 8, MaxGen: 5, MaxWidth: 16}); l != want {
		t.Fatalf("link got: %+v want: %+v", l, want)
	}
	if got := l.GBps(); got < 63 || got > 63.1 {
		t.Fatalf("gen 5 x16: %v GB/s, want 63.0", got)
	}
	if (Link{}).GBps() != 0 {
		t.Fatal("an unknown link has a bandwidth")
	}
	dm.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	if _, err := LinkOf(lib, 0); !errors.Is(err, nvml.ERROR_NOT_SUPPORTED) {
		t.Fatalf("unsupported query: %v", err)
	}
	if _, err := LinkOf(newFakeLib(nvml.ERROR_LIBRARY_NOT_FOUND), 0); !errors.Is(err, ErrNoGPU) {
		t.Fatalf("no NVML: %v, want ErrNoGPU", err)
	}
}
