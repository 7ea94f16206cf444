package npy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// The errors a reader wraps, for errors.Is.
var (
	// ErrFormat marks a malformed magic, version or header dictionary.
	ErrFormat = errors.New("malformed .npy or .npz file")
	// ErrTruncated marks data, a header or an archive entry shorter than
	// declared.
	ErrTruncated = errors.New("truncated")
	// ErrDType marks an array whose dtype the caller's element type cannot
	// hold (a float array read as integers, for example).
	ErrDType = errors.New("dtype mismatch")
	// ErrShape marks an array whose shape is not what the caller requires.
	ErrShape = errors.New("shape mismatch")
	// ErrRange marks a value out of the range of the caller's element type.
	ErrRange = errors.New("value out of range")
	// ErrBackward marks a read behind an earlier one on a streamed array.
	ErrBackward = errors.New("streamed array read out of order")
)

// Error is an error reading an array, naming the file and, for an
// archive, the array (the entry's name less ".npy").
type Error struct {
	Path  string
	Entry string // "" for a .npy file
	Err   error
}

// Error returns "path: entry: message", or "path: message" for a .npy file.
func (e *Error) Error() string {
	if e.Entry != "" {
		return e.Path + ": " + e.Entry + ": " + e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// chunk is the size of the buffer a streamed read converts through.
const chunk = 1 << 16

// Array is one array opened for reading: a .npy file (Open) or an entry
// of a .npz archive (Archive.Open). It is either mapped, when its data
// lies uncompressed in a file (a .npy file, a stored archive entry: the
// file is memory-mapped and reads are random access), or streamed (a
// deflated entry: reads decompress from the entry's start and must go
// forward; see Read). An Array is not safe for concurrent use; Cursor
// gives each goroutine its own.
type Array struct {
	Header
	Path  string // the file
	Entry string // the array's name in an archive; "" for a .npy file

	mem   []byte                        // the data (DataBytes bytes) when mapped
	unmap func() error                  // releases the mapping, for the Array that owns it
	open  func() (io.ReadCloser, error) // a new stream of the data, when streamed

	rc  io.ReadCloser
	br  *bufio.Reader
	pos int64 // byte offset of br in the data
	buf []byte
}

// errorf returns an *Error naming a's file and entry.
func (a *Array) errorf(err error, format string, args ...any) error {
	return &Error{Path: a.Path, Entry: a.Entry, Err: fmt.Errorf("%w: "+format, append([]any{err}, args...)...)}
}

// Name returns the array's name for messages: "path" or "path: entry".
func (a *Array) Name() string {
	if a.Entry != "" {
		return a.Path + ": " + a.Entry
	}
	return a.Path
}

// Mapped reports whether a's data is memory-mapped (random access), as
// opposed to streamed.
func (a *Array) Mapped() bool { return a.open == nil }

// Open opens the .npy file at path and memory-maps it. The data must be
// at least as long as the header declares. Close releases the mapping.
func Open(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size == 0 {
		return nil, &Error{Path: path, Err: formatf("empty file, not a .npy file")}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	a, err := mappedArray(path, "", mem)
	if err != nil {
		syscall.Munmap(mem)
		return nil, err
	}
	a.unmap = func() error { return syscall.Munmap(mem) }
	return a, nil
}

// mappedArray parses the .npy stream in b and returns an Array over its
// data, which must fit in b.
func mappedArray(path, entry string, b []byte) (*Array, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, &Error{Path: path, Entry: entry, Err: err}
	}
	a := &Array{Header: h, Path: path, Entry: entry}
	if have := int64(len(b)) - h.DataOffset; have < h.DataBytes() {
		return nil, a.errorf(ErrTruncated, "shape %s of %s declares %d bytes of data, %d present", ShapeString(h.Shape), h.DType, h.DataBytes(), have)
	}
	a.mem = b[h.DataOffset : h.DataOffset+h.DataBytes()]
	return a, nil
}

// readHeader reads a .npy header from the start of r.
func readHeader(r io.Reader) (Header, error) {
	b := make([]byte, 12, 256)
	if _, err := io.ReadFull(r, b[:10]); err != nil {
		return Header{}, fmt.Errorf("%w: reading the .npy prefix: %v", ErrTruncated, err)
	}
	if b[6] >= 2 {
		if _, err := io.ReadFull(r, b[10:12]); err != nil {
			return Header{}, fmt.Errorf("%w: reading the .npy prefix: %v", ErrTruncated, err)
		}
	} else {
		b = b[:10]
	}
	_, _, n, err := ParsePrefix(b)
	if err != nil {
		return Header{}, err
	}
	b = append(b, make([]byte, n)...)
	if _, err := io.ReadFull(r, b[len(b)-n:]); err != nil {
		return Header{}, fmt.Errorf("%w: reading the %d-byte header: %v", ErrTruncated, n, err)
	}
	return ParseHeader(b)
}

// Cursor returns a new Array over the same data with its own read
// position: for a streamed array, a second stream of the entry, so that
// two parts of it (the two rows of an edge_index) can be read forward
// side by side. A cursor must be closed, and must not be used after the
// Array (or Archive) it came from is closed.
func (a *Array) Cursor() *Array {
	return &Array{Header: a.Header, Path: a.Path, Entry: a.Entry, mem: a.mem, open: a.open}
}

// Close releases a's stream and, for the Array Open returned, its
// mapping.
func (a *Array) Close() error {
	var err error
	if a.rc != nil {
		err = a.rc.Close()
		a.rc, a.br = nil, nil
	}
	if a.unmap != nil {
		err = errors.Join(err, a.unmap())
		a.unmap = nil
	}
	a.mem = nil
	return err
}

// raw fills p with the data bytes at byte offset off of a streamed array.
func (a *Array) raw(p []byte, off int64) error {
	if a.br == nil || off < a.pos {
		if a.br != nil {
			return a.errorf(ErrBackward, "byte %d requested after byte %d", off, a.pos)
		}
		rc, err := a.open()
		if err != nil {
			return &Error{Path: a.Path, Entry: a.Entry, Err: err}
		}
		a.rc, a.br, a.pos = rc, bufio.NewReaderSize(rc, chunk), 0
	}
	if skip := off - a.pos; skip > 0 {
		n, err := io.CopyN(io.Discard, a.br, skip)
		a.pos += n
		if err != nil {
			return a.streamErr(err)
		}
	}
	n, err := io.ReadFull(a.br, p)
	a.pos += int64(n)
	if err != nil {
		return a.streamErr(err)
	}
	return nil
}

// streamErr names a failed stream read.
func (a *Array) streamErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return a.errorf(ErrTruncated, "data ends at byte %d of the %d declared", a.pos, a.DataBytes())
	}
	return &Error{Path: a.Path, Entry: a.Entry, Err: err}
}

