package train

import (
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
)

// checkpointMagic starts every checkpoint file.
const checkpointMagic = "GNNMPI-CKPT-1\n"

// CheckpointFile is the checkpoint's name inside the checkpoint directory.
const CheckpointFile = "checkpoint.bin"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkpoint is the state a run needs to continue exactly where it was.
// Random streams are keyed by (seed, epoch, step, rank), so the epoch is
// the whole random state.
type checkpoint struct {
	Header  ckptHeader
	Weights []float32 // model parameters, Model.FlattenWeights order
	Opt     []float32 // optimizer state
	Best    []float32 // parameters of the best-validation epoch (may be empty)
}

type ckptHeader struct {
	Fingerprint string       `json:"fingerprint"` // the settings that must match to resume
	Epoch       int          `json:"epoch"`       // last completed epoch
	Seed        uint64       `json:"seed"`
	Ranks       int          `json:"ranks"`
	BestEpoch   int          `json:"best_epoch"`
	BestVal     float64      `json:"best_val_acc"`
	BestTest    float64      `json:"best_test_acc"`
	History     []EpochStats `json:"history"`
	Weights     int          `json:"weights"`
	Opt         int          `json:"opt"`
	Best        int          `json:"best"`
}

// encode serialises ck: magic, header length, JSON header, the three
// float32 arrays (little endian), and a CRC-32C of everything before it.
func (ck *checkpoint) encode() ([]byte, error) {
	ck.Header.Weights, ck.Header.Opt, ck.Header.Best = len(ck.Weights), len(ck.Opt), len(ck.Best)
	h, err := json.Marshal(ck.Header)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(checkpointMagic)
	_ = binary.Write(&buf, binary.LittleEndian, uint64(len(h)))
	buf.Write(h)
	for _, a := range [][]float32{ck.Weights, ck.Opt, ck.Best} {
		_ = binary.Write(&buf, binary.LittleEndian, a)
	}
	_ = binary.Write(&buf, binary.LittleEndian, crc32.Checksum(buf.Bytes(), castagnoli))
	return buf.Bytes(), nil
}

// decodeCheckpoint parses what encode wrote; path names the file in errors.
func decodeCheckpoint(b []byte, path string) (*checkpoint, error) {
	bad := func(msg string) error { return fmt.Errorf("train: checkpoint %s: %s", path, msg) }
	if len(b) < len(checkpointMagic)+12 || string(b[:len(checkpointMagic)]) != checkpointMagic {
		return nil, bad("not a gnnmpi checkpoint (bad magic)")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, bad("checksum mismatch (truncated or corrupted)")
	}
	r := bytes.NewReader(body[len(checkpointMagic):])
	var hl uint64
	if err := binary.Read(r, binary.LittleEndian, &hl); err != nil || hl > uint64(r.Len()) {
		return nil, bad("bad header length")
	}
	h := make([]byte, hl)
	_, _ = io.ReadFull(r, h)
	ck := &checkpoint{}
	if err := json.Unmarshal(h, &ck.Header); err != nil {
		return nil, bad("header: " + err.Error())
	}
	n := ck.Header.Weights + ck.Header.Opt + ck.Header.Best
	if ck.Header.Weights < 0 || ck.Header.Opt < 0 || ck.Header.Best < 0 || int64(n)*4 != int64(r.Len()) {
		return nil, bad(fmt.Sprintf("header promises %d floats, file holds %d bytes", n, r.Len()))
	}
	all := make([]float32, n)
	_ = binary.Read(r, binary.LittleEndian, all)
	ck.Weights = all[:ck.Header.Weights:ck.Header.Weights]
	ck.Opt = all[ck.Header.Weights : ck.Header.Weights+ck.Header.Opt : ck.Header.Weights+ck.Header.Opt]
	ck.Best = all[ck.Header.Weights+ck.Header.Opt:]
	return ck, nil
}

// writeAtomic writes data to path through a temporary file in the same
// directory, synced and renamed over path, then syncs the directory: a
// crash leaves either the old file or the new one, never a torn one.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("train: checkpoint %s: %w", f.Name(), err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("train: checkpoint %s: %w", f.Name(), err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("train: checkpoint %s: %w", f.Name(), err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// readCheckpoint reads the checkpoint at path; a missing file is reported
// with os.ErrNotExist.
func readCheckpoint(path string) (*checkpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("train: no checkpoint to resume from: %w", err)
		}
		return nil, fmt.Errorf("train: %w", err)
	}
	return decodeCheckpoint(b, path)
}

// finite reports whether every value is finite (a diverged run is not
// checkpointed over a good one).
func finite(x []float32) bool {
	for _, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return false
		}
	}
	return true
}
