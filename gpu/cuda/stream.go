package cuda

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"gnnmpi/gpu/internal/cudadl"
)

// ErrStreamTimeout is wrapped by Stream.Wait's error when the stream's
// work has not completed within the timeout: a collective whose peers
// never posted theirs, or a kernel that does not end.
var ErrStreamTimeout = errors.New("cuda: stream work not completed")

// NewNonBlockingStream creates a stream with CU_STREAM_NON_BLOCKING: its
// work neither waits for nor is waited for by the legacy default stream
// (nil *Stream), so synchronous copies and kernels on the default stream
// do not queue behind it. NCCL's communicators each get one.
func (c *Context) NewNonBlockingStream() (*Stream, error) {
	s := &Stream{c: c}
	err := c.do(func() (err error) { s.s, err = c.d.StreamCreate(cudadl.StreamNonBlocking); return err })
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Handle returns the stream as a cudaStream_t address, for libraries that
// take one (NCCL); the default stream is 0.
func (s *Stream) Handle() uintptr { return s.handle().Uintptr() }

// Wait waits for the stream's work like Synchronize, but gives up after
// timeout (when positive) with an error wrapping ErrStreamTimeout; the
// work stays enqueued. It polls cuStreamQuery, sleeping up to a
// millisecond between polls, so that no thread is left blocked in the
// driver when it gives up.
func (s *Stream) Wait(timeout time.Duration) error {
	if timeout <= 0 {
		if s == nil {
			return nil
		}
		return s.Synchronize()
	}
	c := s.ctx()
	start := time.Now()
	pause := time.Microsecond
	for {
		var done bool
		err := c.do(func() (err error) { done, err = c.d.StreamQuery(s.handle()); return err })
		if done || err != nil {
			return err
		}
		if waited := time.Since(start); waited > timeout {
			return fmt.Errorf("%w after %s", ErrStreamTimeout, waited.Round(time.Millisecond))
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// ctx returns the stream's context; a nil Stream (the default stream)
// has none and panics.
func (s *Stream) ctx() *Context {
	if s == nil {
		panic("cuda: Wait on the default stream with a timeout")
	}
	return s.c
}

// HostAlloc returns n bytes of page-locked host memory (cuMemHostAlloc,
// portable), which the asynchronous copies need: the copy reads or writes
// it when the stream reaches it. It aliases C memory and must be released
// with FreeHost.
func (c *Context) HostAlloc(n int) ([]byte, error) {
	if n <= 0 {
		panic("cuda: HostAlloc of a non-positive size")
	}
	var p unsafe.Pointer
	err := c.do(func() (err error) { p, err = c.d.MemHostAlloc(uint64(n), cudadl.HostAllocPortable); return err })
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// FreeHost frees memory from HostAlloc; b must not be used afterwards.
func (c *Context) FreeHost(b []byte) error {
	return c.do(func() error { return c.d.MemFreeHost(unsafe.Pointer(unsafe.SliceData(b))) })
}

// CopyHtoDAsyncBytes enqueues on s the copy of src, which must be
// page-locked (HostAlloc) and unchanged until s has reached the copy, to
// the device memory at dst.
func CopyHtoDAsyncBytes(s *Stream, dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	c := s.ctx()
	return c.do(func() error {
		return c.d.MemcpyHtoDAsync(uint64(dst), unsafe.Pointer(unsafe.SliceData(src)), uint64(len(src)), s.handle())
	})
}

// CopyDtoHAsyncBytes enqueues on s the copy of len(dst) bytes of device
// memory at src into dst, which must be page-locked (HostAlloc) and not
// read before s has been waited for.
func CopyDtoHAsyncBytes(s *Stream, dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	c := s.ctx()
	return c.do(func() error {
		return c.d.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(dst)), uint64(src), uint64(len(dst)), s.handle())
	})
}
