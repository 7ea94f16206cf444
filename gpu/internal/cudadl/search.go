package cudadl

import (
	"fmt"
	"unsafe"

	"gnnmpi/internal/dl"
)

// LibDirEnv names the environment variable whose directory is searched for
// the libraries first (see dl.Search and dl.NVRTC).
const LibDirEnv = dl.CUDALibDirEnv

// DriverDirEnv names the environment variable whose directory is searched
// for the driver before LibDirEnv's (see dl.Driver).
const DriverDirEnv = dl.CUDADriverDirEnv

// Error is a non-zero return code of a driver or NVRTC function.
type Error struct {
	Lib  string // the library, e.g. libcuda.so.1
	Func string // the function, e.g. cuMemAlloc_v2
	Code int    // the CUresult or nvrtcResult
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY or NVRTC_ERROR_COMPILATION; empty when the library gave none
	Msg  string // the driver's description, when it gave one
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s: ", e.Lib, e.Func)
	if e.Name != "" {
		s += e.Name
	} else {
		s += fmt.Sprintf("error %d", e.Code)
	}
	if e.Msg != "" {
		s += " (" + e.Msg + ")"
	}
	return s
}

// sym returns the first of names that lib exports.
func sym(lib *dl.Lib, names []string) (unsafe.Pointer, error) {
	var err error
	for _, n := range names {
		var p unsafe.Pointer
		if p, err = lib.Sym(n); err == nil {
			return p, nil
		}
	}
	return nil, err
}
