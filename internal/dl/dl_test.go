package dl

import (
	"errors"
	"strings"
	"testing"
	"unsafe"
)

// libc is always there: Open finds it and its symbols; a missing library
// or symbol is an error naming it.
func TestOpen(t *testing.T) {
	l, err := Open("libgnnmpi-missing.so.9", "libc.so.6")
	if err != nil {
		t.Fatal(err)
	}
	if l.Name != "libc.so.6" {
		t.Fatalf("opened %q, want libc.so.6", l.Name)
	}
	var strlen, malloc unsafe.Pointer
	if err := l.Syms(map[string]*unsafe.Pointer{"strlen": &strlen, "malloc": &malloc}); err != nil || strlen == nil || malloc == nil {
		t.Fatalf("strlen %v, malloc %v: %v", strlen, malloc, err)
	}
	if _, err := l.Sym("gnnmpi_no_such_symbol"); err == nil || !strings.Contains(err.Error(), "gnnmpi_no_such_symbol") {
		t.Fatalf("missing symbol: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open("libgnnmpi-missing.so.9")
	// dlerror's own message comes with it (read on the failing thread).
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "libgnnmpi-missing.so.9: cannot open shared object file") {
		t.Fatalf("missing library: %v", err)
	}
}
