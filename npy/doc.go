// Package npy reads and writes NumPy's array files: .npy (one array) and
// .npz (a zip archive of .npy entries), as written by numpy.save,
// numpy.savez and numpy.savez_compressed.
//
// # Overview
//
// A .npy file is a magic string, a format version, a header dictionary
// (dtype, storage order, shape) and the raw elements. Versions 1.0 (2-byte
// header length), 2.0 (4-byte) and 3.0 (4-byte, UTF-8 header) are read;
// dtypes bool, int8…int64, uint8…uint64 and float16/32/64 in either byte
// order; C (row-major) and Fortran (column-major) order. Object, string,
// complex and structured dtypes are refused.
//
// Open memory-maps a .npy file. OpenArchive memory-maps a .npz file; its
// Open returns an Array over a stored entry's bytes in place (mapped), or
// a streamed Array over a deflated entry, decompressed as it is read. Both
// are read with Read (a range of elements in storage order) and ReadRows
// (rows along the first axis, in C order whatever the storage order),
// which convert to the caller's element type (Elem: int64, int32, float32,
// float64, or uint16 for raw float16 words). A mapped Array reads any
// range in any order: a rank reads only its rows. A streamed one reads
// forward: each rank streams the entry once, keeping the rows it asks for
// and discarding the rest, with a 64 KiB buffer; Cursor opens a second
// stream of the same entry, to read its parts side by side (the source
// and destination rows of a 2×E edge list).
//
// # Writing
//
// Write writes a whole .npy stream and ArchiveWriter a .npz. Writer writes
// one array through an io.WriterAt, the header and rows at their offsets in
// any order, so that several ranks can each write their rows of one file.
// Headers are version 1.0, or 2.0 when the dictionary outgrows 1.0's
// 2-byte length, and the data starts at a multiple of 64 bytes.
//
// # Errors
//
// Every error reading a file is an *Error naming the file and, in an
// archive, the array, and wraps one of ErrFormat (wrong magic,
// unsupported version, malformed header, unsupported dtype), ErrTruncated
// (data shorter than declared), ErrDType, ErrShape, ErrRange or
// ErrBackward. Sizes are checked before they are trusted: a header's
// declared data must fit in its file or entry, and a deflated entry's
// declared size within deflate's maximum expansion of its compressed
// size, so a zip bomb or a damaged header is refused without allocating
// what it declares. Values are not checked beyond their type's range:
// callers that need finite features check them (package graph does).
package npy
