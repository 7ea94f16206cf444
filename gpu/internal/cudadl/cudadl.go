// Package cudadl is the cgo leaf that calls the CUDA driver API (libcuda)
// and NVRTC (libnvrtc) through function pointers looked up at run time
// with gnnmpi/internal/dl, so that no build needs CUDA. The C types are
// declared by hand (no CUDA header is included) and every function has one
// static C trampoline that calls its dlsym'ed pointer.
//
// The API is deliberately thin: one Go method per C function, Go types in
// and out, and every non-zero return code turned into an *Error that names
// the library, the function and the CUDA (or NVRTC) error. gnnmpi/gpu/cuda
// builds the safe, pure-Go API on top of it.
//
// # Library search
//
// OpenDriver loads libcuda.so.1 as dl.Driver says: from
// $GNNMPI_CUDA_DRIVER_DIR, then $GNNMPI_CUDA_LIBDIR (the tests point it at
// fake libraries), then the loader's path. OpenNVRTC loads libnvrtc
// (libnvrtc.so.13, .12, .11.2, …) as dl.NVRTC says: from
// $GNNMPI_CUDA_LIBDIR, $CUDA_HOME/lib64, $CUDA_PATH/lib64, the Python
// wheels' nvidia/cu13/lib and nvidia/cuda_nvrtc/lib, the loader's path and
// /usr/local/cuda/lib64; NVRTC found in a directory gets the
// libnvrtc-builtins of that directory loaded first, which NVRTC needs to
// compile.
package cudadl

