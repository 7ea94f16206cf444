package gpu

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoGPU is the "no GPU" answer. Every error from this package that means
// "this process has no usable NVIDIA GPU, run on the CPU" satisfies
// errors.Is(err, ErrNoGPU). Discover returns ErrNoGPU itself when
// libnvidia-ml.so.1 cannot be loaded; the other cases (driver not loaded, no
// permission, zero devices, everything hidden by CUDA_VISIBLE_DEVICES, Bind
// with no devices) return errors that wrap it and say why.
var ErrNoGPU = errors.New("gpu: no NVIDIA driver (libnvidia-ml.so.1 not found)")

// noGPUError is an error that wraps ErrNoGPU and, when NVML gave one, the
// nvml.Return behind it, so that both errors.Is(err, ErrNoGPU) and
// errors.Is(err, nvml.ERROR_DRIVER_NOT_LOADED) hold.
type noGPUError struct {
	reason string
	ret    error // nvml.Return or nil
}

func (e *noGPUError) Error() string { return "gpu: no GPU: " + e.reason }

func (e *noGPUError) Unwrap() []error {
	if e.ret == nil {
		return []error{ErrNoGPU}
	}
	return []error{ErrNoGPU, e.ret}
}

// Device describes one NVIDIA GPU as NVML reports it.
type Device struct {
	// Index is the NVML device index. NVML numbers devices by PCI bus ID and
	// ignores CUDA_VISIBLE_DEVICES, so Index is the same in every process on
	// a node. The CUDA device ordinal of a visible device is its position in
	// the slice returned by DiscoverSystem, not Index.
	Index int

	// Name is the product name, e.g. "NVIDIA H100 80GB HBM3".
	Name string

	// UUID is the GPU UUID in nvidia-smi form, "GPU-xxxxxxxx-xxxx-…".
	UUID string

	// MemoryTotal and MemoryFree are device memory in bytes at discovery
	// time. Both are zero when the device does not report memory
	// (NVML answers ERROR_NOT_SUPPORTED on some unified-memory parts).
	MemoryTotal, MemoryFree uint64

	// PCIBusID is the PCI address, "domain:bus:device.function", e.g.
	// "00000000:3B:00.0".
	PCIBusID string
}

// Discover lists the GPUs that lib can see, in NVML index order.
//
// Discover calls lib.Init, reads the name, UUID, memory information and PCI
// bus ID of every device, and calls lib.Shutdown before it returns. It does
// not read CUDA_VISIBLE_DEVICES; DiscoverSystem does. The caller owns the
// returned slice.
//
// The "no GPU" answers all satisfy errors.Is(err, ErrNoGPU):
//   - lib.Init returns nvml.ERROR_LIBRARY_NOT_FOUND (no libnvidia-ml.so.1):
//     Discover returns ErrNoGPU itself;
//   - nvml.ERROR_DRIVER_NOT_LOADED (library present, kernel module absent)
//     and nvml.ERROR_NO_PERMISSION (device files not accessible);
//   - NVML initializes but reports zero devices. Discover never returns an
//     empty slice with a nil error, so a caller needs only the one check.
//
// Any other NVML failure, including a failure on one device, is returned as
// an error that wraps the nvml.Return (so errors.Is(err, nvml.ERROR_GPU_IS_LOST)
// works) and carries its nvml.ErrorString text; such errors do not satisfy
// errors.Is(err, ErrNoGPU), because a broken GPU should stop a job rather
// than let it fall back to the CPU. The one per-device exception is memory
// information: ERROR_NOT_SUPPORTED leaves MemoryTotal and MemoryFree zero.
func Discover(lib nvml.Interface) (devices []Device, err error) {
	// Shutdown must only follow a successful Init: go-nvml calls straight
	// into the shared library, and when the library was never loaded that
	// would be a call through a nil symbol.
	switch ret := lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, ErrNoGPU
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return nil, &noGPUError{reason: "NVIDIA kernel driver not loaded: " + ret.Error(), ret: ret}
	case nvml.ERROR_NO_PERMISSION:
		return nil, &noGPUError{reason: "no permission to access NVIDIA devices: " + ret.Error(), ret: ret}
	default:
		return nil, fmt.Errorf("gpu: nvml init: %w", ret)
	}
	defer func() {
		if ret := lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			devices, err = nil, fmt.Errorf("gpu: nvml shutdown: %w", ret)
		}
	}()

	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("gpu: nvml device count: %w", ret)
	}
	if n == 0 {
		return nil, &noGPUError{reason: "NVML reports 0 devices"}
	}
	devices = make([]Device, n)
	for i := range devices {
		d, err := readDevice(lib, i)
		if err != nil {
			return nil, err
		}
		devices[i] = d
	}
	return devices, nil
}

// readDevice reads device i; lib must be initialized.
func readDevice(lib nvml.Interface, i int) (Device, error) {
	fail := func(what string, ret nvml.Return) (Device, error) {
		// fmt.Errorf formats ret now, while the library (and with it the
		// real nvmlErrorString) is still loaded.
		return Device{}, fmt.Errorf("gpu: device %d: %s: %w", i, what, ret)
	}
	h, ret := lib.DeviceGetHandleByIndex(i)
	if ret != nvml.SUCCESS {
		return fail("handle", ret)
	}
	d := Device{Index: i}
	if d.Name, ret = h.GetName(); ret != nvml.SUCCESS {
		return fail("name", ret)
	}
	if d.UUID, ret = h.GetUUID(); ret != nvml.SUCCESS {
		return fail("UUID", ret)
	}
	mem, ret := h.GetMemoryInfo()
	switch ret {
	case nvml.SUCCESS:
		d.MemoryTotal, d.MemoryFree = mem.Total, mem.Free
	case nvml.ERROR_NOT_SUPPORTED:
	default:
		return fail("memory info", ret)
	}
	pci, ret := h.GetPciInfo()
	if ret != nvml.SUCCESS {
		return fail("PCI info", ret)
	}
	d.PCIBusID = cString(pci.BusId[:])
	if d.PCIBusID == "" {
		d.PCIBusID = cString(pci.BusIdLegacy[:])
	}
	return d, nil
}

// cString returns b up to its first NUL byte.
func cString(b []uint8) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// visibleDevicesEnv is the CUDA runtime's device mask variable.
const visibleDevicesEnv = "CUDA_VISIBLE_DEVICES"

// DiscoverSystem lists the GPUs of this machine that the CUDA runtime will
// let this process use, in CUDA device ordinal order.
//
// DiscoverSystem is Discover on the real NVML library (nvml.New, which
// dlopens libnvidia-ml.so.1 at run time), followed by FilterVisible when
// CUDA_VISIBLE_DEVICES is set, because NVML itself ignores that variable.
// On a machine without the NVIDIA driver it returns ErrNoGPU. When
// CUDA_VISIBLE_DEVICES is set but hides every device (for instance "" or
// "-1"), it returns an error that wraps ErrNoGPU.
func DiscoverSystem() ([]Device, error) {
	return discover(nvml.New(), os.LookupEnv)
}

// discover is DiscoverSystem with the library and environment injected.
func discover(lib nvml.Interface, lookupEnv func(string) (string, bool)) ([]Device, error) {
	devices, err := Discover(lib)
	if err != nil {
		return nil, err
	}
	spec, ok := lookupEnv(visibleDevicesEnv)
	if !ok {
		return devices, nil
	}
	visible := FilterVisible(devices, spec)
	if len(visible) == 0 {
		return nil, &noGPUError{reason: fmt.Sprintf("%s=%q hides all %d devices", visibleDevicesEnv, spec, len(devices))}
	}
	return visible, nil
}
