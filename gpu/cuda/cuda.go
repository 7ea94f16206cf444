package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"gnnmpi/gpu/internal/cudadl"
	"gnnmpi/internal/dl"
)

// ErrNoCUDA is wrapped by Open when the CUDA driver library (libcuda) or
// NVRTC cannot be loaded: a machine without an NVIDIA driver, a normal
// outcome.
var ErrNoCUDA = errors.New("cuda: no CUDA driver")

// DevicePtr is a device address (CUdeviceptr). Pointer arithmetic is plain
// addition of byte offsets: p + DevicePtr(off).
type DevicePtr uint64

// Elem is an element type that can be copied to and from the device and
// passed to kernels through device memory.
type Elem interface {
	~float32 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~byte
}

var (
	driverOnce sync.Once
	driver     *cudadl.Driver
	driverErr  error
)

// loadDriver loads libcuda and calls cuInit once per process.
func loadDriver() (*cudadl.Driver, error) {
	driverOnce.Do(func() {
		d, err := cudadl.OpenDriver()
		if err != nil {
			if errors.Is(err, dl.ErrNotFound) {
				err = fmt.Errorf("%w: %w", ErrNoCUDA, err)
			}
			driverErr = err
			return
		}
		if err := d.Init(0); err != nil {
			driverErr = fmt.Errorf("%w: %w", ErrNoCUDA, err)
			return
		}
		driver = d
	})
	return driver, driverErr
}

// Context is a device's primary context. Its methods may be called from
// any goroutine: each call locks its goroutine to the OS thread and makes
// the context current there for the duration of the call.
type Context struct {
	d            *cudadl.Driver
	dev          int // the CUdevice
	ordinal      int
	ctx          cudadl.Context
	name         string
	major, minor int

	mu      sync.Mutex
	modules map[string]*Module // by source
}

// DeviceCount returns the number of CUDA devices the driver sees (after
// CUDA_VISIBLE_DEVICES). When libcuda cannot be loaded the error names the
// libraries tried and wraps ErrNoCUDA.
func DeviceCount() (int, error) {
	d, err := loadDriver()
	if err != nil {
		return 0, err
	}
	return d.DeviceCount()
}

// Open retains the primary context of CUDA device ordinal (as the CUDA
// runtime counts them: after CUDA_VISIBLE_DEVICES). When libcuda cannot
// be loaded the error names the libraries tried and wraps ErrNoCUDA; a
// driver error names the function and the CUDA error.
func Open(device int) (*Context, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	n, err := d.DeviceCount()
	if err != nil {
		return nil, err
	}
	if device < 0 || device >= n {
		return nil, fmt.Errorf("cuda: device %d out of range: %s sees %d device(s)", device, d.Name(), n)
	}
	c := &Context{d: d, ordinal: device, modules: map[string]*Module{}}
	if c.dev, err = d.Device(device); err != nil {
		return nil, err
	}
	if c.name, err = d.DeviceName(c.dev); err != nil {
		return nil, err
	}
	if c.major, err = d.DeviceAttribute(cudadl.AttrComputeCapabilityMajor, c.dev); err != nil {
		return nil, err
	}
	if c.minor, err = d.DeviceAttribute(cudadl.AttrComputeCapabilityMinor, c.dev); err != nil {
		return nil, err
	}
	if c.ctx, err = d.PrimaryCtxRetain(c.dev); err != nil {
		return nil, err
	}
	return c, nil
}

// Name returns the device's name.
func (c *Context) Name() string { return c.name }

// PCIBusID returns the device's PCI address (domain:bus:device.function),
// which names one GPU of a host whatever CUDA_VISIBLE_DEVICES says.
func (c *Context) PCIBusID() (string, error) { return c.d.DevicePCIBusID(c.dev) }

// Device returns the device ordinal Open was given.
func (c *Context) Device() int { return c.ordinal }

// Capability returns the device's compute capability, e.g. 8, 0.
func (c *Context) Capability() (major, minor int) { return c.major, c.minor }

// Close unloads the context's modules and releases the primary context.
// Memory, streams and events not freed before are leaked.
func (c *Context) Close() error {
	var errs []error
	c.mu.Lock()
	for k, m := range c.modules {
		errs = append(errs, c.do(func() error { return c.d.ModuleUnload(m.m) }))
		delete(c.modules, k)
	}
	c.mu.Unlock()
	errs = append(errs, c.d.PrimaryCtxRelease(c.dev))
	return errors.Join(errs...)
}

// Do runs f on a locked OS thread with the context current, for the
// libraries that work in the calling thread's current context (cuBLAS
// and cuSPARSE, gnnmpi/gpu/blas): their handles are created and used
// inside f. The Context's own methods may be called inside f.
func (c *Context) Do(f func() error) error { return c.do(f) }

// do runs f on a locked OS thread with the context current, and then
// makes the thread's previous context current again, so that no context
// outlives the call on a thread the Go scheduler reuses: a library that
// takes the calling thread's context (NCCL's ncclCommInitRank, cuBLAS)
// gets this one only inside Do.
func (c *Context) do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev, err := c.d.CtxGetCurrent()
	if err != nil {
		return err
	}
	if err := c.d.CtxSetCurrent(c.ctx); err != nil {
		return err
	}
	err = f()
	return errors.Join(err, c.d.CtxSetCurrent(prev))
}

// Alloc allocates bytes of device memory (not zeroed).
func (c *Context) Alloc(bytes int64) (DevicePtr, error) {
	if bytes <= 0 {
		panic("cuda: Alloc of a non-positive size")
	}
	var p uint64
	err := c.do(func() (err error) { p, err = c.d.MemAlloc(uint64(bytes)); return err })
	return DevicePtr(p), err
}

