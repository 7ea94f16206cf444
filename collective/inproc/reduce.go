package inproc

import (
	"unsafe"

	"gnnmpi/collective"
)

// reduce folds src into dst element-wise: dst = op(dst, src).
func reduce(t collective.DType, op collective.Op, dst, src []byte) {
	switch t {
	case collective.Byte:
		fold(op, dst, src)
	case collective.Int32:
		fold(op, view[int32](dst), view[int32](src))
	case collective.Int64:
		fold(op, view[int64](dst), view[int64](src))
	case collective.Float32:
		fold(op, view[float32](dst), view[float32](src))
	case collective.Float64:
		fold(op, view[float64](dst), view[float64](src))
	case collective.Uint16:
		fold(op, view[uint16](dst), view[uint16](src))
	}
}

func view[E collective.Elem](b []byte) []E {
	if len(b) == 0 {
		return nil
	}
	var z E
	return unsafe.Slice((*E)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(z)))
}

func fold[E collective.Elem](op collective.Op, dst, src []E) {
	switch op {
	case collective.Sum:
		for i, v := range src {
			dst[i] += v
		}
	case collective.Max:
		for i, v := range src {
			if v > dst[i] {
				dst[i] = v
			}
		}
	case collective.Min:
		for i, v := range src {
			if v < dst[i] {
				dst[i] = v
			}
		}
	}
}
