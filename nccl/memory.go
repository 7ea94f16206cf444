package nccl

import (
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// DeviceMemory is the device memory the backend stages host buffers
// through, the page-locked host memory the asynchronous copies need, and
// the streams its NCCL calls are enqueued on. Package gpu/cuda's Memory
// provides it on a GPU; HostMemory provides it where "device" pointers
// are host pointers (the fake NCCL of the tests without CUDA). Streams are
// cudaStream_t addresses; 0 is the legacy default stream.
type DeviceMemory interface {
	// Alloc returns the address of a new device buffer of bytes bytes.
	Alloc(bytes int) (uintptr, error)
	// Free releases a buffer returned by Alloc.
	Free(ptr uintptr) error
	// AllocHost returns bytes bytes of page-locked host memory.
	AllocHost(bytes int) ([]byte, error)
	// FreeHost releases memory returned by AllocHost.
	FreeHost(b []byte) error
	// NewStream creates a stream that does not synchronize with the
	// legacy default stream (CU_STREAM_NON_BLOCKING).
	NewStream() (uintptr, error)
	// DestroyStream destroys a stream from NewStream.
	DestroyStream(s uintptr) error
	// CopyHtoDAsync enqueues on s the copy of src (from AllocHost) into
	// device memory at dst.
	CopyHtoDAsync(dst uintptr, src []byte, s uintptr) error
	// CopyDtoHAsync enqueues on s the copy of len(dst) bytes of device
	// memory at src into dst (from AllocHost).
	CopyDtoHAsync(dst []byte, src uintptr, s uintptr) error
	// Wait waits until the work enqueued on s has completed, or fails
	// after timeout when it is positive.
	Wait(s uintptr, timeout time.Duration) error
	// DeviceID names this rank's device so that two ranks get the same
	// string exactly when they use the same device, or "" when ranks
	// cannot share one (HostMemory).
	DeviceID() (string, error)
}

// HostMemory is a DeviceMemory whose buffers are Go-allocated host memory
// and whose streams are 0: valid only with an NCCL that takes host
// pointers and completes each call before returning, such as the fake
// NCCL over MPI of the tests (testdata/fakenccl.c) in a process without
// CUDA. A real NCCL needs device memory.
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

// AllocHost returns bytes bytes of Go memory.
func (h *HostMemory) AllocHost(bytes int) ([]byte, error) { return make([]byte, bytes), nil }

// FreeHost does nothing: the garbage collector frees b.
func (h *HostMemory) FreeHost(b []byte) error { return nil }

// NewStream returns 0: the calls complete when they return.
func (h *HostMemory) NewStream() (uintptr, error) { return 0, nil }

// DestroyStream does nothing.
func (h *HostMemory) DestroyStream(s uintptr) error { return nil }

// CopyHtoDAsync copies src to dst before returning.
func (h *HostMemory) CopyHtoDAsync(dst uintptr, src []byte, s uintptr) error {
	d, err := h.region(dst, len(src))
	if err == nil {
		copy(d, src)
	}
	return err
}

// CopyDtoHAsync copies len(dst) bytes at src to dst before returning.
func (h *HostMemory) CopyDtoHAsync(dst []byte, src uintptr, s uintptr) error {
	r, err := h.region(src, len(dst))
	if err == nil {
		copy(dst, r)
	}
	return err
}

// Wait does nothing: host memory calls complete when they return.
func (h *HostMemory) Wait(s uintptr, timeout time.Duration) error { return nil }

// DeviceID returns "": host memory is no device two ranks could share.
func (h *HostMemory) DeviceID() (string, error) { return "", nil }
