// Package safetensors writes and reads the safetensors format of Hugging
// Face's safetensors library, in pure Go.
//
// # Format
//
// A file is an 8-byte little-endian unsigned header length N, then N bytes
// of UTF-8 JSON, then the data section:
//
//	{"__metadata__": {"key": "value", …},
//	 "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, …}
//
// The offsets are byte offsets into the data section (the byte after the
// header is 0). Each tensor is stored row-major and little-endian, and the
// tensors lie end to end, covering the data section exactly. The metadata
// is optional and holds strings only.
//
// Encode writes what the library's writer writes: the tensors ordered by
// dtype, widest alignment first (the library's Dtype order, descending),
// then by name; their data in that order; the JSON compact, the metadata
// first with its keys sorted (the library's writer, which keeps them in a
// hash map, fixes no order), then the tensors in data order; and the
// header padded with spaces to a multiple of 8 bytes, so that the data
// section starts aligned.
//
// Decode checks what the library's reader checks, and names the file and
// the tensor in its errors: the header length within the file and below
// MaxHeader, the header a JSON object, each tensor's dtype known, its
// shape non-negative, its byte size (elements times the dtype's size)
// equal to end−begin, the tensors contiguous and covering the data
// section (no overlap, gap or offset outside it), and no name twice.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxHeader is the largest header length Decode accepts, the library's
// limit (100 MB).
const MaxHeader = 100_000_000

// MetadataKey is the header's key of the metadata object.
const MetadataKey = "__metadata__"

// ErrFormat is wrapped by every error Decode returns for a malformed file.
var ErrFormat = errors.New("safetensors: malformed file")

// DType is a tensor's element type, as the header spells it.
type DType string

// The element types this package reads and writes, in the library's
// order (Encode sorts by it, descending).
const (
	Bool DType = "BOOL"
	U8   DType = "U8"
	I8   DType = "I8"
	I16  DType = "I16"
	U16  DType = "U16"
	F16  DType = "F16"
	BF16 DType = "BF16"
	I32  DType = "I32"
	U32  DType = "U32"
	F32  DType = "F32"
	F64  DType = "F64"
	I64  DType = "I64"
	U64  DType = "U64"
)

// dtypes lists the DTypes in the library's order.
var dtypes = []DType{Bool, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64}

// Size returns the bytes of one element of d, or 0 if d is not a DType
// this package knows.
func (d DType) Size() int {
	switch d {
	case Bool, U8, I8:
		return 1
	case I16, U16, F16, BF16:
		return 2
	case I32, U32, F32:
		return 4
	case F64, I64, U64:
		return 8
	}
	return 0
}

// rank returns d's position in the library's order.
func (d DType) rank() int { return slices.Index(dtypes, d) }

// Tensor is one named tensor: Data holds its elements row-major in
// little-endian byte order, len(Data) = DType.Size()·∏Shape.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
}

