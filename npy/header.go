package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Magic is the first six bytes of every .npy file.
const Magic = "\x93NUMPY"

// maxHeaderLen bounds the header dictionary a reader accepts. NumPy
// itself refuses headers above 10000 bytes unless told otherwise; a
// version 2.0 or 3.0 header may declare up to 4 GiB, which must not be
// allocated on the word of a damaged file.
const maxHeaderLen = 1 << 20

// maxDims bounds the number of dimensions (NumPy's NPY_MAXDIMS is 64).
const maxDims = 64

// Kind is the kind of a dtype's elements.
type Kind uint8

// The element kinds this package reads and writes.
const (
	Bool  Kind = iota + 1 // numpy.bool_ ('b1'), one byte 0 or 1
	Int                   // signed integers ('i1', 'i2', 'i4', 'i8')
	Uint                  // unsigned integers ('u1', 'u2', 'u4', 'u8')
	Float                 // IEEE 754 floats ('f2', 'f4', 'f8')
)

// DType is the element type of an array: its kind, its size in bytes and
// its byte order. The zero value is invalid.
type DType struct {
	Kind      Kind
	Size      int  // bytes per element: 1, 2, 4 or 8
	BigEndian bool // byte order of multi-byte elements
}

// The little-endian dtypes that NumPy writes on common machines.
var (
	BoolType    = DType{Kind: Bool, Size: 1}
	Int8Type    = DType{Kind: Int, Size: 1}
	Int16Type   = DType{Kind: Int, Size: 2}
	Int32Type   = DType{Kind: Int, Size: 4}
	Int64Type   = DType{Kind: Int, Size: 8}
	Uint8Type   = DType{Kind: Uint, Size: 1}
	Uint16Type  = DType{Kind: Uint, Size: 2}
	Uint32Type  = DType{Kind: Uint, Size: 4}
	Uint64Type  = DType{Kind: Uint, Size: 8}
	Float16Type = DType{Kind: Float, Size: 2}
	Float32Type = DType{Kind: Float, Size: 4}
	Float64Type = DType{Kind: Float, Size: 8}
)

// ParseDType parses a NumPy dtype string (a header's 'descr') such as
// "<f4", ">i8", "|b1" or "|u1". The byte order is '<' (little), '>'
// (big), '|' (not applicable: one-byte types) or '=' (native, taken as
// little-endian, the byte order of every machine gnnmpi runs on).
// Object, string, complex, datetime and structured dtypes are errors.
func ParseDType(descr string) (DType, error) {
	if len(descr) >= 2 && descr[1] == 'O' {
		return DType{}, fmt.Errorf("dtype %q: object arrays (pickled Python objects) are not supported", descr)
	}
	if len(descr) < 3 {
		return DType{}, fmt.Errorf("dtype %q: want a byte order, a kind and a size, like '<f4'", descr)
	}
	var d DType
	switch descr[0] {
	case '<', '|', '=':
	case '>':
		d.BigEndian = true
	default:
		return DType{}, fmt.Errorf("dtype %q: unknown byte order %q", descr, descr[0])
	}
	size, err := strconv.Atoi(descr[2:])
	if err != nil {
		return DType{}, fmt.Errorf("dtype %q: malformed size", descr)
	}
	switch descr[1] {
	case 'b':
		d.Kind = Bool
	case 'i':
		d.Kind = Int
	case 'u':
		d.Kind = Uint
	case 'f':
		d.Kind = Float
	case 'O':
		return DType{}, fmt.Errorf("dtype %q: object arrays (pickled Python objects) are not supported", descr)
	default:
		return DType{}, fmt.Errorf("dtype %q: unsupported kind %q (want b, i, u or f)", descr, descr[1])
	}
	d.Size = size
	if !d.valid() {
		return DType{}, fmt.Errorf("dtype %q: unsupported size %d for kind %q", descr, size, descr[1])
	}
	if d.Size == 1 {
		d.BigEndian = false
	}
	return d, nil
}

// valid reports whether d is a dtype this package handles.
func (d DType) valid() bool {
	switch d.Kind {
	case Bool:
		return d.Size == 1
	case Int, Uint:
		return d.Size == 1 || d.Size == 2 || d.Size == 4 || d.Size == 8
	case Float:
		return d.Size == 2 || d.Size == 4 || d.Size == 8
	}
	return false
}

// String returns d as a NumPy dtype string, such as "<f4" or "|b1".
func (d DType) String() string {
	if !d.valid() {
		return fmt.Sprintf("invalid dtype {%d %d}", d.Kind, d.Size)
	}
	order := byte('<')
	switch {
	case d.Size == 1:
		order = '|'
	case d.BigEndian:
		order = '>'
	}
	return fmt.Sprintf("%c%c%d", order, "?biuf"[d.Kind], d.Size)
}

