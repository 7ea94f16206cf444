package train

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordHeader is a header for the record tests: its sizes of the arrays.
type recordHeader struct {
	Name  string `json:"name"`
	Sizes []int  `json:"sizes"`
}

// A record decodes to the header and arrays it was encoded from, under
// either kind's magic.
func TestRecordRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		magic  string
		arrays [][]float32
	}{
		{"minibatch", checkpointMagic, [][]float32{{1, 2.5}, {}, {-3}}},
		{"full-graph", fullMagic, [][]float32{{0.25}, {1, 2, 3, 4}, {}, {}, {5}}},
		{"no arrays", checkpointMagic, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := recordHeader{Name: tc.name}
			for _, a := range tc.arrays {
				h.Sizes = append(h.Sizes, len(a))
			}
			b, err := encodeRecord(tc.magic, h, tc.arrays...)
			require.NoError(t, err)
			require.Equal(t, tc.magic, string(b[:len(tc.magic)]))
			var got recordHeader
			arrays, err := decodeRecord(b, "f", tc.magic, &got, func() []int { return got.Sizes })
			require.NoError(t, err)
			assert.Equal(t, h, got)
			require.Len(t, arrays, len(tc.arrays))
			for i := range tc.arrays {
				assert.Equal(t, []float32(tc.arrays[i]), append([]float32{}, arrays[i]...), "array %d", i)
			}
		})
	}
}

// Every way a record can be damaged or foreign is an error naming the file.
func TestRecordErrors(t *testing.T) {
	good, err := encodeRecord(checkpointMagic, recordHeader{Sizes: []int{2}}, []float32{1, 2})
	require.NoError(t, err)
	// sealed returns magic, a header length, body and a correct CRC-32C.
	sealed := func(hl uint64, body string) []byte {
		b := []byte(checkpointMagic)
		b = binary.LittleEndian.AppendUint64(b, hl)
		b = append(b, body...)
		return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	}
	lying, err := encodeRecord(checkpointMagic, recordHeader{Sizes: []int{3}}, []float32{1, 2})
	require.NoError(t, err)
	negative, err := encodeRecord(checkpointMagic, recordHeader{Sizes: []int{-1}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		b     []byte
		magic string
		want  string
	}{
		{"other kind", good, fullMagic, "not a gnnmpi checkpoint (bad magic)"},
		{"empty", nil, checkpointMagic, "not a gnnmpi checkpoint (bad magic)"},
		{"flipped bit", func() []byte { b := append([]byte{}, good...); b[len(b)/2] ^= 1; return b }(), checkpointMagic, "checksum mismatch"},
		{"truncated", good[:len(good)-3], checkpointMagic, "checksum mismatch"},
		{"header longer than the file", sealed(1<<40, "{}"), checkpointMagic, "bad header length"},
		{"header not JSON", sealed(3, "{x}"), checkpointMagic, "header: "},
		{"more floats promised than held", lying, checkpointMagic, "header promises 3 floats, file holds 8 bytes"},
		{"negative size", negative, checkpointMagic, "header promises -1 floats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h recordHeader
			_, err := decodeRecord(tc.b, "ck.bin", tc.magic, &h, func() []int { return h.Sizes })
			require.ErrorContains(t, err, "train: checkpoint ck.bin: "+tc.want)
		})
	}
}