// MemInfo returns the bytes of the device's memory that are free and its
// total (cuMemGetInfo).
func (c *Context) MemInfo() (free, total int64, err error) {
	err = c.do(func() error {
		f, t, err := c.d.MemGetInfo()
		free, total = int64(f), int64(t)
		return err
	})
	return free, total, err
}

// Free frees device memory from Alloc.
func (c *Context) Free(p DevicePtr) error {
	return c.do(func() error { return c.d.MemFree(uint64(p)) })
}

func sliceBytes[T Elem](s []T) (unsafe.Pointer, uint64) {
	if len(s) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(unsafe.SliceData(s)), uint64(len(s)) * uint64(unsafe.Sizeof(s[0]))
}

// CopyHtoD copies src to the device memory at dst (synchronous).
func CopyHtoD[T Elem](c *Context, dst DevicePtr, src []T) error {
	p, n := sliceBytes(src)
	if n == 0 {
		return nil
	}
	return c.do(func() error { return c.d.MemcpyHtoD(uint64(dst), p, n) })
}

// CopyDtoH copies len(dst) elements from the device memory at src into dst
// (synchronous).
func CopyDtoH[T Elem](c *Context, dst []T, src DevicePtr) error {
	p, n := sliceBytes(dst)
	if n == 0 {
		return nil
	}
	return c.do(func() error { return c.d.MemcpyDtoH(p, uint64(src), n) })
}

// Mapped is page-locked host memory mapped into the device's address
// space (cuMemHostAlloc with DEVICEMAP|PORTABLE): Host is a Go view of it,
// Dev the address kernels read it by, zero-copy over PCIe/NVLink. Host
// aliases C memory: it must not be used after Free.
type Mapped[T Elem] struct {
	Host []T
	Dev  DevicePtr
	c    *Context
	p    unsafe.Pointer
}

// HostMapped allocates n elements of mapped page-locked host memory.
func HostMapped[T Elem](c *Context, n int) (*Mapped[T], error) {
	if n <= 0 {
		panic("cuda: HostMapped of a non-positive length")
	}
	var zero T
	m := &Mapped[T]{c: c}
	err := c.do(func() (err error) {
		m.p, err = c.d.MemHostAlloc(uint64(n)*uint64(unsafe.Sizeof(zero)), cudadl.HostAllocDeviceMap|cudadl.HostAllocPortable)
		if err != nil {
			return err
		}
		d, err := c.d.MemHostGetDevicePointer(m.p)
		if err != nil {
			c.d.MemFreeHost(m.p)
			return err
		}
		m.Dev = DevicePtr(d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.Host = unsafe.Slice((*T)(m.p), n)
	return m, nil
}

// Free frees the memory; m.Host must not be used afterwards.
func (m *Mapped[T]) Free() error {
	m.Host = nil
	return m.c.do(func() error { return m.c.d.MemFreeHost(m.p) })
}

// Stream is a CUDA stream. A nil *Stream is the default stream.
type Stream struct {
	c *Context
	s cudadl.Stream
}

// NewStream creates a stream.
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{c: c}
	err := c.do(func() (err error) { s.s, err = c.d.StreamCreate(0); return err })
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Stream) handle() cudadl.Stream {
	if s == nil {
		return cudadl.Stream{}
	}
	return s.s
}

// Synchronize waits for the stream's work. It is a no-op on a nil Stream
// (the default stream's work is waited for by synchronous copies).
func (s *Stream) Synchronize() error {
	if s == nil {
		return nil
	}
	return s.c.do(func() error { return s.c.d.StreamSynchronize(s.s) })
}

// Destroy destroys the stream.
func (s *Stream) Destroy() error {
	return s.c.do(func() error { return s.c.d.StreamDestroy(s.s) })
}

// CopyHtoDAsync enqueues a copy of src (which must be page-locked host
// memory that stays valid until the stream reaches the copy: Mapped.Host)
// to dst on s.
func CopyHtoDAsync[T Elem](s *Stream, dst DevicePtr, src *Mapped[T]) error {
	p, n := sliceBytes(src.Host)
	if n == 0 {
		return nil
	}
	c := src.c
	return c.do(func() error { return c.d.MemcpyHtoDAsync(uint64(dst), p, n, s.handle()) })
}

// Event is a CUDA event, for timing work on a stream.
type Event struct {
	c *Context
	e cudadl.Event
}

// NewEvent creates an event.
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{c: c}
	err := c.do(func() (err error) { e.e, err = c.d.EventCreate(0); return err })
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Record records the event on s (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	return e.c.do(func() error { return e.c.d.EventRecord(e.e, s.handle()) })
}

// Synchronize waits until the event has happened.
func (e *Event) Synchronize() error {
	return e.c.do(func() error { return e.c.d.EventSynchronize(e.e) })
}

// Destroy destroys the event.
func (e *Event) Destroy() error {
	return e.c.do(func() error { return e.c.d.EventDestroy(e.e) })
}

// Elapsed returns the milliseconds between two recorded events; end must
// have happened (Synchronize).
func Elapsed(start, end *Event) (float32, error) {
	var ms float32
	err := start.c.do(func() (err error) { ms, err = start.c.d.EventElapsedTime(start.e, end.e); return err })
	return ms, err
}

// Bytes returns the size in bytes of n elements of T (a device buffer's
// length for n of them).
func Bytes[T Elem](n int) int64 {
	var z T
	return int64(n) * int64(unsafe.Sizeof(z))
}