// Header is the description of an array that precedes its data in a .npy
// file.
type Header struct {
	// Version is the format version, {1, 0}, {2, 0} or {3, 0}: 1.0 has a
	// 2-byte header length, 2.0 a 4-byte one, 3.0 a 4-byte one and a
	// UTF-8 (rather than Latin-1) header.
	Version [2]byte
	DType   DType
	// Fortran says the data is stored in column-major (Fortran) order:
	// the first index varies fastest. Otherwise it is row-major (C).
	Fortran bool
	// Shape is the array's dimensions; empty for a scalar (one element).
	Shape []int64
	// DataOffset is the offset of the data from the start of the .npy
	// stream: the length of the magic, version, length and dictionary.
	DataOffset int64
}

// Len returns the number of elements, the product of Shape (1 for a
// scalar). The shapes ParseHeader accepts have a product below 2⁶³.
func (h *Header) Len() int64 {
	n := int64(1)
	for _, s := range h.Shape {
		n *= s
	}
	return n
}

// DataBytes returns the size of the data in bytes, Len·DType.Size.
func (h *Header) DataBytes() int64 { return h.Len() * int64(h.DType.Size) }

// Rows returns the first dimension: the number of rows along the first
// axis (1 for a scalar).
func (h *Header) Rows() int64 {
	if len(h.Shape) == 0 {
		return 1
	}
	return h.Shape[0]
}

// RowLen returns the number of elements in one row along the first axis:
// the product of Shape[1:] (1 for a 0- or 1-dimensional array).
func (h *Header) RowLen() int64 {
	n := int64(1)
	for i := 1; i < len(h.Shape); i++ {
		n *= h.Shape[i]
	}
	return n
}

// ShapeString returns the shape as NumPy prints it, such as "(3, 4)" or
// "(5,)".
func ShapeString(shape []int64) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, s := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(s, 10))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}

// ParsePrefix parses the fixed prefix of a .npy stream (the magic, the
// version and the header length; 10 or 12 bytes) from the start of b. It
// returns the version and the offset and length of the header dictionary.
// An error says what is wrong: b too short (wrapping ErrTruncated), not
// .npy, or an unsupported version.
func ParsePrefix(b []byte) (version [2]byte, start, n int, err error) {
	if len(b) < 10 {
		if !bytes.HasPrefix([]byte(Magic), b[:min(len(b), len(Magic))]) {
			return version, 0, 0, formatf("not a .npy file (no magic %q)", Magic)
		}
		return version, 0, 0, fmt.Errorf("%w: %d bytes, too short for the .npy prefix", ErrTruncated, len(b))
	}
	if string(b[:6]) != Magic {
		return version, 0, 0, formatf("not a .npy file (no magic %q)", Magic)
	}
	version = [2]byte{b[6], b[7]}
	switch version {
	case [2]byte{1, 0}:
		return version, 10, int(binary.LittleEndian.Uint16(b[8:10])), nil
	case [2]byte{2, 0}, [2]byte{3, 0}:
		if len(b) < 12 {
			return version, 0, 0, fmt.Errorf("%w: %d bytes, too short for the .npy %d.%d prefix", ErrTruncated, len(b), b[6], b[7])
		}
		l := binary.LittleEndian.Uint32(b[8:12])
		if l > maxHeaderLen {
			return version, 0, 0, formatf("header length %d exceeds the limit of %d", l, maxHeaderLen)
		}
		return version, 12, int(l), nil
	}
	return version, 0, 0, formatf("unsupported format version %d.%d (want 1.0, 2.0 or 3.0)", b[6], b[7])
}

// ParseHeader parses a whole .npy header (prefix and dictionary) from the
// start of b; b may continue with the data. The dictionary is the Python
// literal NumPy writes, such as
//
//	{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
//
// with exactly the keys descr, fortran_order and shape. Structured and
// object dtypes, negative dimensions and shapes of 2⁶³ bytes or more are
// errors. ParseHeader never panics and allocates at most O(len(b)).
func ParseHeader(b []byte) (Header, error) {
	version, start, n, err := ParsePrefix(b)
	if err != nil {
		return Header{}, err
	}
	if len(b) < start+n {
		return Header{}, fmt.Errorf("%w: the header declares %d bytes, %d present", ErrTruncated, n, len(b)-start)
	}
	h, err := parseDict(b[start : start+n])
	if err != nil {
		return Header{}, formatf("%v", err)
	}
	h.Version = version
	h.DataOffset = int64(start + n)
	return h, nil
}

