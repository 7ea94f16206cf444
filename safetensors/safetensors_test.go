package safetensors

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEncodeFixture checks Encode byte for byte against a file laid out by
// hand from the format's description: an I64 tensor sorts before an F32
// one (wider dtype first) whatever the names, the metadata comes first,
// and the 139-byte header is padded with 5 spaces to 144.
func TestEncodeFixture(t *testing.T) {
	i64 := Tensor{Name: "a", DType: I64, Shape: []int64{1}, Data: []byte{3, 0, 0, 0, 0, 0, 0, 0}}
	f32 := FromFloat32("b", []int64{2}, []float32{1, -2})
	got, err := Encode([]Tensor{f32, i64}, map[string]string{"format": "pt"})
	require.NoError(t, err)

	hdr := `{"__metadata__":{"format":"pt"},` +
		`"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},` +
		`"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}` + "     "
	want := []byte{144, 0, 0, 0, 0, 0, 0, 0}
	want = append(want, hdr...)
	want = append(want, 3, 0, 0, 0, 0, 0, 0, 0) // int64 3
	want = append(want, 0, 0, 0x80, 0x3f)       // float32 1
	want = append(want, 0, 0, 0, 0xc0)          // float32 -2
	assert.Equal(t, string(want), string(got))
}

// TestRoundTrip encodes tensors of several dtypes and shapes (a scalar, an
// empty tensor) with metadata and decodes them back.
func TestRoundTrip(t *testing.T) {
	tensors := []Tensor{
		FromFloat32("convs.0.lin_l.weight", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
		FromFloat32("convs.0.lin_l.bias", []int64{2}, []float32{-1, 0.5}),
		{Name: "scalar", DType: F64, Shape: []int64{}, Data: []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}},
		{Name: "empty", DType: F16, Shape: []int64{0, 4}, Data: []byte{}},
		{Name: "flags", DType: Bool, Shape: []int64{3}, Data: []byte{1, 0, 1}},
		{Name: "h", DType: BF16, Shape: []int64{1}, Data: []byte{0x80, 0x3f}},
	}
	meta := map[string]string{"model": "sage", "quote\"and\nnewline": "ünïcode\x01"}
	b, err := Encode(tensors, meta)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(b)
	assert.Zero(t, (8+n)%8, "the data section starts aligned")

	path := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	f, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, meta, f.Metadata)
	require.Len(t, f.Tensors, len(tensors))
	for _, want := range tensors {
		got, ok := f.Tensor(want.Name)
		require.True(t, ok, want.Name)
		assert.Equal(t, want.DType, got.DType, want.Name)
		assert.Equal(t, want.Shape, got.Shape, want.Name)
		assert.Equal(t, want.Data, got.Data, want.Name)
	}
	w, err := mustTensor(t, f, "convs.0.lin_l.weight").Float32()
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, 3, 4, 5, 6}, w)
	_, err = mustTensor(t, f, "flags").Float32()
	assert.Error(t, err)

	// Encoding what was decoded gives the same bytes.
	again, err := Encode(f.Tensors, f.Metadata)
	require.NoError(t, err)
	assert.Equal(t, b, again)
}

func mustTensor(t *testing.T, f *File, name string) Tensor {
	x, ok := f.Tensor(name)
	require.True(t, ok, name)
	return x
}

// TestEncodeRejects checks Encode's errors on invalid tensors.
func TestEncodeRejects(t *testing.T) {
	ok := FromFloat32("w", []int64{1}, []float32{1})
	for _, tc := range []struct {
		name    string
		tensors []Tensor
	}{
		{"empty name", []Tensor{{DType: U8, Shape: []int64{0}, Data: []byte{}}}},
		{"metadata key", []Tensor{{Name: MetadataKey, DType: U8, Shape: []int64{0}, Data: []byte{}}}},
		{"twice", []Tensor{ok, ok}},
		{"unknown dtype", []Tensor{{Name: "x", DType: "F8_E4M3", Shape: []int64{1}, Data: []byte{0}}}},
		{"size", []Tensor{{Name: "x", DType: F32, Shape: []int64{2}, Data: []byte{0, 0, 0, 0}}}},
		{"negative", []Tensor{{Name: "x", DType: U8, Shape: []int64{-1}, Data: []byte{}}}},
	} {
		_, err := Encode(tc.tensors, nil)
		assert.Error(t, err, tc.name)
	}
}

// file returns a safetensors file of header hdr (not padded) and data.
func file(hdr string, data ...byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	return append(append(b, hdr...), data...)
}

// TestDecodeRejects checks that Decode rejects malformed files with an
// error wrapping ErrFormat that names the file and, where one is at
// fault, the tensor.
func TestDecodeRejects(t *testing.T) {
	four := []byte{1, 2, 3, 4}
	huge := binary.LittleEndian.AppendUint64(nil, MaxHeader+1)
	for _, tc := range []struct {
		name, want string
		b          []byte
	}{
		{"short", "shorter than", []byte{1, 2}},
		{"header past end", "runs past the end", file(`{}`)[:9]},
		{"header too long", "exceeds the limit", append(huge, '{', '}')},
		{"not an object", "start with '{'", file(`[1]`)},
		{"bad JSON", `tensor "a"`, file(`{"a":`)},
		{"bad key", "header JSON", file(`{1:2}`)},
		{"trailing", "after its JSON object", file(`{} x`)},
		{"duplicate", `"a" twice`, file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, four...)},
		{"unknown dtype", `"a": unknown dtype`, file(`{"a":{"dtype":"X9","shape":[4],"data_offsets":[0,4]}}`, four...)},
		{"shape vs size", `"a": F32 shape [2]`, file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, four...)},
		{"negative shape", `"a": invalid shape`, file(`{"a":{"dtype":"U8","shape":[-4],"data_offsets":[0,4]}}`, four...)},
		{"no shape", `"a": no shape`, file(`{"a":{"dtype":"U8","data_offsets":[0,4]}}`, four...)},
		{"offsets arity", `"a": data_offsets`, file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[4]}}`, four...)},
		{"overlap", `"b": data_offsets [2, 4] overlap`, file(`{"a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}}`, four...)},
		{"gap", `"b": data_offsets [3, 4] leave a gap`, file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}}`, four...)},
		{"out of range", `"a": data_offsets [0, 8] outside`, file(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, four...)},
		{"reversed", `"a": data_offsets [0, -1] outside`, file(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,-1]}}`, four...)},
		{"uncovered", "cover 2 bytes of the data section's 4", file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, four...)},
		{"metadata not strings", "metadata", file(`{"__metadata__":{"k":1}}`)},
	} {
		_, err := Decode(tc.b, "bad.safetensors")
		require.Error(t, err, tc.name)
		assert.True(t, errors.Is(err, ErrFormat), tc.name)
		assert.Contains(t, err.Error(), "bad.safetensors", tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}

// TestDecodeOtherOrder checks that Decode takes tensors whose header
// entries are not in data order, as a writer other than the library's
// may leave them, and an empty file of tensors.
func TestDecodeOtherOrder(t *testing.T) {
	f, err := Decode(file(`{"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, 1, 2, 3, 4), "x")
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2}, mustTensor(t, f, "a").Data)
	assert.Equal(t, []byte{3, 4}, mustTensor(t, f, "b").Data)
	f, err = Decode(file(`{}      `), "x")
	require.NoError(t, err)
	assert.Empty(t, f.Tensors)
	assert.Nil(t, f.Metadata)
}
