package npy

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
)

// maxDeflateRatio bounds the ratio of a deflated entry's declared size to
// its compressed size: deflate cannot expand data by more than about
// 1032:1 (258 bytes from two bits), so a larger declaration is a lie (a
// zip bomb, or damage) and is refused before anything is read.
const maxDeflateRatio = 1032

// Archive is an open .npz archive: a zip file whose entries are .npy
// streams named "<array>.npy". The file is memory-mapped; its stored
// entries are read in place (mapped Arrays) and its deflated ones
// decompressed as they are read (streamed Arrays). Zip64 archives
// (written by NumPy's savez for every entry) are read alike.
type Archive struct {
	Path    string
	mem     []byte
	entries map[string]*zip.File
	names   []string
}

// OpenArchive opens the .npz archive at path. Entries whose names do not
// end in ".npy" are ignored, as numpy.load's NpzFile lists them but
// cannot load them as arrays; two entries of one name are an error.
func OpenArchive(path string) (*Archive, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return nil, &Error{Path: path, Err: formatf("empty file, not a .npz archive")}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: mmap: %w", path, err)
	}
	z := &Archive{Path: path, mem: mem, entries: map[string]*zip.File{}}
	zr, err := zip.NewReader(bytes.NewReader(mem), int64(len(mem)))
	if err != nil {
		z.Close()
		return nil, &Error{Path: path, Err: formatf("not a .npz (zip) archive: %v", err)}
	}
	for _, e := range zr.File {
		name, ok := strings.CutSuffix(e.Name, ".npy")
		if !ok {
			continue
		}
		if _, dup := z.entries[name]; dup {
			z.Close()
			return nil, &Error{Path: path, Entry: name, Err: formatf("two entries named %q", e.Name)}
		}
		z.entries[name] = e
		z.names = append(z.names, name)
	}
	slices.Sort(z.names)
	return z, nil
}

// Names returns the names of the archive's arrays in ascending order. The
// caller must not modify the slice.
func (z *Archive) Names() []string { return z.names }

// Has reports whether the archive holds an array called name.
func (z *Archive) Has(name string) bool { _, ok := z.entries[name]; return ok }

// Close releases the archive's mapping. Arrays opened from it must be
// closed first and not used after.
func (z *Archive) Close() error {
	if z.mem == nil {
		return nil
	}
	err := syscall.Munmap(z.mem)
	z.mem = nil
	return err
}

// Open opens the array called name (the entry "name.npy"): mapped when
// the entry is stored, streamed when it is deflated. Its header is read
// and checked now: the data it declares must fit in the entry's size, and
// a deflated entry's declared size must be within deflate's maximum ratio
// of its compressed size, so that no declared size is allocated or
// believed before it is checked. A stored entry is not checked against
// its CRC-32 (that would read all of it); a deflated one is, when it is
// read to its end.
func (z *Archive) Open(name string) (*Array, error) {
	e, ok := z.entries[name]
	if !ok {
		return nil, &Error{Path: z.Path, Entry: name, Err: fmt.Errorf("%w: no such array (the archive holds %s)", os.ErrNotExist, strings.Join(z.names, ", "))}
	}
	fail := func(err error) error { return &Error{Path: z.Path, Entry: name, Err: err} }
	size := e.UncompressedSize64
	switch e.Method {
	case zip.Store:
		if e.CompressedSize64 != size {
			return nil, fail(formatf("stored entry with compressed size %d but size %d", e.CompressedSize64, size))
		}
		off, err := e.DataOffset()
		if err != nil {
			return nil, fail(err)
		}
		if off < 0 || uint64(off) > uint64(len(z.mem)) || size > uint64(len(z.mem))-uint64(off) {
			return nil, fail(fmt.Errorf("%w: entry of %d bytes at offset %d, beyond the file's %d bytes", ErrTruncated, size, off, len(z.mem)))
		}
		return mappedArray(z.Path, name, z.mem[off:off+int64(size)])
	case zip.Deflate:
	default:
		return nil, fail(fmt.Errorf("unsupported zip compression method %d (want stored or deflated)", e.Method))
	}
	if size/maxDeflateRatio > e.CompressedSize64 {
		return nil, fail(formatf("entry declares %d bytes from %d compressed, beyond deflate's maximum ratio", size, e.CompressedSize64))
	}
	rc, err := e.Open()
	if err != nil {
		return nil, fail(err)
	}
	h, err := readHeader(rc)
	rc.Close()
	if err != nil {
		return nil, fail(err)
	}
	a := &Array{Header: h, Path: z.Path, Entry: name}
	if have := int64(size) - h.DataOffset; int64(size) < h.DataOffset || have < h.DataBytes() {
		return nil, a.errorf(ErrTruncated, "shape %s of %s declares %d bytes of data, the entry holds %d", ShapeString(h.Shape), h.DType, h.DataBytes(), max(have, 0))
	}
	a.open = func() (io.ReadCloser, error) {
		rc, err := e.Open()
		if err != nil {
			return nil, err
		}
		if _, err := io.CopyN(io.Discard, rc, h.DataOffset); err != nil {
			rc.Close()
			return nil, errors.Join(ErrTruncated, err)
		}
		return rc, nil
	}
	return a, nil
}
