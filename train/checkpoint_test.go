package train

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckpointRoundTrip(t *testing.T) {
	ck := &checkpoint{
		Header:  ckptHeader{Fingerprint: "fp", Epoch: 7, Seed: 3, Ranks: 2, BestEpoch: 5, BestVal: 0.8, BestTest: 0.79, History: []EpochStats{{Epoch: 1, Loss: 1.5}}},
		Weights: []float32{1, -2, 3.5}, Opt: []float32{0.25, 9}, Best: []float32{4, 5, 6},
	}
	b, err := ck.encode()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "ck", CheckpointFile)
	require.NoError(t, writeCheckpointFile(path, b))
	got, err := readCheckpoint(path)
	require.NoError(t, err)
	require.Equal(t, ck.Header, got.Header)
	require.Equal(t, ck.Weights, got.Weights)
	require.Equal(t, ck.Opt, got.Opt)
	require.Equal(t, ck.Best, got.Best)
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
