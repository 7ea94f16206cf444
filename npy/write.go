package npy

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// DTypeOf returns the little-endian dtype that holds T: int64 '<i8',
// int32 '<i4', float32 '<f4', float64 '<f8' and uint16 '<f2' (half-
// precision words).
func DTypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case int64:
		return Int64Type
	case int32:
		return Int32Type
	case float32:
		return Float32Type
	case float64:
		return Float64Type
	}
	return Float16Type
}

// appendElems appends src to dst in little-endian byte order.
func appendElems[T Elem](dst []byte, src []T) []byte {
	switch src := any(src).(type) {
	case []int64:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
	case []int32:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		}
	case []float32:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	case []float64:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
		}
	case []uint16:
		for _, v := range src {
			dst = binary.LittleEndian.AppendUint16(dst, v)
		}
	}
	return dst
}

// Writer writes one C-order .npy array of T (dtype DTypeOf[T]) and a
// fixed shape through an io.WriterAt: the header, and rows along the
// first axis at their offsets, in any order. Several writers of the same
// shape over one file (ranks, each holding rows [lo, hi)) write disjoint
// byte ranges, so each can write its rows while one writes the header;
// the file is whole when every row and the header are written. A Writer
// does not create, truncate, sync or rename files: the caller does (an
// atomic write renames a complete temporary file).
type Writer[T Elem] struct {
	w      io.WriterAt
	shape  []int64
	header []byte
	rowLen int64
	buf    []byte
}

// NewWriter returns a Writer of an array of the given shape to w. The
// header is version 1.0, or 2.0 when its dictionary needs more than 65535
// bytes. It panics if a dimension is negative. shape is copied.
func NewWriter[T Elem](w io.WriterAt, shape []int64) *Writer[T] {
	h := Header{Shape: shape}
	return &Writer[T]{w: w, shape: append([]int64(nil), shape...), header: EncodeHeader(DTypeOf[T](), shape), rowLen: h.RowLen()}
}

// HeaderSize returns the length of the header: the byte offset of the
// data.
func (w *Writer[T]) HeaderSize() int64 { return int64(len(w.header)) }

// Size returns the length of the whole file: header and data.
func (w *Writer[T]) Size() int64 {
	h := Header{DType: DTypeOf[T](), Shape: w.shape}
	return w.HeaderSize() + h.DataBytes()
}

// WriteHeader writes the header at offset 0.
func (w *Writer[T]) WriteHeader() error {
	_, err := w.w.WriteAt(w.header, 0)
	return err
}

// WriteRows writes src as rows [lo, lo+len(src)/RowLen) of the array, in
// C order. It panics unless len(src) is a multiple of the row length and
// the rows are within the shape.
func (w *Writer[T]) WriteRows(lo int64, src []T) error {
	h := Header{Shape: w.shape}
	if int64(len(src))%w.rowLen != 0 || lo < 0 || lo+int64(len(src))/w.rowLen > h.Rows() {
		panic("npy: bad rows to write")
	}
	size := int64(DTypeOf[T]().Size)
	off := w.HeaderSize() + lo*w.rowLen*size
	per := max(1, chunk/int(size))
	for len(src) > 0 {
		k := min(per, len(src))
		w.buf = appendElems(w.buf[:0], src[:k])
		if _, err := w.w.WriteAt(w.buf, off); err != nil {
			return err
		}
		off += int64(len(w.buf))
		src = src[k:]
	}
	return nil
}

// Write writes a whole .npy stream (header, then data in C order) of an
// array of the given shape to w. It panics unless len(data) is the
// product of shape.
func Write[T Elem](w io.Writer, shape []int64, data []T) error {
	h := Header{Shape: shape}
	if int64(len(data)) != h.Len() {
		panic("npy: data does not match the shape")
	}
	if _, err := w.Write(EncodeHeader(DTypeOf[T](), shape)); err != nil {
		return err
	}
	buf := make([]byte, 0, chunk)
	per := chunk / DTypeOf[T]().Size
	for len(data) > 0 {
		k := min(per, len(data))
		buf = appendElems(buf[:0], data[:k])
		if _, err := w.Write(buf); err != nil {
			return err
		}
		data = data[k:]
	}
	return nil
}

// ArchiveWriter writes a .npz archive: one zip entry "<name>.npy" per
// array, stored or deflated.
type ArchiveWriter struct {
	zw     *zip.Writer
	method uint16
}

// NewArchiveWriter returns an ArchiveWriter to w; compress deflates the
// entries (numpy.savez_compressed) rather than storing them
// (numpy.savez), which keeps them memory-mappable on read.
func NewArchiveWriter(w io.Writer, compress bool) *ArchiveWriter {
	m := zip.Store
	if compress {
		m = zip.Deflate
	}
	return &ArchiveWriter{zw: zip.NewWriter(w), method: m}
}

// Add writes the array called name of the given shape as the next entry.
// It panics unless len(data) is the product of shape.
func Add[T Elem](aw *ArchiveWriter, name string, shape []int64, data []T) error {
	w, err := aw.zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: aw.method})
	if err != nil {
		return err
	}
	return Write(w, shape, data)
}

// Close finishes the archive (the central directory). It does not close
// the underlying writer.
func (aw *ArchiveWriter) Close() error { return aw.zw.Close() }

// EntryWriter streams the data of one .npz entry created by Create: rows
// are appended in order, so that no more than the caller's piece is held.
type EntryWriter[T Elem] struct {
	w         io.Writer
	left      int64 // elements still to write
	buf       []byte
	name      string
	wantTotal int64
}

// Create starts the next entry of aw, the array called name of the given
// shape, and returns a writer of its data in C order. The entry is
// streamed: the zip writer computes its CRC-32 and sizes while the data
// pass through and writes them in a data descriptor after the data (zip64
// when the entry reaches 4 GiB), so nothing but a chunk is buffered. The
// caller must write exactly the product of shape elements and call
// Finish before creating another entry or closing aw. It panics if a
// dimension is negative.
func Create[T Elem](aw *ArchiveWriter, name string, shape []int64) (*EntryWriter[T], error) {
	w, err := aw.zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: aw.method})
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(EncodeHeader(DTypeOf[T](), shape)); err != nil {
		return nil, err
	}
	h := Header{Shape: shape}
	return &EntryWriter[T]{w: w, left: h.Len(), name: name, wantTotal: h.Len()}, nil
}

// Write appends src to the entry's data. It returns an error, writing
// nothing, if src would run past the array's length.
func (e *EntryWriter[T]) Write(src []T) error {
	if int64(len(src)) > e.left {
		return fmt.Errorf("npy: entry %s: %d elements written past its length %d", e.name, int64(len(src))-e.left, e.wantTotal)
	}
	e.left -= int64(len(src))
	per := max(1, chunk/DTypeOf[T]().Size)
	for len(src) > 0 {
		k := min(per, len(src))
		e.buf = appendElems(e.buf[:0], src[:k])
		if _, err := e.w.Write(e.buf); err != nil {
			return err
		}
		src = src[k:]
	}
	return nil
}

// Finish reports an error if fewer elements were written than the
// array's length.
func (e *EntryWriter[T]) Finish() error {
	if e.left != 0 {
		return fmt.Errorf("npy: entry %s: %d of %d elements written", e.name, e.wantTotal-e.left, e.wantTotal)
	}
	return nil
}