// FromFloat32 returns the F32 tensor name of the given shape holding v.
// It will panic if len(v) is not the product of shape.
func FromFloat32(name string, shape []int64, v []float32) Tensor {
	if n, ok := elements(shape); !ok || n != int64(len(v)) {
		panic("safetensors: FromFloat32: len(v) does not match the shape")
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return Tensor{Name: name, DType: F32, Shape: slices.Clone(shape), Data: b}
}

// Float32 returns the elements of an F32 tensor, or an error for another
// dtype.
func (t Tensor) Float32() ([]float32, error) {
	if t.DType != F32 {
		return nil, fmt.Errorf("safetensors: tensor %q is %s, not F32", t.Name, t.DType)
	}
	v := make([]float32, len(t.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return v, nil
}

// elements returns the product of shape, and false if a dimension is
// negative or the product overflows.
func elements(shape []int64) (int64, bool) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 || d > 0 && n > math.MaxInt64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// check returns an error if t's dtype is unknown, its shape invalid or
// its data not of the shape's size.
func (t Tensor) check() error {
	size := t.DType.Size()
	if size == 0 {
		return fmt.Errorf("tensor %q: unknown dtype %q", t.Name, t.DType)
	}
	n, ok := elements(t.Shape)
	if !ok || n > math.MaxInt64/int64(size) {
		return fmt.Errorf("tensor %q: invalid shape %v", t.Name, t.Shape)
	}
	if n*int64(size) != int64(len(t.Data)) {
		return fmt.Errorf("tensor %q: %s shape %v is %d bytes, data has %d", t.Name, t.DType, t.Shape, n*int64(size), len(t.Data))
	}
	return nil
}

// File is the content of a safetensors file: its metadata (nil when the
// header has none) and its tensors in data order.
type File struct {
	Metadata map[string]string
	Tensors  []Tensor
}

// Tensor returns the tensor called name, and false if there is none.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Encode returns the safetensors file of tensors and metadata (nil or
// empty: no metadata object), laid out as the package doc describes. It
// returns an error if a tensor is invalid (Tensor's invariant), a name is
// empty, repeated or MetadataKey, or a string is not valid UTF-8.
func Encode(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	ts := slices.Clone(tensors)
	seen := make(map[string]bool, len(ts))
	for _, t := range ts {
		switch {
		case t.Name == "" || t.Name == MetadataKey:
			return nil, fmt.Errorf("safetensors: invalid tensor name %q", t.Name)
		case seen[t.Name]:
			return nil, fmt.Errorf("safetensors: tensor %q twice", t.Name)
		case !utf8.ValidString(t.Name):
			return nil, fmt.Errorf("safetensors: tensor name %q is not UTF-8", t.Name)
		}
		seen[t.Name] = true
		if err := t.check(); err != nil {
			return nil, fmt.Errorf("safetensors: %w", err)
		}
	}
	slices.SortStableFunc(ts, func(a, b Tensor) int {
		if c := b.DType.rank() - a.DType.rank(); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var h bytes.Buffer
	h.WriteByte('{')
	if len(metadata) > 0 {
		h.WriteString(`"` + MetadataKey + `":{`)
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if !utf8.ValidString(k) || !utf8.ValidString(metadata[k]) {
				return nil, fmt.Errorf("safetensors: metadata %q is not UTF-8", k)
			}
			if i > 0 {
				h.WriteByte(',')
			}
			writeString(&h, k)
			h.WriteByte(':')
			writeString(&h, metadata[k])
		}
		h.WriteByte('}')
	}
	var off int64
	for i, t := range ts {
		if i > 0 || len(metadata) > 0 {
			h.WriteByte(',')
		}
		writeString(&h, t.Name)
		h.WriteString(`:{"dtype":"` + string(t.DType) + `","shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.FormatInt(d, 10))
		}
		end := off + int64(len(t.Data))
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, off, end)
		off = end
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}
	out := make([]byte, 8, 8+int64(h.Len())+off)
	binary.LittleEndian.PutUint64(out, uint64(h.Len()))
	out = append(out, h.Bytes()...)
	for _, t := range ts {
		out = append(out, t.Data...)
	}
	return out, nil
}

// writeString writes s as a JSON string the way serde_json does: '"' and
// '\' escaped, control characters as \b, \t, \n, \f, \r or \u00xx, all
// else (non-ASCII included) as is.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\f':
			b.WriteString(`\f`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20:
			fmt.Fprintf(b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}

// Write writes the file of tensors and metadata (Encode) to w.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	b, err := Encode(tensors, metadata)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// entry is a tensor's header entry.
type entry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// Decode parses the safetensors file b; path names it in errors, all of
// which wrap ErrFormat. The tensors' Data alias b.
func Decode(b []byte, path string) (*File, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrFormat, path, fmt.Sprintf(format, args...))
	}
	if len(b) < 8 {
		return nil, bad("%d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	switch {
	case n > MaxHeader:
		return nil, bad("header length %d exceeds the limit %d", n, MaxHeader)
	case n > uint64(len(b)-8):
		return nil, bad("header length %d runs past the end of the file (%d bytes)", n, len(b))
	case n < 2 || b[8] != '{':
		return nil, bad("header does not start with '{'")
	}
	hdr, data := b[8:8+n], b[8+n:]
	if !utf8.Valid(hdr) {
		return nil, bad("header is not UTF-8")
	}
	f := &File{}
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, bad("header JSON: %v", err)
	}
	seen := map[string]bool{}
	type located struct {
		name string
		e    entry
	}
	var ents []located
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, bad("header JSON: %v", err)
		}
		name := tok.(string) // an object's keys are strings
		if seen[name] {
			return nil, bad("tensor %q twice in the header", name)
		}
		seen[name] = true
		if name == MetadataKey {
			if err := dec.Decode(&f.Metadata); err != nil {
				return nil, bad("metadata: want an object of strings: %v", err)
			}
			continue
		}
		var e entry
		if err := dec.Decode(&e); err != nil {
			return nil, bad("tensor %q: %v", name, err)
		}
		ents = append(ents, located{name, e})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, bad("header JSON: %v", err)
	}
	if rest := bytes.TrimRight(hdr[dec.InputOffset():], " "); len(rest) != 0 {
		return nil, bad("header has %d bytes after its JSON object", len(rest))
	}
	for _, l := range ents {
		if len(l.e.DataOffsets) != 2 {
			return nil, bad("tensor %q: data_offsets %v, want [begin, end]", l.name, l.e.DataOffsets)
		}
	}
	slices.SortStableFunc(ents, func(a, b located) int {
		return cmpInt(a.e.DataOffsets[0], b.e.DataOffsets[0])
	})
	var off int64
	for _, l := range ents {
		begin, end := l.e.DataOffsets[0], l.e.DataOffsets[1]
		switch {
		case begin != off && begin < off:
			return nil, bad("tensor %q: data_offsets [%d, %d] overlap the previous tensor, which ends at %d", l.name, begin, end, off)
		case begin != off:
			return nil, bad("tensor %q: data_offsets [%d, %d] leave a gap after %d", l.name, begin, end, off)
		case end < begin || end > int64(len(data)):
			return nil, bad("tensor %q: data_offsets [%d, %d] outside the data section of %d bytes", l.name, begin, end, len(data))
		}
		if l.e.Shape == nil {
			return nil, bad("tensor %q: no shape", l.name)
		}
		t := Tensor{Name: l.name, DType: l.e.DType, Shape: l.e.Shape, Data: data[begin:end:end]}
		if err := t.check(); err != nil {
			return nil, bad("%v", err)
		}
		f.Tensors = append(f.Tensors, t)
		off = end
	}
	if off != int64(len(data)) {
		return nil, bad("the tensors cover %d bytes of the data section's %d", off, len(data))
	}
	return f, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ReadFile reads and decodes the safetensors file at path (Decode).
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return Decode(b, path)
}
