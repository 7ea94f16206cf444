package cuda

import "gnnmpi/gpu/internal/cudadl"

// Memory is a context's device memory and default stream behind the
// small interfaces of the packages that take device memory without
// importing this one: nccl.DeviceMemory (staging buffers, copies, the
// stream and Sync) and gpu/blas.Allocator (cuSPARSE's workspaces). It
// satisfies them structurally; its zero value is not usable.
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

// CopyHtoD copies src into device memory at dst (synchronous).
func (m Memory) CopyHtoD(dst uintptr, src []byte) error {
	return CopyHtoD(m.Ctx, DevicePtr(dst), src)
}

// CopyDtoH copies len(dst) bytes of device memory at src into dst
// (synchronous).
func (m Memory) CopyDtoH(dst []byte, src uintptr) error {
	return CopyDtoH(m.Ctx, dst, DevicePtr(src))
}

// Stream returns 0: the work of the libraries given m is enqueued on the
// default stream.
func (m Memory) Stream() uintptr { return 0 }

// Sync waits until the work enqueued on the default stream has completed.
func (m Memory) Sync() error { return m.Ctx.Synchronize() }

// Synchronize waits until the work enqueued on the context's default
// stream has completed (cuStreamSynchronize of the null stream).
func (c *Context) Synchronize() error {
	return c.do(func() error { return c.d.StreamSynchronize(cudadl.Stream{}) })
}
