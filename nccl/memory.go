package nccl

import (
	"fmt"
	"sync"
	"unsafe"
)

// DeviceMemory is the device memory the backend stages host buffers
// through, and the stream its NCCL calls are enqueued on. Package gpu/cuda's
// context provides it on a GPU; HostMemory provides it where "device"
// pointers are host pointers (the fake NCCL of the tests).
type DeviceMemory interface {
	// Alloc returns the address of a new device buffer of bytes bytes.
	Alloc(bytes int) (uintptr, error)
	// Free releases a buffer returned by Alloc.
	Free(ptr uintptr) error
	// CopyHtoD copies src into device memory at dst.
	CopyHtoD(dst uintptr, src []byte) error
	// CopyDtoH copies len(dst) bytes of device memory at src into dst.
	CopyDtoH(dst []byte, src uintptr) error
	// Stream returns the CUDA stream (cudaStream_t) NCCL calls are enqueued
	// on; 0 is the default stream.
	Stream() uintptr
	// Sync waits until the work enqueued on Stream has completed.
	Sync() error
}

// HostMemory is a DeviceMemory whose buffers are Go-allocated host memory
// and whose stream is 0: valid only with an NCCL that takes host pointers
// and completes each call before returning, such as the fake NCCL over MPI
// of the tests (testdata/fakenccl.c). A real NCCL needs device memory.
type HostMemory struct {
	mu   sync.Mutex
	bufs [][]byte // live allocations
}

var _ DeviceMemory = (*HostMemory)(nil)

// NewHostMemory returns an empty HostMemory.
func NewHostMemory() *HostMemory { return &HostMemory{} }

// Alloc allocates bytes bytes (at least one) of host memory.
func (h *HostMemory) Alloc(bytes int) (uintptr, error) {
	if bytes < 0 {
		return 0, fmt.Errorf("nccl: host memory: negative size %d", bytes)
	}
	b := make([]byte, max(bytes, 1))
	h.mu.Lock()
	h.bufs = append(h.bufs, b)
	h.mu.Unlock()
	return uintptr(unsafe.Pointer(unsafe.SliceData(b))), nil
}

// Free releases the buffer at ptr.
func (h *HostMemory) Free(ptr uintptr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range h.bufs {
		if uintptr(unsafe.Pointer(unsafe.SliceData(b))) == ptr {
			h.bufs = append(h.bufs[:i], h.bufs[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("nccl: host memory: free of %#x, which Alloc did not return", ptr)
}

// region returns the n bytes at ptr, which must lie inside one allocation.
func (h *HostMemory) region(ptr uintptr, n int) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, b := range h.bufs {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if ptr >= base && ptr-base+uintptr(n) <= uintptr(len(b)) {
			off := int(ptr - base)
			return b[off : off+n], nil
		}
	}
	return nil, fmt.Errorf("nccl: host memory: %d bytes at %#x are outside every allocation", n, ptr)
}

// CopyHtoD copies src to dst.
func (h *HostMemory) CopyHtoD(dst uintptr, src []byte) error {
	d, err := h.region(dst, len(src))
	if err == nil {
		copy(d, src)
	}
	return err
}

// CopyDtoH copies len(dst) bytes at src to dst.
func (h *HostMemory) CopyDtoH(dst []byte, src uintptr) error {
	s, err := h.region(src, len(dst))
	if err == nil {
		copy(dst, s)
	}
	return err
}

// Stream returns 0.
func (h *HostMemory) Stream() uintptr { return 0 }

// Sync does nothing: host memory calls complete when they return.
func (h *HostMemory) Sync() error { return nil }
