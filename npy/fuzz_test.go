package npy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseHeader requires that ParseHeader never panics, that what it
// accepts is self-consistent, and that a file of the same bytes opens
// (or fails with an *Error) and reads back within its declared size.
func FuzzParseHeader(f *testing.F) {
	for _, s := range [][]byte{
		EncodeHeader(Float32Type, []int64{3, 4}),
		EncodeHeader(Int64Type, []int64{}),
		rawNPY(2, "{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3), }", make([]byte, 12)),
		rawNPY(3, "{'descr': '|b1', 'fortran_order': False, 'shape': (5L,), }", make([]byte, 5)),
		rawNPY(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (0, 9), }", nil),
		rawNPY(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", nil),
		[]byte(Magic),
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			if !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("error wraps neither ErrFormat nor ErrTruncated: %v", err)
			}
			return
		}
		if !h.DType.valid() || h.DataOffset > int64(len(b)) || h.Len() < 0 || h.DataBytes() < 0 {
			t.Fatalf("inconsistent header %+v from %d bytes", h, len(b))
		}
		again, err := ParseDType(h.DType.String())
		if err != nil || again != h.DType {
			t.Fatalf("dtype %v does not round-trip: %v %v", h.DType, again, err)
		}
		if !bytes.HasPrefix(b, []byte(Magic)) {
			t.Fatalf("accepted a header without the magic")
		}
		path := filepath.Join(dir, "f.npy")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := Open(path)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrTruncated) {
				t.Fatalf("Open: %v", err)
			}
			return
		}
		defer a.Close()
		if n := min(a.Len(), 64); n > 0 && a.DType.Kind == Float {
			if err := Read(a, make([]float64, n), 0); err != nil {
				t.Fatalf("Read: %v", err)
			}
		}
	})
}
