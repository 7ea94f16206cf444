package npy

import (
	"encoding/binary"
	"fmt"
	"math"

	"gnnmpi/internal/f16"
)

// convertible returns nil if a d array can be read as T, else T's name.
func convertible[T Elem](d DType) error {
	var z T
	var ok bool
	switch any(z).(type) {
	case int64, int32:
		ok = d.Kind == Bool || d.Kind == Int || d.Kind == Uint
	case float32, float64:
		ok = d.Kind == Float
	case uint16:
		ok = d.Kind == Float && d.Size == 2
	}
	if ok {
		return nil
	}
	return fmt.Errorf("%s", typeName[T]())
}

// typeName names T for messages.
func typeName[T Elem]() string {
	var z T
	switch any(z).(type) {
	case uint16:
		return "float16 words"
	}
	return fmt.Sprintf("%T", z)
}

// bits returns the i'th element of raw as its unsigned bit pattern.
func bits(raw []byte, i int, d DType) uint64 {
	b := raw[i*d.Size : (i+1)*d.Size]
	if d.BigEndian {
		switch d.Size {
		case 2:
			return uint64(binary.BigEndian.Uint16(b))
		case 4:
			return uint64(binary.BigEndian.Uint32(b))
		case 8:
			return binary.BigEndian.Uint64(b)
		}
	}
	switch d.Size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}

// integer returns the i'th element of an integer or bool array; ok is
// false for a uint64 above math.MaxInt64.
func integer(raw []byte, i int, d DType) (v int64, ok bool) {
	u := bits(raw, i, d)
	if d.Kind == Int {
		shift := 64 - 8*uint(d.Size)
		return int64(u<<shift) >> shift, true
	}
	return int64(u), u <= math.MaxInt64
}

// float returns the i'th element of a float array.
func float(raw []byte, i int, d DType) float64 {
	u := bits(raw, i, d)
	switch d.Size {
	case 2:
		return float64(f16.ToFloat32(uint16(u)))
	case 4:
		return float64(math.Float32frombits(uint32(u)))
	}
	return math.Float64frombits(u)
}

// decode converts the len(dst) elements in raw, which start at element
// off of a, into dst. convertible must have accepted the pair.
func decode[T Elem](a *Array, dst []T, raw []byte, off int64) error {
	d := a.DType
	le := !d.BigEndian || d.Size == 1
	switch dst := any(dst).(type) {
	case []int64:
		if le && d.Kind == Int && d.Size == 8 {
			for i := range dst {
				dst[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
			}
			return nil
		}
		for i := range dst {
			v, ok := integer(raw, i, d)
			if !ok {
				return a.errorf(ErrRange, "element %d: %d does not fit int64", off+int64(i), uint64(v))
			}
			dst[i] = v
		}
	case []int32:
		for i := range dst {
			v, ok := integer(raw, i, d)
			if !ok || v != int64(int32(v)) {
				return a.errorf(ErrRange, "element %d: %d does not fit int32", off+int64(i), bits(raw, i, d))
			}
			dst[i] = int32(v)
		}
	case []float32:
		switch {
		case le && d.Size == 4:
			for i := range dst {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		case d.Size == 2:
			for i := range dst {
				dst[i] = f16.ToFloat32(uint16(bits(raw, i, d)))
			}
		default:
			for i := range dst {
				dst[i] = float32(float(raw, i, d))
			}
		}
	case []float64:
		for i := range dst {
			dst[i] = float(raw, i, d)
		}
	case []uint16:
		for i := range dst {
			dst[i] = uint16(bits(raw, i, d))
		}
	}
	return nil
}