// parseDict parses the header dictionary.
func parseDict(b []byte) (Header, error) {
	p := &lit{s: b}
	var h Header
	var seen [3]bool
	p.space()
	if !p.eat('{') {
		return h, errors.New("header is not a dict")
	}
	for {
		p.space()
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		p.space()
		if !p.eat(':') {
			return h, fmt.Errorf("no ':' after key %q", key)
		}
		p.space()
		switch key {
		case "descr":
			if p.peek() == '[' {
				return h, errors.New("structured dtypes are not supported")
			}
			s, err := p.str()
			if err != nil {
				return h, fmt.Errorf("descr: %v", err)
			}
			if h.DType, err = ParseDType(s); err != nil {
				return h, err
			}
			seen[0] = true
		case "fortran_order":
			switch {
			case p.word("True"):
				h.Fortran = true
			case p.word("False"):
			default:
				return h, errors.New("fortran_order is neither True nor False")
			}
			seen[1] = true
		case "shape":
			if h.Shape, err = p.shape(); err != nil {
				return h, err
			}
			seen[2] = true
		default:
			return h, fmt.Errorf("unexpected key %q", key)
		}
		p.space()
		if p.eat('}') {
			break
		}
		if !p.eat(',') {
			return h, fmt.Errorf("no ',' or '}' after the value of %q", key)
		}
	}
	for i, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[i] {
			return h, fmt.Errorf("missing key %q", k)
		}
	}
	p.space()
	if p.i != len(p.s) {
		return h, fmt.Errorf("unexpected %q after the dict", p.s[p.i:min(len(p.s), p.i+16)])
	}
	// The byte count must fit an int64.
	n := int64(h.DType.Size)
	for _, s := range h.Shape {
		if s != 0 && n > math.MaxInt64/s {
			return h, fmt.Errorf("shape %s of %s is 2⁶³ bytes or more", ShapeString(h.Shape), h.DType)
		}
		n *= s
	}
	return h, nil
}

// lit is a cursor over the Python literal of a header dictionary.
type lit struct {
	s []byte
	i int
}

func (p *lit) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// space skips white space (NumPy pads with spaces and ends with '\n').
func (p *lit) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t' || p.s[p.i] == '\r') {
		p.i++
	}
}

func (p *lit) eat(c byte) bool {
	if p.peek() == c {
		p.i++
		return true
	}
	return false
}

// word consumes w if it comes next as a whole word.
func (p *lit) word(w string) bool {
	if !bytes.HasPrefix(p.s[p.i:], []byte(w)) {
		return false
	}
	if j := p.i + len(w); j < len(p.s) && (isDigit(p.s[j]) || p.s[j] >= 'A' && p.s[j] <= 'z') {
		return false
	}
	p.i += len(w)
	return true
}

// str parses a quoted string without escapes ('…' or "…").
func (p *lit) str() (string, error) {
	q := p.peek()
	if q != '\'' && q != '"' {
		return "", fmt.Errorf("want a quoted string at offset %d", p.i)
	}
	j := bytes.IndexByte(p.s[p.i+1:], q)
	if j < 0 {
		return "", errors.New("unterminated string")
	}
	s := p.s[p.i+1 : p.i+1+j]
	if bytes.IndexByte(s, '\\') >= 0 {
		return "", errors.New("escapes in strings are not supported")
	}
	p.i += j + 2
	return string(s), nil
}

// shape parses a tuple of non-negative integers: (), (n,), (n, m), ….
// Python 2 wrote a long suffix 'L', which is accepted.
func (p *lit) shape() ([]int64, error) {
	if !p.eat('(') {
		return nil, errors.New("shape is not a tuple")
	}
	shape := []int64{}
	for {
		p.space()
		if p.eat(')') {
			return shape, nil
		}
		j := p.i
		for j < len(p.s) && isDigit(p.s[j]) {
			j++
		}
		if j == p.i {
			return nil, fmt.Errorf("shape: want a non-negative integer at offset %d", p.i)
		}
		v, err := strconv.ParseInt(string(p.s[p.i:j]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("shape: dimension %s out of range", p.s[p.i:j])
		}
		if len(shape) == maxDims {
			return nil, fmt.Errorf("shape: more than %d dimensions", maxDims)
		}
		shape = append(shape, v)
		p.i = j
		if p.peek() == 'L' {
			p.i++
		}
		p.space()
		if p.eat(')') {
			return shape, nil // (n) without a comma is accepted too
		}
		if !p.eat(',') {
			return nil, fmt.Errorf("shape: want ',' or ')' at offset %d", p.i)
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// EncodeHeader returns the .npy header of an array of dtype d and the
// given shape in C order: version 1.0 when the dictionary fits its 2-byte
// length, else 2.0, padded with spaces and a final '\n' so that the data
// starts at a multiple of 64 bytes, as NumPy writes it. It panics on an
// invalid dtype or a negative dimension.
func EncodeHeader(d DType, shape []int64) []byte {
	if !d.valid() {
		panic("npy: invalid dtype")
	}
	var dict bytes.Buffer
	fmt.Fprintf(&dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", d, ShapeString(shape))
	for _, s := range shape {
		if s < 0 {
			panic("npy: negative dimension")
		}
	}
	for _, v := range []struct {
		version byte
		prefix  int
		limit   int
	}{{1, 10, math.MaxUint16}, {2, 12, math.MaxUint32}} {
		total := v.prefix + dict.Len() + 1
		total = (total + 63) / 64 * 64
		n := total - v.prefix
		if n > v.limit {
			continue
		}
		out := make([]byte, 0, total)
		out = append(out, Magic...)
		out = append(out, v.version, 0)
		if v.prefix == 10 {
			out = binary.LittleEndian.AppendUint16(out, uint16(n))
		} else {
			out = binary.LittleEndian.AppendUint32(out, uint32(n))
		}
		out = append(out, dict.Bytes()...)
		for len(out) < total-1 {
			out = append(out, ' ')
		}
		return append(out, '\n')
	}
	panic("npy: header too long")
}