/*
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUevent;
typedef int nvrtcResult;
typedef void *nvrtcProgram;

static CUresult t_cuInit(void *f, unsigned int flags) { return ((CUresult (*)(unsigned int))f)(flags); }
static CUresult t_int(void *f, int *v) { return ((CUresult (*)(int *))f)(v); }
static CUresult t_cuDeviceGet(void *f, CUdevice *d, int ordinal) { return ((CUresult (*)(CUdevice *, int))f)(d, ordinal); }
static CUresult t_cuDeviceGetName(void *f, char *name, int len, CUdevice d) { return ((CUresult (*)(char *, int, CUdevice))f)(name, len, d); }
static CUresult t_cuDeviceGetAttribute(void *f, int *v, int attr, CUdevice d) { return ((CUresult (*)(int *, int, CUdevice))f)(v, attr, d); }
static CUresult t_cuDevicePrimaryCtxRetain(void *f, CUcontext *c, CUdevice d) { return ((CUresult (*)(CUcontext *, CUdevice))f)(c, d); }
static CUresult t_device(void *f, CUdevice d) { return ((CUresult (*)(CUdevice))f)(d); }
static CUresult t_ptr(void *f, void *p) { return ((CUresult (*)(void *))f)(p); }
static CUresult t_cuCtxCreate(void *f, CUcontext *c, unsigned int flags, CUdevice d) { return ((CUresult (*)(CUcontext *, unsigned int, CUdevice))f)(c, flags, d); }
static CUresult t_cuMemAlloc(void *f, CUdeviceptr *p, size_t n) { return ((CUresult (*)(CUdeviceptr *, size_t))f)(p, n); }
static CUresult t_cuMemFree(void *f, CUdeviceptr p) { return ((CUresult (*)(CUdeviceptr))f)(p); }
static CUresult t_cuMemGetInfo(void *f, size_t *free_, size_t *total) { return ((CUresult (*)(size_t *, size_t *))f)(free_, total); }
static CUresult t_cuMemcpyHtoD(void *f, CUdeviceptr dst, const void *src, size_t n) { return ((CUresult (*)(CUdeviceptr, const void *, size_t))f)(dst, src, n); }
static CUresult t_cuMemcpyDtoH(void *f, void *dst, CUdeviceptr src, size_t n) { return ((CUresult (*)(void *, CUdeviceptr, size_t))f)(dst, src, n); }
static CUresult t_cuMemcpyHtoDAsync(void *f, CUdeviceptr dst, const void *src, size_t n, CUstream s) { return ((CUresult (*)(CUdeviceptr, const void *, size_t, CUstream))f)(dst, src, n, s); }
static CUresult t_cuMemHostAlloc(void *f, void **p, size_t n, unsigned int flags) { return ((CUresult (*)(void **, size_t, unsigned int))f)(p, n, flags); }
static CUresult t_cuMemHostRegister(void *f, void *p, size_t n, unsigned int flags) { return ((CUresult (*)(void *, size_t, unsigned int))f)(p, n, flags); }
static CUresult t_cuMemHostGetDevicePointer(void *f, CUdeviceptr *d, void *p, unsigned int flags) { return ((CUresult (*)(CUdeviceptr *, void *, unsigned int))f)(d, p, flags); }
static CUresult t_create(void *f, void **h, unsigned int flags) { return ((CUresult (*)(void **, unsigned int))f)(h, flags); }
static CUresult t_cuEventRecord(void *f, CUevent e, CUstream s) { return ((CUresult (*)(CUevent, CUstream))f)(e, s); }
static CUresult t_cuEventElapsedTime(void *f, float *ms, CUevent a, CUevent b) { return ((CUresult (*)(float *, CUevent, CUevent))f)(ms, a, b); }
static CUresult t_cuModuleLoadData(void *f, CUmodule *m, const void *image) { return ((CUresult (*)(CUmodule *, const void *))f)(m, image); }
static CUresult t_cuModuleGetFunction(void *f, CUfunction *fn, CUmodule m, const char *name) { return ((CUresult (*)(CUfunction *, CUmodule, const char *))f)(fn, m, name); }
static CUresult t_cuLaunchKernel(void *f, CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params) {
	return ((CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
		unsigned int, CUstream, void **, void **))f)(fn, gx, gy, gz, bx, by, bz, shared, s, params, NULL);
}
static CUresult t_cuGetErrorText(void *f, CUresult r, const char **s) { return ((CUresult (*)(CUresult, const char **))f)(r, s); }

static const char *t_nvrtcGetErrorString(void *f, nvrtcResult r) { return ((const char *(*)(nvrtcResult))f)(r); }
static nvrtcResult t_nvrtcVersion(void *f, int *major, int *minor) { return ((nvrtcResult (*)(int *, int *))f)(major, minor); }
static nvrtcResult t_nvrtcCreateProgram(void *f, nvrtcProgram *p, const char *src, const char *name) {
	return ((nvrtcResult (*)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *))f)(p, src, name, 0, NULL, NULL);
}
static nvrtcResult t_nvrtcCompileProgram(void *f, nvrtcProgram p, int n, char **opts) {
	return ((nvrtcResult (*)(nvrtcProgram, int, const char *const *))f)(p, n, (const char *const *)opts);
}
static nvrtcResult t_nvrtcSize(void *f, nvrtcProgram p, size_t *n) { return ((nvrtcResult (*)(nvrtcProgram, size_t *))f)(p, n); }
static nvrtcResult t_nvrtcGet(void *f, nvrtcProgram p, char *buf) { return ((nvrtcResult (*)(nvrtcProgram, char *))f)(p, buf); }
static nvrtcResult t_nvrtcDestroyProgram(void *f, nvrtcProgram *p) { return ((nvrtcResult (*)(nvrtcProgram *))f)(p); }

// NVRTC ≥ 11.1: CUBIN; NVRTC ≥ 11.2: the supported architectures.
static nvrtcResult t_nvrtcGetNumSupportedArchs(void *f, int *n) { return ((nvrtcResult (*)(int *))f)(n); }
static nvrtcResult t_nvrtcGetSupportedArchs(void *f, int *archs) { return ((nvrtcResult (*)(int *))f)(archs); }

// Streams and contexts for NCCL (gnnmpi/nccl's staging): asynchronous
// device-to-host copies.
static CUstream stream_of(uintptr_t h) { return (CUstream)h; }
static CUresult t_cuMemcpyDtoHAsync(void *f, void *dst, CUdeviceptr src, size_t n, CUstream s) { return ((CUresult (*)(void *, CUdeviceptr, size_t, CUstream))f)(dst, src, n, s); }

static void **params_alloc(int n) { return (void **)calloc(n > 0 ? n : 1, sizeof(void *)); }
static void params_set(void **a, int i, void *v) { a[i] = v; }
static void params_free(void **a, int n) { for (int i = 0; i < n; i++) free(a[i]); free(a); }
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gnnmpi/internal/dl"
)

// Flags and attributes of the driver API (values from cuda.h).
const (
	HostAllocPortable  = 0x01 // CU_MEMHOSTALLOC_PORTABLE
	HostAllocDeviceMap = 0x02 // CU_MEMHOSTALLOC_DEVICEMAP
	HostRegisterMapped = 0x02 // CU_MEMHOSTREGISTER_DEVICEMAP

	AttrComputeCapabilityMajor = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
)

// Context, Module, Function, Stream and Event are the driver's opaque
// handles. Their zero values are the null handle (for Stream: the default
// stream).
type (
	Context  struct{ p C.CUcontext }
	Module   struct{ p C.CUmodule }
	Function struct{ p C.CUfunction }
	Stream   struct{ p C.CUstream }
	Event    struct{ p C.CUevent }
	Program  struct{ p C.nvrtcProgram } // an NVRTC program
)

// Driver is the loaded driver API (libcuda).
type Driver struct {
	lib                                                                         *dl.Lib
	init, driverVersion, deviceCount, deviceGet, deviceName, deviceAttr         unsafe.Pointer
	primaryRetain, primaryRelease, ctxSetCurrent, ctxCreate, ctxDestroy         unsafe.Pointer
	memAlloc, memFree, memGetInfo, htod, dtoh, htodAsync, hostAlloc, freeHost   unsafe.Pointer
	hostRegister, hostUnregister, hostDevPtr                                    unsafe.Pointer
	streamCreate, streamSync, streamDestroy                                     unsafe.Pointer
	eventCreate, eventRecord, eventSync, eventElapsed, eventDestroy             unsafe.Pointer
	moduleLoadData, moduleGetFunction, moduleUnload, launch, errName, errString unsafe.Pointer

	// Streams and contexts for NCCL (see CtxGetCurrent).
	ctxGetCurrent, streamQuery, dtohAsync, pciBusID unsafe.Pointer
}

// OpenDriver loads libcuda (see the package comment for the search) and
// looks up every function this package calls. The error wraps
// dl.ErrNotFound when no library was found, and names a missing symbol.
func OpenDriver() (*Driver, error) {
	lib, err := dl.Driver().Open()
	if err != nil {
		return nil, err
	}
	d := &Driver{lib: lib}
	for _, s := range []struct {
		dst   *unsafe.Pointer
		names []string
	}{
		{&d.init, []string{"cuInit"}},
		{&d.driverVersion, []string{"cuDriverGetVersion"}},
		{&d.deviceCount, []string{"cuDeviceGetCount"}},
		{&d.deviceGet, []string{"cuDeviceGet"}},
		{&d.deviceName, []string{"cuDeviceGetName"}},
		{&d.deviceAttr, []string{"cuDeviceGetAttribute"}},
		{&d.primaryRetain, []string{"cuDevicePrimaryCtxRetain"}},
		{&d.primaryRelease, []string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}},
		{&d.ctxSetCurrent, []string{"cuCtxSetCurrent"}},
		{&d.ctxCreate, []string{"cuCtxCreate_v2"}},
		{&d.ctxDestroy, []string{"cuCtxDestroy_v2"}},
		{&d.memAlloc, []string{"cuMemAlloc_v2"}},
		{&d.memFree, []string{"cuMemFree_v2"}},
		{&d.memGetInfo, []string{"cuMemGetInfo_v2"}},
		{&d.htod, []string{"cuMemcpyHtoD_v2"}},
		{&d.dtoh, []string{"cuMemcpyDtoH_v2"}},
		{&d.htodAsync, []string{"cuMemcpyHtoDAsync_v2"}},
		{&d.hostAlloc, []string{"cuMemHostAlloc"}},
		{&d.freeHost, []string{"cuMemFreeHost"}},
		{&d.hostRegister, []string{"cuMemHostRegister_v2"}},
		{&d.hostUnregister, []string{"cuMemHostUnregister"}},
		{&d.hostDevPtr, []string{"cuMemHostGetDevicePointer_v2"}},
		{&d.streamCreate, []string{"cuStreamCreate"}},
		{&d.streamSync, []string{"cuStreamSynchronize"}},
		{&d.streamDestroy, []string{"cuStreamDestroy_v2"}},
		{&d.eventCreate, []string{"cuEventCreate"}},
		{&d.eventRecord, []string{"cuEventRecord"}},
		{&d.eventSync, []string{"cuEventSynchronize"}},
		{&d.eventElapsed, []string{"cuEventElapsedTime"}},
		{&d.eventDestroy, []string{"cuEventDestroy_v2"}},
		{&d.moduleLoadData, []string{"cuModuleLoadData"}},
		{&d.moduleGetFunction, []string{"cuModuleGetFunction"}},
		{&d.moduleUnload, []string{"cuModuleUnload"}},
		{&d.launch, []string{"cuLaunchKernel"}},
		{&d.errName, []string{"cuGetErrorName"}},
		{&d.errString, []string{"cuGetErrorString"}},
	} {
		if *s.dst, err = sym(lib, s.names); err != nil {
			lib.Close()
			return nil, err
		}
	}
	// Streams and contexts for NCCL.
	for _, s := range []struct {
		dst   *unsafe.Pointer
		names []string
	}{
		{&d.ctxGetCurrent, []string{"cuCtxGetCurrent"}},
		{&d.streamQuery, []string{"cuStreamQuery"}},
		{&d.dtohAsync, []string{"cuMemcpyDtoHAsync_v2"}},
		{&d.pciBusID, []string{"cuDeviceGetPCIBusId"}},
	} {
		if *s.dst, err = sym(lib, s.names); err != nil {
			lib.Close()
			return nil, err
		}
	}
	return d, nil
}

// Name returns the name the library was opened by.
func (d *Driver) Name() string { return d.lib.Name }

// Close unloads the library; no handle it gave may be used afterwards.
func (d *Driver) Close() error { return d.lib.Close() }

func (d *Driver) check(fn string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	e := &Error{Lib: d.lib.Name, Func: fn, Code: int(r)}
	var s *C.char
	if C.t_cuGetErrorText(d.errName, r, &s) == 0 && s != nil {
		e.Name = C.GoString(s)
	}
	s = nil
	if C.t_cuGetErrorText(d.errString, r, &s) == 0 && s != nil {
		e.Msg = C.GoString(s)
	}
	return e
}

// Init calls cuInit(flags).
func (d *Driver) Init(flags uint32) error {
	return d.check("cuInit", C.t_cuInit(d.init, C.uint(flags)))
}

// DriverVersion calls cuDriverGetVersion (e.g. 12040 for CUDA 12.4).
func (d *Driver) DriverVersion() (int, error) {
	var v C.int
	err := d.check("cuDriverGetVersion", C.t_int(d.driverVersion, &v))
	return int(v), err
}

// DeviceCount calls cuDeviceGetCount.
func (d *Driver) DeviceCount() (int, error) {
	var v C.int
	err := d.check("cuDeviceGetCount", C.t_int(d.deviceCount, &v))
	return int(v), err
}

// Device calls cuDeviceGet: the CUdevice of the ordinal.
func (d *Driver) Device(ordinal int) (int, error) {
	var v C.CUdevice
	err := d.check("cuDeviceGet", C.t_cuDeviceGet(d.deviceGet, &v, C.int(ordinal)))
	return int(v), err
}

// DeviceName calls cuDeviceGetName.
func (d *Driver) DeviceName(dev int) (string, error) {
	var buf [256]C.char
	if err := d.check("cuDeviceGetName", C.t_cuDeviceGetName(d.deviceName, &buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	buf[len(buf)-1] = 0
	return C.GoString(&buf[0]), nil
}

// DeviceAttribute calls cuDeviceGetAttribute (see the Attr constants).
func (d *Driver) DeviceAttribute(attr, dev int) (int, error) {
	var v C.int
	err := d.check("cuDeviceGetAttribute", C.t_cuDeviceGetAttribute(d.deviceAttr, &v, C.int(attr), C.CUdevice(dev)))
	return int(v), err
}

// PrimaryCtxRetain calls cuDevicePrimaryCtxRetain.
func (d *Driver) PrimaryCtxRetain(dev int) (Context, error) {
	var c C.CUcontext
	err := d.check("cuDevicePrimaryCtxRetain", C.t_cuDevicePrimaryCtxRetain(d.primaryRetain, &c, C.CUdevice(dev)))
	return Context{(c)}, err
}

// PrimaryCtxRelease calls cuDevicePrimaryCtxRelease(_v2).
func (d *Driver) PrimaryCtxRelease(dev int) error {
	return d.check("cuDevicePrimaryCtxRelease", C.t_device(d.primaryRelease, C.CUdevice(dev)))
}

// CtxSetCurrent calls cuCtxSetCurrent: c becomes the calling OS thread's
// current context.
func (d *Driver) CtxSetCurrent(c Context) error {
	return d.check("cuCtxSetCurrent", C.t_ptr(d.ctxSetCurrent, unsafe.Pointer(c.p)))
}

// CtxCreate calls cuCtxCreate_v2.
func (d *Driver) CtxCreate(flags uint32, dev int) (Context, error) {
	var c C.CUcontext
	err := d.check("cuCtxCreate_v2", C.t_cuCtxCreate(d.ctxCreate, &c, C.uint(flags), C.CUdevice(dev)))
	return Context{(c)}, err
}

// CtxDestroy calls cuCtxDestroy_v2.
func (d *Driver) CtxDestroy(c Context) error {
	return d.check("cuCtxDestroy_v2", C.t_ptr(d.ctxDestroy, unsafe.Pointer(c.p)))
}

// MemAlloc calls cuMemAlloc_v2: bytes of device memory.
func (d *Driver) MemAlloc(bytes uint64) (uint64, error) {
	var p C.CUdeviceptr
	err := d.check("cuMemAlloc_v2", C.t_cuMemAlloc(d.memAlloc, &p, C.size_t(bytes)))
	return uint64(p), err
}

// MemGetInfo calls cuMemGetInfo_v2: the free and total bytes of the
// current context's device memory.
func (d *Driver) MemGetInfo() (free, total uint64, err error) {
	var f, t C.size_t
	err = d.check("cuMemGetInfo_v2", C.t_cuMemGetInfo(d.memGetInfo, &f, &t))
	return uint64(f), uint64(t), err
}

// MemFree calls cuMemFree_v2.
func (d *Driver) MemFree(p uint64) error {
	return d.check("cuMemFree_v2", C.t_cuMemFree(d.memFree, C.CUdeviceptr(p)))
}

// MemcpyHtoD calls cuMemcpyHtoD_v2, copying bytes from src (which must
// hold no Go pointers) to the device address dst.
func (d *Driver) MemcpyHtoD(dst uint64, src unsafe.Pointer, bytes uint64) error {
	return d.check("cuMemcpyHtoD_v2", C.t_cuMemcpyHtoD(d.htod, C.CUdeviceptr(dst), src, C.size_t(bytes)))
}

// MemcpyDtoH calls cuMemcpyDtoH_v2.
func (d *Driver) MemcpyDtoH(dst unsafe.Pointer, src uint64, bytes uint64) error {
	return d.check("cuMemcpyDtoH_v2", C.t_cuMemcpyDtoH(d.dtoh, dst, C.CUdeviceptr(src), C.size_t(bytes)))
}

// MemcpyHtoDAsync calls cuMemcpyHtoDAsync_v2. src must stay valid until
// the stream reaches the copy, so it must not be Go memory: use page-locked
// memory from MemHostAlloc.
func (d *Driver) MemcpyHtoDAsync(dst uint64, src unsafe.Pointer, bytes uint64, s Stream) error {
	return d.check("cuMemcpyHtoDAsync_v2", C.t_cuMemcpyHtoDAsync(d.htodAsync, C.CUdeviceptr(dst), src, C.size_t(bytes), s.p))
}

// MemHostAlloc calls cuMemHostAlloc: page-locked host memory (flags: the
// HostAlloc constants).
func (d *Driver) MemHostAlloc(bytes uint64, flags uint32) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := d.check("cuMemHostAlloc", C.t_cuMemHostAlloc(d.hostAlloc, &p, C.size_t(bytes), C.uint(flags)))
	return p, err
}

// MemFreeHost calls cuMemFreeHost.
func (d *Driver) MemFreeHost(p unsafe.Pointer) error {
	return d.check("cuMemFreeHost", C.t_ptr(d.freeHost, p))
}

// MemHostRegister calls cuMemHostRegister_v2. p must be C memory (the
// driver keeps it), never Go memory.
func (d *Driver) MemHostRegister(p unsafe.Pointer, bytes uint64, flags uint32) error {
	return d.check("cuMemHostRegister_v2", C.t_cuMemHostRegister(d.hostRegister, p, C.size_t(bytes), C.uint(flags)))
}

// MemHostUnregister calls cuMemHostUnregister.
func (d *Driver) MemHostUnregister(p unsafe.Pointer) error {
	return d.check("cuMemHostUnregister", C.t_ptr(d.hostUnregister, p))
}

// MemHostGetDevicePointer calls cuMemHostGetDevicePointer_v2: the device
// address of mapped page-locked host memory.
func (d *Driver) MemHostGetDevicePointer(p unsafe.Pointer) (uint64, error) {
	var v C.CUdeviceptr
	err := d.check("cuMemHostGetDevicePointer_v2", C.t_cuMemHostGetDevicePointer(d.hostDevPtr, &v, p, 0))
	return uint64(v), err
}

// StreamCreate calls cuStreamCreate.
func (d *Driver) StreamCreate(flags uint32) (Stream, error) {
	var h unsafe.Pointer
	err := d.check("cuStreamCreate", C.t_create(d.streamCreate, &h, C.uint(flags)))
	return Stream{C.CUstream(h)}, err
}

// StreamSynchronize calls cuStreamSynchronize.
func (d *Driver) StreamSynchronize(s Stream) error {
	return d.check("cuStreamSynchronize", C.t_ptr(d.streamSync, unsafe.Pointer(s.p)))
}

// StreamDestroy calls cuStreamDestroy_v2.
func (d *Driver) StreamDestroy(s Stream) error {
	return d.check("cuStreamDestroy_v2", C.t_ptr(d.streamDestroy, unsafe.Pointer(s.p)))
}

// EventCreate calls cuEventCreate.
func (d *Driver) EventCreate(flags uint32) (Event, error) {
	var h unsafe.Pointer
	err := d.check("cuEventCreate", C.t_create(d.eventCreate, &h, C.uint(flags)))
	return Event{C.CUevent(h)}, err
}

// EventRecord calls cuEventRecord.
func (d *Driver) EventRecord(e Event, s Stream) error {
	return d.check("cuEventRecord", C.t_cuEventRecord(d.eventRecord, e.p, s.p))
}

// EventSynchronize calls cuEventSynchronize.
func (d *Driver) EventSynchronize(e Event) error {
	return d.check("cuEventSynchronize", C.t_ptr(d.eventSync, unsafe.Pointer(e.p)))
}

// EventElapsedTime calls cuEventElapsedTime: milliseconds from start to end.
func (d *Driver) EventElapsedTime(start, end Event) (float32, error) {
	var ms C.float
	err := d.check("cuEventElapsedTime", C.t_cuEventElapsedTime(d.eventElapsed, &ms, start.p, end.p))
	return float32(ms), err
}

// EventDestroy calls cuEventDestroy_v2.
func (d *Driver) EventDestroy(e Event) error {
	return d.check("cuEventDestroy_v2", C.t_ptr(d.eventDestroy, unsafe.Pointer(e.p)))
}

// ModuleLoadData calls cuModuleLoadData on an image: PTX text (without
// its NUL, which is added here) or a CUBIN (an ELF object, whose own
// header gives its size; the added NUL is ignored).
func (d *Driver) ModuleLoadData(image []byte) (Module, error) {
	cs := C.CBytes(append(append([]byte(nil), image...), 0))
	defer C.free(cs)
	var m C.CUmodule
	err := d.check("cuModuleLoadData", C.t_cuModuleLoadData(d.moduleLoadData, &m, cs))
	return Module{(m)}, err
}

// ModuleGetFunction calls cuModuleGetFunction.
func (d *Driver) ModuleGetFunction(m Module, name string) (Function, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.CUfunction
	if err := d.check("cuModuleGetFunction", C.t_cuModuleGetFunction(d.moduleGetFunction, &f, m.p, cs)); err != nil {
		return Function{}, fmt.Errorf("%w (kernel %s)", err, name)
	}
	return Function{(f)}, nil
}

// ModuleUnload calls cuModuleUnload.
func (d *Driver) ModuleUnload(m Module) error {
	return d.check("cuModuleUnload", C.t_ptr(d.moduleUnload, unsafe.Pointer(m.p)))
}

// LaunchKernel calls cuLaunchKernel with kernelParams built from args:
// each argument's bytes are copied into C memory and the kernel receives
// an array of pointers to those copies (extra is NULL). The copies are
// freed when the call returns (the driver has copied the values by then).
func (d *Driver) LaunchKernel(f Function, grid, block [3]uint32, shared uint32, s Stream, args [][]byte) error {
	n := len(args)
	params := C.params_alloc(C.int(n))
	for i, a := range args {
		C.params_set(params, C.int(i), C.CBytes(a))
	}
	defer C.params_free(params, C.int(n))
	return d.check("cuLaunchKernel", C.t_cuLaunchKernel(d.launch, f.p,
		C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]), C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.uint(shared), s.p, params))
}

// NVRTC is the loaded runtime compiler (libnvrtc).
type NVRTC struct {
	lib                                          *dl.Lib
	errString, version, create, compile, destroy unsafe.Pointer
	ptxSize, ptx, logSize, log                   unsafe.Pointer

	// Optional: nil when the library lacks them (NVRTC < 11.1 has no
	// CUBIN, NVRTC < 11.2 no list of supported architectures).
	cubinSize, cubin, numArchs, archs unsafe.Pointer
}

// OpenNVRTC loads libnvrtc (see the package comment for the search). The
// error wraps dl.ErrNotFound when no library was found.
func OpenNVRTC() (*NVRTC, error) {
	lib, err := dl.NVRTC().Open()
	if err != nil {
		return nil, err
	}
	n := &NVRTC{lib: lib}
	if err := lib.Syms(map[string]*unsafe.Pointer{
		"nvrtcGetErrorString": &n.errString, "nvrtcVersion": &n.version,
		"nvrtcCreateProgram": &n.create, "nvrtcCompileProgram": &n.compile, "nvrtcDestroyProgram": &n.destroy,
		"nvrtcGetPTXSize": &n.ptxSize, "nvrtcGetPTX": &n.ptx,
		"nvrtcGetProgramLogSize": &n.logSize, "nvrtcGetProgramLog": &n.log,
	}); err != nil {
		lib.Close()
		return nil, err
	}
	n.openOptional()
	return n, nil
}

// Name returns the name the library was opened by.
func (n *NVRTC) Name() string { return n.lib.Name }

// Close unloads the library.
func (n *NVRTC) Close() error { return n.lib.Close() }

func (n *NVRTC) check(fn string, r C.nvrtcResult) error {
	if r == 0 {
		return nil
	}
	e := &Error{Lib: n.lib.Name, Func: fn, Code: int(r)}
	if s := C.t_nvrtcGetErrorString(n.errString, r); s != nil {
		e.Name = C.GoString(s)
	}
	return e
}

// Version calls nvrtcVersion.
func (n *NVRTC) Version() (major, minor int, err error) {
	var a, b C.int
	err = n.check("nvrtcVersion", C.t_nvrtcVersion(n.version, &a, &b))
	return int(a), int(b), err
}

// CreateProgram calls nvrtcCreateProgram with no headers.
func (n *NVRTC) CreateProgram(src, name string) (Program, error) {
	cs, cn := C.CString(src), C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	defer C.free(unsafe.Pointer(cn))
	var p C.nvrtcProgram
	err := n.check("nvrtcCreateProgram", C.t_nvrtcCreateProgram(n.create, &p, cs, cn))
	return Program{(p)}, err
}

// CompileProgram calls nvrtcCompileProgram with opts.
func (n *NVRTC) CompileProgram(p Program, opts []string) error {
	arr := C.params_alloc(C.int(len(opts)))
	for i, o := range opts {
		C.params_set(arr, C.int(i), unsafe.Pointer(C.CString(o)))
	}
	defer C.params_free(arr, C.int(len(opts)))
	return n.check("nvrtcCompileProgram", C.t_nvrtcCompileProgram(n.compile, p.p, C.int(len(opts)), (**C.char)(unsafe.Pointer(arr))))
}

// PTX calls nvrtcGetPTXSize and nvrtcGetPTX: the PTX text without its NUL.
func (n *NVRTC) PTX(p Program) ([]byte, error) {
	return n.get(p, "nvrtcGetPTX", n.ptxSize, n.ptx)
}

// ProgramLog calls nvrtcGetProgramLogSize and nvrtcGetProgramLog.
func (n *NVRTC) ProgramLog(p Program) (string, error) {
	b, err := n.get(p, "nvrtcGetProgramLog", n.logSize, n.log)
	return string(b), err
}

func (n *NVRTC) get(p Program, fn string, size, get unsafe.Pointer) ([]byte, error) {
	var sz C.size_t
	if err := n.check(fn+"Size", C.t_nvrtcSize(size, p.p, &sz)); err != nil {
		return nil, err
	}
	if sz == 0 {
		return nil, nil
	}
	buf := C.malloc(sz)
	defer C.free(buf)
	if err := n.check(fn, C.t_nvrtcGet(get, p.p, (*C.char)(buf))); err != nil {
		return nil, err
	}
	b := C.GoBytes(buf, C.int(sz))
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b, nil
}

// DestroyProgram calls nvrtcDestroyProgram.
func (n *NVRTC) DestroyProgram(p Program) error {
	h := p.p
	return n.check("nvrtcDestroyProgram", C.t_nvrtcDestroyProgram(n.destroy, &h))
}

// openOptional looks up the functions that older NVRTCs lack; each stays
// nil when missing.
func (n *NVRTC) openOptional() {
	for name, dst := range map[string]*unsafe.Pointer{
		"nvrtcGetCUBINSize": &n.cubinSize, "nvrtcGetCUBIN": &n.cubin,
		"nvrtcGetNumSupportedArchs": &n.numArchs, "nvrtcGetSupportedArchs": &n.archs,
	} {
		*dst, _ = n.lib.Sym(name)
	}
}

// HasCUBIN reports whether the library has nvrtcGetCUBINSize and
// nvrtcGetCUBIN (NVRTC 11.1 and later).
func (n *NVRTC) HasCUBIN() bool { return n.cubinSize != nil && n.cubin != nil }

// HasSupportedArchs reports whether the library has
// nvrtcGetNumSupportedArchs and nvrtcGetSupportedArchs (NVRTC 11.2 and
// later).
func (n *NVRTC) HasSupportedArchs() bool { return n.numArchs != nil && n.archs != nil }

// SupportedArchs calls nvrtcGetNumSupportedArchs and
// nvrtcGetSupportedArchs: the architectures the library compiles for, as
// 10·major + minor (e.g. 80 for sm_80/compute_80), in ascending order.
// It will panic if the library lacks them (see HasSupportedArchs).
func (n *NVRTC) SupportedArchs() ([]int, error) {
	if !n.HasSupportedArchs() {
		panic("cudadl: SupportedArchs of an NVRTC without nvrtcGetSupportedArchs")
	}
	var k C.int
	if err := n.check("nvrtcGetNumSupportedArchs", C.t_nvrtcGetNumSupportedArchs(n.numArchs, &k)); err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	buf := (*C.int)(C.malloc(C.size_t(k) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(buf))
	if err := n.check("nvrtcGetSupportedArchs", C.t_nvrtcGetSupportedArchs(n.archs, buf)); err != nil {
		return nil, err
	}
	out := make([]int, k)
	for i, a := range unsafe.Slice(buf, int(k)) {
		out[i] = int(a)
	}
	return out, nil
}

// CUBIN calls nvrtcGetCUBINSize and nvrtcGetCUBIN: the program's CUBIN,
// empty when it was compiled for a virtual architecture (compute_XY). It
// will panic if the library lacks them (see HasCUBIN).
func (n *NVRTC) CUBIN(p Program) ([]byte, error) {
	if !n.HasCUBIN() {
		panic("cudadl: CUBIN of an NVRTC without nvrtcGetCUBIN")
	}
	var sz C.size_t
	if err := n.check("nvrtcGetCUBINSize", C.t_nvrtcSize(n.cubinSize, p.p, &sz)); err != nil {
		return nil, err
	}
	if sz == 0 {
		return nil, nil
	}
	buf := C.malloc(sz)
	defer C.free(buf)
	if err := n.check("nvrtcGetCUBIN", C.t_nvrtcGet(n.cubin, p.p, (*C.char)(buf))); err != nil {
		return nil, err
	}
	return C.GoBytes(buf, C.int(sz)), nil
}

// Streams and contexts for NCCL (gnnmpi/nccl's staging through pinned
// memory on a communicator's own stream).

// StreamNonBlocking is cuStreamCreate's CU_STREAM_NON_BLOCKING: the
// stream does not wait for, nor is waited for by, the legacy default
// stream.
const StreamNonBlocking = 0x1 // CU_STREAM_NON_BLOCKING

// ErrNotReady is the code cuStreamQuery returns while work is pending
// (CUDA_ERROR_NOT_READY).
const ErrNotReady = 600 // CUDA_ERROR_NOT_READY

// CtxGetCurrent calls cuCtxGetCurrent: the calling OS thread's current
// context (the null Context when none is).
func (d *Driver) CtxGetCurrent() (Context, error) {
	var c C.CUcontext
	err := d.check("cuCtxGetCurrent", C.t_ptr(d.ctxGetCurrent, unsafe.Pointer(&c)))
	return Context{c}, err
}

// StreamQuery calls cuStreamQuery: done reports whether all the work
// enqueued on s has completed (false on CUDA_ERROR_NOT_READY, which is
// not an error).
func (d *Driver) StreamQuery(s Stream) (done bool, err error) {
	r := C.t_ptr(d.streamQuery, unsafe.Pointer(s.p))
	if r == ErrNotReady {
		return false, nil
	}
	return true, d.check("cuStreamQuery", r)
}

// MemcpyDtoHAsync calls cuMemcpyDtoHAsync_v2. dst must stay valid until
// the copy has run (s synchronized): page-locked memory from MemHostAlloc.
func (d *Driver) MemcpyDtoHAsync(dst unsafe.Pointer, src uint64, bytes uint64, s Stream) error {
	return d.check("cuMemcpyDtoHAsync_v2", C.t_cuMemcpyDtoHAsync(d.dtohAsync, dst, C.CUdeviceptr(src), C.size_t(bytes), s.p))
}

// DevicePCIBusID calls cuDeviceGetPCIBusId: the device's PCI address
// (domain:bus:device.function), which names one GPU of a host whatever
// CUDA_VISIBLE_DEVICES says.
func (d *Driver) DevicePCIBusID(dev int) (string, error) {
	var buf [64]C.char
	if err := d.check("cuDeviceGetPCIBusId", C.t_cuDeviceGetName(d.pciBusID, &buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	buf[len(buf)-1] = 0
	return C.GoString(&buf[0]), nil
}

// Uintptr returns the stream's handle as an address (a cudaStream_t, as
// NCCL takes it); the default stream is 0.
func (s Stream) Uintptr() uintptr { return uintptr(unsafe.Pointer(s.p)) }

// StreamOf returns the stream whose handle is h (Uintptr's inverse).
func StreamOf(h uintptr) Stream { return Stream{C.stream_of(C.uintptr_t(h))} }
