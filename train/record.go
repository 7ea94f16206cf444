package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
)

// The checkpoint record: the one file layout of both checkpoints, the
// minibatch one (checkpointMagic, Run) and every rank's file of the
// full-graph one (fullMagic, RunFull). A record is its kind's magic (which
// carries the format version), the JSON header, float32 arrays whose
// lengths the header records, and a CRC-32C of all of it.

// castagnoli is the CRC-32C table of records and of the data identities.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeRecord serialises a checkpoint file: magic, the header's length
// (uint64), the JSON header, the arrays (float32, little endian, one after
// the other; the header records their lengths), and a CRC-32C of
// everything before it.
func encodeRecord(magic string, header any, arrays ...[]float32) ([]byte, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(magic)
	_ = binary.Write(&buf, binary.LittleEndian, uint64(len(h)))
	buf.Write(h)
	for _, a := range arrays {
		_ = binary.Write(&buf, binary.LittleEndian, a)
	}
	_ = binary.Write(&buf, binary.LittleEndian, crc32.Checksum(buf.Bytes(), castagnoli))
	return buf.Bytes(), nil
}

// decodeRecord parses what encodeRecord wrote: it checks the magic and the
// checksum, decodes the JSON header into header, and returns the arrays
// whose lengths sizes reads from the decoded header. path names the file
// in errors.
func decodeRecord(b []byte, path, magic string, header any, sizes func() []int) ([][]float32, error) {
	bad := func(msg string) error { return fmt.Errorf("train: checkpoint %s: %s", path, msg) }
	if len(b) < len(magic)+12 || string(b[:len(magic)]) != magic {
		return nil, bad("not a gnnmpi checkpoint (bad magic)")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, bad("checksum mismatch (truncated or corrupted)")
	}
	r := bytes.NewReader(body[len(magic):])
	var hl uint64
	if err := binary.Read(r, binary.LittleEndian, &hl); err != nil || hl > uint64(r.Len()) {
		return nil, bad("bad header length")
	}
	h := make([]byte, hl)
	_, _ = io.ReadFull(r, h)
	if err := json.Unmarshal(h, header); err != nil {
		return nil, bad("header: " + err.Error())
	}
	lens := sizes()
	var n int64
	for _, l := range lens {
		if l < 0 {
			return nil, bad(fmt.Sprintf("header promises %d floats", l))
		}
		n += int64(l)
	}
	if n*4 != int64(r.Len()) {
		return nil, bad(fmt.Sprintf("header promises %d floats, file holds %d bytes", n, r.Len()))
	}
	all := make([]float32, n)
	_ = binary.Read(r, binary.LittleEndian, all)
	out := make([][]float32, len(lens))
	off := 0
	for i, l := range lens {
		out[i] = all[off : off+l : off+l]
		off += l
	}
	return out, nil
}
