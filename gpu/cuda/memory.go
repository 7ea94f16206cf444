package cuda

import (
	"fmt"
	"os"
	"time"

	"gnnmpi/gpu/internal/cudadl"
)

// Memory is a context's device memory, page-locked host memory and
// streams behind the small interfaces of the packages that take device
// memory without importing this one: nccl.DeviceMemory (staging buffers,
// asynchronous copies on a communicator's own stream, the waits) and
// gpu/blas.Allocator (cuSPARSE's workspaces). It satisfies them
// structurally; its zero value is not usable. Streams are passed as
// cudaStream_t addresses (Stream.Handle), 0 being the default stream.
type Memory struct {
	Ctx *Context
}

// Alloc returns the address of a new device buffer of bytes bytes (at
// least one byte is allocated, so that an empty buffer has an address).
func (m Memory) Alloc(bytes int) (uintptr, error) {
	p, err := m.Ctx.Alloc(int64(max(bytes, 1)))
	return uintptr(p), err
}

// Free frees a buffer from Alloc (cuMemFree: it waits for the work that
// may use it).
func (m Memory) Free(p uintptr) error { return m.Ctx.Free(DevicePtr(p)) }

// AllocHost returns bytes bytes (at least one) of page-locked host memory
// (Context.HostAlloc), which FreeHost releases.
func (m Memory) AllocHost(bytes int) ([]byte, error) {
	b, err := m.Ctx.HostAlloc(max(bytes, 1))
	if err != nil {
		return nil, err
	}
	return b[:bytes], nil
}

// FreeHost frees memory from AllocHost.
func (m Memory) FreeHost(b []byte) error { return m.Ctx.FreeHost(b[:1]) }

// NewStream creates a non-blocking stream (Context.NewNonBlockingStream)
// and returns its handle.
func (m Memory) NewStream() (uintptr, error) {
	s, err := m.Ctx.NewNonBlockingStream()
	if err != nil {
		return 0, err
	}
	return s.Handle(), nil
}

// stream returns the Stream of handle h; 0 is the default stream.
func (m Memory) stream(h uintptr) *Stream {
	if h == 0 {
		return nil
	}
	return &Stream{c: m.Ctx, s: cudadl.StreamOf(h)}
}

// DestroyStream destroys a stream from NewStream.
func (m Memory) DestroyStream(h uintptr) error { return m.stream(h).Destroy() }

// CopyHtoDAsync enqueues on stream s the copy of src, page-locked memory
// from AllocHost, to the device memory at dst; on the default stream (0)
// it copies synchronously.
func (m Memory) CopyHtoDAsync(dst uintptr, src []byte, s uintptr) error {
	if s == 0 {
		return CopyHtoD(m.Ctx, DevicePtr(dst), src)
	}
	return CopyHtoDAsyncBytes(m.stream(s), DevicePtr(dst), src)
}

// CopyDtoHAsync enqueues on stream s the copy of len(dst) bytes of device
// memory at src into dst, page-locked memory from AllocHost; on the
// default stream (0) it copies synchronously.
func (m Memory) CopyDtoHAsync(dst []byte, src uintptr, s uintptr) error {
	if s == 0 {
		return CopyDtoH(m.Ctx, dst, DevicePtr(src))
	}
	return CopyDtoHAsyncBytes(m.stream(s), dst, DevicePtr(src))
}

// Wait waits until the work enqueued on stream s has completed, and
// fails with an error wrapping ErrStreamTimeout after timeout (when
// positive; Stream.Wait). On the default stream (0) it is
// Context.Synchronize, without a timeout.
func (m Memory) Wait(s uintptr, timeout time.Duration) error {
	if s == 0 {
		return m.Ctx.Synchronize()
	}
	return m.stream(s).Wait(timeout)
}

// DeviceID names the device among all the ranks' devices: the host name
// and the device's PCI address, equal for two ranks exactly when they use
// the same GPU.
func (m Memory) DeviceID() (string, error) {
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("cuda: host name: %w", err)
	}
	bus, err := m.Ctx.PCIBusID()
	if err != nil {
		return "", err
	}
	return host + "/" + bus, nil
}

// Sync waits until the work enqueued on the default stream has completed.
func (m Memory) Sync() error { return m.Ctx.Synchronize() }

// Synchronize waits until the work enqueued on the context's default
// stream has completed (cuStreamSynchronize of the null stream).
func (c *Context) Synchronize() error {
	return c.do(func() error { return c.d.StreamSynchronize(cudadl.Stream{}) })
}
