package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckpointRoundTrip(t *testing.T) {
	ck := &checkpoint{
		Header:  ckptHeader{Fingerprint: "fp", Epoch: 7, Seed: 3, Ranks: 2, ckptRecord: ckptRecord{BestEpoch: 5, BestVal: 0.8, BestTest: 0.79, History: []EpochStats{{Epoch: 1, Loss: 1.5}}}},
		Weights: []float32{1, -2, 3.5}, Opt: []float32{0.25, 9}, Best: []float32{4, 5, 6},
	}
	b, err := ck.encode()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "ck", CheckpointFile)
	require.NoError(t, writeCheckpointFile(path, b))
	got, err := readCheckpoint(path)
	require.NoError(t, err)
	requireSameCheckpoint(t, ck, got)
	// No temporary file is left behind.
	ents, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, ents, 1)

	// Overwriting replaces the file whole.
	ck.Header.Epoch = 8
	b2, err := ck.encode()
	require.NoError(t, err)
	require.NoError(t, writeCheckpointFile(path, b2))
	got, err = readCheckpoint(path)
	require.NoError(t, err)
	require.Equal(t, 8, got.Header.Epoch)
}

func TestCheckpointCorruptionIsReported(t *testing.T) {
	ck := &checkpoint{Header: ckptHeader{Epoch: 1}, Weights: []float32{1, 2}}
	b, err := ck.encode()
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", b[:len(b)-3], "checksum"},
		{"flipped", func() []byte { c := append([]byte(nil), b...); c[len(c)-7] ^= 1; return c }(), "checksum"},
		{"not a checkpoint", []byte("hello world, this is not it"), "bad magic"},
		{"empty", nil, "bad magic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeCheckpoint(tc.data, "x.bin")
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "x.bin")
		})
	}
	_, err = readCheckpoint(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// The loop's record, embedded in both kinds of header, keeps its fields'
// place in the JSON object, so that files stay byte-identical to those
// written when the headers spelled the fields out.
func TestCheckpointHeaderJSON(t *testing.T) {
	r := ckptRecord{BestEpoch: 5, BestVal: 0.5, BestTest: 0.25, History: []EpochStats{}}
	b, err := json.Marshal(ckptHeader{Fingerprint: "fp", Epoch: 7, Seed: 3, Ranks: 2, ckptRecord: r, Weights: 1, Opt: 2, Best: 3})
	require.NoError(t, err)
	require.Equal(t, `{"fingerprint":"fp","epoch":7,"seed":3,"ranks":2,"best_epoch":5,"best_val_acc":0.5,"best_test_acc":0.25,"history":[],"weights":1,"opt":2,"best":3}`, string(b))
	b, err = json.Marshal(rankHeader{Fingerprint: "fp", Epoch: 7, Rank: 1, Ranks: 2, Stage: 1, Pipeline: 0, ckptRecord: r, Weights: 1, Opt: 2, Hist: 3, HistGrad: 4, Snap: 5})
	require.NoError(t, err)
	require.Equal(t, `{"fingerprint":"fp","epoch":7,"rank":1,"ranks":2,"stage":1,"pipeline":0,"best_epoch":5,"best_val_acc":0.5,"best_test_acc":0.25,"history":[],"weights":1,"opt":2,"hist":3,"hist_grad":4,"snap":5}`, string(b))

	rec := record{history: r.History, bestEpoch: 5, bestVal: 0.5, bestTest: 0.25}
	require.Equal(t, r, ckptRecordOf(&rec))
	require.Equal(t, rec, r.record())
}

// writeRecordFile streams the bytes encodeRecord makes, and a checkpoint
// written by the background writer reads back as it was.
func TestWriteRecordFileMatchesEncode(t *testing.T) {
	ck := &checkpoint{Header: ckptHeader{Epoch: 3, Step: 2, Partial: []float64{1, 2, 3}, Seed: 7, Ranks: 2},
		Weights: []float32{1, -2.5, 3}, Opt: []float32{1, 0, 0, 0, 0.5, 0.25}, Best: []float32{9}}
	want, err := ck.encode()
	require.NoError(t, err)
	magic, h, err := ck.header()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sub", CheckpointFile)
	require.NoError(t, writeRecordFile(path, magic, h, ck.Weights, ck.Opt, ck.Best))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, want, got)

	var w ckptWriter
	path2 := filepath.Join(t.TempDir(), CheckpointFile)
	require.NoError(t, w.start(path2, ck))
	require.NoError(t, w.wait())
	back, err := readCheckpoint(path2)
	require.NoError(t, err)
	requireSameCheckpoint(t, ck, back)
}

// requireSameCheckpoint requires that got holds want's header and arrays.
func requireSameCheckpoint(t *testing.T, want, got *checkpoint) {
	t.Helper()
	require.Equal(t, want.Header, got.Header)
	require.Equal(t, want.Weights, got.Weights)
	require.Equal(t, want.Opt, got.Opt)
	require.Equal(t, want.Best, got.Best)
}
