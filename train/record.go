package train

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"gnnmpi/internal/atomicfile"
	"gnnmpi/internal/byteview"
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
	return encodeRawRecord(magic, h, arrays...)
}

// encodeRawRecord is encodeRecord with the header already in JSON.
func encodeRawRecord(magic string, h json.RawMessage, arrays ...[]float32) ([]byte, error) {
	// One buffer of the record's size, the arrays converted in place: a
	// bytes.Buffer and binary.Write copied the model's state three times
	// more (binary.Write's own slice, the buffer's growth).
	n := len(magic) + 8 + len(h) + 4
	for _, a := range arrays {
		n += 4 * len(a)
	}
	b := make([]byte, 0, n)
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(h)))
	b = append(b, h...)
	for _, a := range arrays {
		if byteview.LittleEndian {
			b = append(b, byteview.Of(a)...)
			continue
		}
		for _, v := range a {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// writeRecordFile writes the record encodeRawRecord makes to path atomically
// (internal/atomicfile, the directory created), streaming the arrays'
// memory to the file (byteview) with the checksum updated as they go: no
// copy of them is made on a little-endian host.
func writeRecordFile(path, magic string, h json.RawMessage, arrays ...[]float32) error {
	if !byteview.LittleEndian {
		b, err := encodeRawRecord(magic, h, arrays...)
		if err != nil {
			return err
		}
		return writeCheckpointFile(path, b)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	var sum uint32
	w := bufio.NewWriterSize(f, 1<<20)
	put := func(b []byte) error {
		sum = crc32.Update(sum, castagnoli, b)
		_, err := w.Write(b)
		return err
	}
	head := binary.LittleEndian.AppendUint64([]byte(magic), uint64(len(h)))
	err = errors.Join(put(head), put(h))
	for _, a := range arrays {
		if err == nil {
			err = put(byteview.Of(a))
		}
	}
	if err == nil {
		_, err = w.Write(binary.LittleEndian.AppendUint32(nil, sum))
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Commit()
	} else {
		f.Abort()
	}
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	return nil
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