// Elem is the set of element types the readers convert to and the
// writers write. A []uint16 holds IEEE half-precision words (dtype f2),
// not 16-bit integers.
type Elem interface {
	int64 | int32 | float32 | float64 | uint16
}

// Read reads len(dst) elements of a into dst, starting at the element
// off in storage order (C order: row-major; Fortran order: column-major),
// converting them to T:
//
//	int64    from bool, int8…int64, uint8…uint64 (a uint64 above 2⁶³-1 is an ErrRange error)
//	int32    from bool and every integer dtype whose value fits (else ErrRange)
//	float32  from float16, float32 and float64 (float64 rounded; no range check)
//	float64  from float16, float32 and float64
//	uint16   from float16 only: the raw half-precision words
//
// Other pairs are an ErrDType error naming the array. A mapped array
// reads any range in any order. A streamed array decompresses forward:
// each read must start at or after the end of the previous one (else
// ErrBackward), the bytes between are decompressed and discarded, and
// only a chunk of 64 KiB is buffered; so a caller keeping rows [lo, hi)
// reads them in one pass. Read panics if [off, off+len(dst)) is not
// within [0, Len).
func Read[T Elem](a *Array, dst []T, off int64) error {
	if off < 0 || off+int64(len(dst)) > a.Len() {
		panic("npy: read out of range")
	}
	if err := convertible[T](a.DType); err != nil {
		return a.errorf(ErrDType, "%s array read as %s", a.DType, err)
	}
	size := int64(a.DType.Size)
	if a.open == nil {
		return decode(a, dst, a.mem[off*size:(off+int64(len(dst)))*size], off)
	}
	if a.buf == nil {
		a.buf = make([]byte, chunk)
	}
	per := int64(len(a.buf)) / size
	for done := int64(0); done < int64(len(dst)); {
		k := min(per, int64(len(dst))-done)
		raw := a.buf[:k*size]
		if err := a.raw(raw, (off+done)*size); err != nil {
			return err
		}
		if err := decode(a, dst[done:done+k], raw, off+done); err != nil {
			return err
		}
		done += k
	}
	return nil
}

