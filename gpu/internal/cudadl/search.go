package cudadl

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"gnnmpi/internal/dl"
)

// LibDirEnv names the environment variable whose directory is searched for
// the libraries before the loader's path.
const LibDirEnv = "GNNMPI_CUDA_LIBDIR"

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

// candidates returns names under $GNNMPI_CUDA_LIBDIR, then the names for
// the loader's path, then names under each of dirs (empty ones skipped).
func candidates(names, dirs []string) []string { return dl.Candidates(LibDirEnv, names, dirs...) }

func cudaHomeLib() string {
	if h := os.Getenv("CUDA_HOME"); h != "" {
		return filepath.Join(h, "lib64")
	}
	return ""
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
