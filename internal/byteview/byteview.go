// Package byteview views numeric slices as their bytes, without copying:
// the bytes of the binary dataset format and of checkpoint files, which
// are little-endian, written and mapped straight from the arrays on a
// little-endian host.
package byteview

import (
	"encoding/binary"
	"unsafe"
)

// LittleEndian reports whether the host stores numbers little-endian, the
// byte order of gnnmpi's files: only then are Of's bytes those files'
// bytes.
var LittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Of returns the memory of s as bytes (len(s)·size of T of them), without
// copying: writing them writes s. It returns nil for an empty s.
func Of[T int64 | int32 | float64 | float32 | uint16](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}