// ReadRows reads rows [lo, hi) along the first axis into dst in C order
// (row i of the result is dst[(i-lo)·RowLen : (i-lo+1)·RowLen]), whatever
// a's storage order, converting as Read does. For a Fortran-ordered array
// the rows are gathered from RowLen strips of hi-lo elements (one a
// column), read in ascending storage order through a buffer of at most
// 64 KiB of a's elements: one forward pass on a streamed (deflated)
// array, which keeps of each column only rows [lo, hi) and holds dst and
// that buffer. A later call on the same streamed Array must start at or
// after the end of this one's last strip (else ErrBackward): use a new
// Cursor for each row range. It panics unless 0 ≤ lo ≤ hi ≤ Rows and
// len(dst) = (hi-lo)·RowLen.
func ReadRows[T Elem](a *Array, dst []T, lo, hi int64) error {
	rows, rowLen := a.Rows(), a.RowLen()
	if lo < 0 || lo > hi || hi > rows || int64(len(dst)) != (hi-lo)*rowLen {
		panic("npy: bad row range")
	}
	if !a.Fortran || len(a.Shape) <= 1 || hi == lo {
		return Read(a, dst, lo*rowLen)
	}
	// Storage index of (i, j) is i + rows·q, where q is the Fortran
	// (first-fastest) flat index of the trailing indices j; its C
	// (last-fastest) flat index c is kept alongside.
	dims := a.Shape[1:]
	idx := make([]int64, len(dims))
	strides := make([]int64, len(dims)) // C strides of the trailing dims
	s := int64(1)
	for k := len(dims) - 1; k >= 0; k-- {
		strides[k] = s
		s *= dims[k]
	}
	piece := make([]T, min(hi-lo, chunk/int64(a.DType.Size)))
	var c int64
	for q := int64(0); q < rowLen; q++ {
		for at := lo; at < hi; at += int64(len(piece)) {
			p := piece[:min(int64(len(piece)), hi-at)]
			if err := Read(a, p, rows*q+at); err != nil {
				return err
			}
			for i, v := range p {
				dst[(at-lo+int64(i))*rowLen+c] = v
			}
		}
		// Advance the trailing index in Fortran order.
		for k := range idx {
			idx[k]++
			c += strides[k]
			if idx[k] < dims[k] {
				break
			}
			c -= idx[k] * strides[k]
			idx[k] = 0
		}
	}
	return nil
}

// RequireShape returns an ErrShape error naming a unless its shape has
// len(want) dimensions equal to want where want is not negative (-1
// matches any size).
func (a *Array) RequireShape(want ...int64) error {
	ok := len(a.Shape) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] < 0 || want[i] == a.Shape[i]
	}
	if ok {
		return nil
	}
	w := make([]string, len(want))
	for i, v := range want {
		w[i] = fmt.Sprint(v)
		if v < 0 {
			w[i] = "*"
		}
	}
	return a.errorf(ErrShape, "shape %s, want %s", ShapeString(a.Shape), shapeWant(w))
}

func shapeWant(w []string) string {
	s := "("
	for i, x := range w {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	if len(w) == 1 {
		s += ","
	}
	return s + ")"
}

// formatError is a malformed-input error that matches ErrFormat.
type formatError struct{ msg string }

func (e *formatError) Error() string        { return e.msg }
func (e *formatError) Is(target error) bool { return target == ErrFormat }

// formatf returns a formatError.
func formatf(format string, args ...any) error {
	return &formatError{msg: fmt.Sprintf(format, args...)}
}
