// Package dl opens shared libraries at run time (dlopen) and looks up
// their symbols (dlsym), so that gnnmpi can use CUDA, NVRTC, cuBLAS,
// cuSPARSE and NCCL where they are installed without needing any of them
// to build or to test. It is the cgo leaf the GPU packages share: they
// keep their own C trampolines that call the symbols it returns.
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>

// dlerror's message is per thread, and two cgo calls may run on two: each
// helper reads it in the same call as the failure.
static void *gnnmpi_dlopen(const char *name, const char **err) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	*err = h == NULL ? dlerror() : NULL;
	return h;
}

static void *gnnmpi_dlsym(void *h, const char *name, const char **err) {
	dlerror();
	void *p = dlsym(h, name);
	*err = p == NULL ? dlerror() : NULL;
	return p;
}

static const char *gnnmpi_dlclose(void *h) {
	return dlclose(h) == 0 ? NULL : dlerror();
}
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"
)

// ErrNotFound is wrapped by Open when none of the names could be loaded.
var ErrNotFound = errors.New("dl: library not found")

// Lib is an open shared library.
type Lib struct {
	Name   string // the name it was opened by
	handle unsafe.Pointer
	deps   []*Lib // loaded for it by Search.Open, unloaded after it
}

// Open loads the first of names that dlopen finds (a file name searched
// on the loader's path, or a path) with RTLD_NOW|RTLD_LOCAL. The error
// names every name tried and wraps ErrNotFound.
func Open(names ...string) (*Lib, error) {
	var msgs []string
	for _, name := range names {
		cs := C.CString(name)
		var msg *C.char
		h := C.gnnmpi_dlopen(cs, &msg)
		C.free(unsafe.Pointer(cs))
		if h != nil {
			return &Lib{Name: name, handle: h}, nil
		}
		msgs = append(msgs, C.GoString(msg))
	}
	return nil, fmt.Errorf("%w: tried %s (%s)", ErrNotFound, strings.Join(names, ", "), strings.Join(msgs, "; "))
}

// Sym returns the address of the symbol name, or an error naming it and
// the library.
func (l *Lib) Sym(name string) (unsafe.Pointer, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var msg *C.char
	p := C.gnnmpi_dlsym(l.handle, cs, &msg)
	if p == nil {
		return nil, fmt.Errorf("dl: %s has no symbol %s (%s)", l.Name, name, C.GoString(msg))
	}
	return p, nil
}

// Syms looks up every name and stores its address in the pointer beside
// it: Syms(map[string]*unsafe.Pointer{"cuInit": &f.cuInit}). The error
// names the first missing symbol.
func (l *Lib) Syms(dst map[string]*unsafe.Pointer) error {
	for name, p := range dst {
		s, err := l.Sym(name)
		if err != nil {
			return err
		}
		*p = s
	}
	return nil
}

// Deps returns the paths of the libraries Search.Open loaded for l from
// its directory (see Search.Deps), in the order of Search.Deps.
func (l *Lib) Deps() []string {
	var out []string
	for _, d := range l.deps {
		out = append(out, d.Name)
	}
	return out
}

// Close unloads the library, then the libraries loaded for it.
func (l *Lib) Close() error {
	var err error
	if msg := C.gnnmpi_dlclose(l.handle); msg != nil {
		err = fmt.Errorf("dl: closing %s: %s", l.Name, C.GoString(msg))
	}
	for _, d := range l.deps {
		err = errors.Join(err, d.Close())
	}
	return err
}
