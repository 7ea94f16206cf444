package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gnnmpi/collective"
	"gnnmpi/metrics"
	"gnnmpi/pipe"
)

// Full-graph checkpoints (RunFull) differ from minibatch ones (Run): every
// rank holds different state (its stage's weights and optimizer state, its
// part's historical embeddings), so every rank writes its own file, in the
// format of the minibatch checkpoint (magic, JSON header, float32 arrays,
// CRC-32C; written atomically), and rank 0 then commits the checkpoint by
// writing a manifest that names its epoch:
//
//  1. every rank writes FullRankFile(rank, epoch);
//  2. the ranks agree that all of them succeeded (agree);
//  3. rank 0 replaces FullManifestFile (atomically);
//  4. the ranks agree again, and each removes its files of other epochs.
//
// A crash at any point leaves a manifest naming an epoch whose files every
// rank completed: the files of the epoch being written never replace those
// the manifest names. Resume reads the manifest on rank 0 only and
// broadcasts its epoch, so a directory on node-local disks works as well as
// a shared one.

// FullManifestFile is the name, inside the checkpoint directory, of the
// manifest of a full-graph checkpoint.
const FullManifestFile = "manifest.json"

const (
	fullMagic  = "GNNMPI-RANK-1\n" // per-rank files; as long as checkpointMagic
	fullFormat = "gnnmpi-full-checkpoint-1"
)

// FullRankFile returns the name, inside the checkpoint directory, of rank's
// file of the full-graph checkpoint after epoch.
func FullRankFile(rank, epoch int) string {
	return fmt.Sprintf("checkpoint-rank%04d-epoch%06d.bin", rank, epoch)
}

// fullManifest commits a full-graph checkpoint: every rank's file of Epoch
// exists.
type fullManifest struct {
	Format      string   `json:"format"`
	Epoch       int      `json:"epoch"`
	Ranks       int      `json:"ranks"`
	Fingerprint string   `json:"fingerprint"`
	Files       []string `json:"files"`
}

// rankHeader is the JSON header of one rank's file. History and the best
// epoch are the same on every rank; each rank keeps a copy so that it
// resumes from its own file alone.
type rankHeader struct {
	Fingerprint string `json:"fingerprint"`
	Epoch       int    `json:"epoch"` // last completed epoch
	Rank        int    `json:"rank"`
	Ranks       int    `json:"ranks"`
	Stage       int    `json:"stage"`
	Pipeline    int    `json:"pipeline"`
	ckptRecord
	// Lengths of the arrays that follow, in this order (pipe.State).
	Weights  int `json:"weights"`
	Opt      int `json:"opt"`
	Hist     int `json:"hist"`
	HistGrad int `json:"hist_grad"`
	Snap     int `json:"snap"`
}

func encodeRank(h rankHeader, s pipe.State) ([]byte, error) {
	h.Weights, h.Opt, h.Hist, h.HistGrad, h.Snap = len(s.Weights), len(s.Opt), len(s.Hist), len(s.HistGrad), len(s.Snap)
	return encodeRecord(fullMagic, h, s.Weights, s.Opt, s.Hist, s.HistGrad, s.Snap)
}

func decodeRank(b []byte, path string) (*rankHeader, pipe.State, error) {
	h := &rankHeader{}
	a, err := decodeRecord(b, path, fullMagic, h, func() []int { return []int{h.Weights, h.Opt, h.Hist, h.HistGrad, h.Snap} })
	if err != nil {
		return nil, pipe.State{}, err
	}
	return h, pipe.State{Weights: a[0], Opt: a[1], Hist: a[2], HistGrad: a[3], Snap: a[4]}, nil
}

// dataID identifies the data a run trains on, for fingerprints.
type dataID struct {
	Dataset string
	Split   string
	Nodes   int64
	Book    uint32 // CRC-32C of the partition: of every vertex's part, or of a partitioned dataset's offsets
}

func dataIDOf(d *Data) dataID {
	if d.Offsets != nil {
		return dataID{d.Name, d.SplitName, d.NumNodes(), crc32.Checksum(int64Bytes(d.Offsets), castagnoli)}
	}
	return dataID{d.Name, d.SplitName, d.NumNodes(), crc32.Checksum(int32Bytes(d.Book.Part), castagnoli)}
}

// fullFingerprint describes everything that must match for a resumed
// full-graph run to continue the same loss curve: the settings (but the
// number of epochs, the evaluation interval and the checkpointing), the
// layout on p ranks, the data, the partition and the chunks (fullPlan's
// CRC of them).
//
// The settings keep the shape FullConfig had before the common settings
// moved into Common (fullSettings), so that checkpoints written before
// stay resumable and a mismatch names the same fields.
func fullFingerprint(cfg FullConfig, lay pipe.Layout, p int, d *Data, chunks uint32) string {
	cfg.FeatureNorm = cfg.FeatureNorm.Resolve(d.NonNegative) // auto and what it chose are the same run
	b, _ := json.Marshal(struct {
		Config fullSettings
		Layout pipe.Layout
		Ranks  int
		dataID
		ChunksCRC uint32 // CRC-32C of the chunks (fullPlan)
	}{fullSettingsOf(cfg), lay, p, dataIDOf(d), chunks})
	return string(b)
}

// fullSettings is the layout of the settings in a full-graph fingerprint:
// the model, the staleness remedies, the optimizer and the seed under
// Pipe (pipe.Config with a zero Layout), the rest beside it. The number of
// epochs, the evaluation interval and the checkpointing are zero.
type fullSettings struct {
	Mode            Mode
	Pipelines       int
	Chunks          int
	ChunkMethod     ChunkMethod
	Pipe            pipe.Config
	FeatureNorm     FeatureNorm
	Epochs          int
	EvalEvery       int
	Select          Selection
	CheckpointDir   string
	CheckpointEvery int
	Resume          bool
}

func fullSettingsOf(cfg FullConfig) fullSettings {
	return fullSettings{Mode: cfg.Mode, Pipelines: cfg.Pipelines, Chunks: cfg.Chunks, ChunkMethod: cfg.ChunkMethod,
		Pipe: cfg.pipeConfig(), FeatureNorm: cfg.FeatureNorm, Select: cfg.Select}
}

// saveFull writes rank c.Rank()'s file of the checkpoint after epoch and,
// once every rank has written its own, the manifest (rank 0).
//
// saveFull is collective over c; every rank returns an error if any fails.
func saveFull(c collective.Comm, dir string, h rankHeader, s pipe.State) error {
	defer collective.SetPhase(c, metrics.PhaseCheckpoint)()
	r, epoch := c.Rank(), h.Epoch
	name := FullRankFile(r, epoch)
	err := func() error {
		if !finite(s.Weights) {
			return fmt.Errorf("train: epoch %d: rank %d's parameters are not finite; not checkpointing", epoch, r)
		}
		b, err := encodeRank(h, s)
		if err != nil {
			return err
		}
		return writeCheckpointFile(filepath.Join(dir, name), b)
	}()
	if err := collective.Agree(c, err); err != nil {
		return err
	}
	err = nil
	if r == 0 {
		m := fullManifest{Format: fullFormat, Epoch: epoch, Ranks: c.Size(), Fingerprint: h.Fingerprint}
		for q := range c.Size() {
			m.Files = append(m.Files, FullRankFile(q, epoch))
		}
		b, jerr := json.MarshalIndent(m, "", "  ")
		if err = jerr; err == nil {
			err = writeCheckpointFile(filepath.Join(dir, FullManifestFile), append(b, '\n'))
		}
	}
	if err := collective.Agree(c, err); err != nil {
		return err
	}
	// The manifest names epoch: this rank's older files (and temporary
	// files of interrupted writes, atomicfile.TempPrefix) are no longer
	// needed.
	prefix := fmt.Sprintf("checkpoint-rank%04d-epoch", r)
	old, _ := filepath.Glob(filepath.Join(dir, prefix+"*"))
	tmp, _ := filepath.Glob(filepath.Join(dir, "."+prefix+"*"))
	for _, f := range append(old, tmp...) {
		if filepath.Base(f) != name {
			_ = os.Remove(f)
		}
	}
	return nil
}

// resumeFull restores tr from the checkpoint in dir that the manifest
// names and returns its header (epoch, history, best epoch). Rank 0 reads
// the manifest and checks it against fp; every rank then reads its own file
// and checks its fingerprint, rank and epoch.
//
// resumeFull is collective over c; every rank returns an error if any
// fails.
func resumeFull(c collective.Comm, dir, fp string, tr *pipe.Trainer) (*rankHeader, error) {
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	epoch := []int64{0}
	var err error
	if c.Rank() == 0 {
		var m *fullManifest
		if m, err = readManifest(dir, fp, c.Size()); err == nil {
			epoch[0] = int64(m.Epoch)
		}
	}
	if err := collective.Agree(c, err); err != nil {
		return nil, err
	}
	if err := collective.BcastSlice(c, epoch, 0); err != nil {
		return nil, err
	}
	h, err := resumeRank(dir, int(epoch[0]), c.Rank(), fp, tr)
	if err := collective.Agree(c, err); err != nil {
		return nil, err
	}
	return h, nil
}

// readManifest reads dir's manifest and checks that a run with fingerprint
// fp on p ranks may resume from it.
func readManifest(dir, fp string, p int) (*fullManifest, error) {
	path := filepath.Join(dir, FullManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(filepath.Join(dir, CheckpointFile)); serr == nil {
				return nil, fmt.Errorf("train: %s holds a minibatch checkpoint (%s), not a full-graph one: %w", dir, CheckpointFile, err)
			}
			return nil, fmt.Errorf("train: no full-graph checkpoint to resume from: %w", err)
		}
		return nil, fmt.Errorf("train: %w", err)
	}
	m := &fullManifest{}
	if err := json.Unmarshal(b, m); err != nil || m.Format != fullFormat || m.Epoch < 1 {
		return nil, fmt.Errorf("train: checkpoint manifest %s: not a %s manifest (corrupted?)", path, fullFormat)
	}
	if m.Ranks != p {
		return nil, fmt.Errorf("train: checkpoint %s was written by %d ranks; this run has %d: a full-graph checkpoint (--mode graph, pipe, hybrid) holds each rank's part or stage of the state in that rank's file and is not repartitioned or restaged, so it resumes only with %d ranks (and the same parts, stages and chunks)", path, m.Ranks, p, m.Ranks)
	}
	if !sameFingerprint(m.Fingerprint, fp) {
		return nil, otherSettings(path, m.Fingerprint, fp)
	}
	return m, nil
}

// otherSettings reports that the checkpoint at path has fingerprint ck
// where the run has run, listing the settings that differ.
func otherSettings(path, ck, run string) error {
	return fmt.Errorf("train: checkpoint %s was written by a run with other settings; resume needs the same mode, model, data, partition, chunks, staleness remedies, optimizer, seed and rank count; %s", path, fingerprintDiff(ck, run))
}

// sameFingerprint reports whether two JSON fingerprints hold the same
// settings, whatever the order of their fields (which changes when a
// setting moves between structs, as the common ones did into Common).
// Fingerprints that do not parse are compared as strings.
func sameFingerprint(a, b string) bool {
	if a == b {
		return true
	}
	fa, fb, ok := flatFingerprints(a, b)
	return ok && maps.Equal(fa, fb)
}

// flatFingerprints returns the leaves of two JSON fingerprints by dotted
// path (flattenJSON), or false if either does not parse.
func flatFingerprints(a, b string) (fa, fb map[string]string, ok bool) {
	var ja, jb map[string]any
	if json.Unmarshal([]byte(a), &ja) != nil || json.Unmarshal([]byte(b), &jb) != nil {
		return nil, nil, false
	}
	fa, fb = map[string]string{}, map[string]string{}
	flattenJSON(fa, "", ja)
	flattenJSON(fb, "", jb)
	return fa, fb, true
}

// fingerprintDiff lists the fields in which two JSON fingerprints differ,
// or shows both whole if either does not parse.
func fingerprintDiff(ck, run string) string {
	fa, fb, ok := flatFingerprints(ck, run)
	if !ok {
		return fmt.Sprintf("\n  checkpoint: %s\n  this run:   %s", ck, run)
	}
	var keys []string
	for k := range fa {
		keys = append(keys, k)
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var diff []string
	for _, k := range keys {
		if fa[k] != fb[k] {
			diff = append(diff, fmt.Sprintf("%s: checkpoint %s, this run %s", k, orNone(fa[k]), orNone(fb[k])))
		}
	}
	return "they differ in " + strings.Join(diff, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// flattenJSON records every leaf of v under its dotted path.
func flattenJSON(dst map[string]string, prefix string, v any) {
	if m, ok := v.(map[string]any); ok {
		for k, x := range m {
			if prefix != "" {
				k = prefix + "." + k
			}
			flattenJSON(dst, k, x)
		}
		return
	}
	b, _ := json.Marshal(v)
	dst[prefix] = string(b)
}

// resumeRank reads rank's file of the checkpoint after epoch and restores
// tr from it.
func resumeRank(dir string, epoch, rank int, fp string, tr *pipe.Trainer) (*rankHeader, error) {
	path := filepath.Join(dir, FullRankFile(rank, epoch))
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("train: rank %d's file of the checkpoint after epoch %d: %w", rank, epoch, err)
	}
	h, s, err := decodeRank(b, path)
	switch {
	case err != nil:
		return nil, err
	case !sameFingerprint(h.Fingerprint, fp):
		return nil, otherSettings(path, h.Fingerprint, fp)
	case h.Rank != rank || h.Epoch != epoch:
		return nil, fmt.Errorf("train: checkpoint %s holds rank %d's state after epoch %d, want rank %d's after epoch %d", path, h.Rank, h.Epoch, rank, epoch)
	}
	if err := tr.SetState(s); err != nil {
		return nil, fmt.Errorf("train: checkpoint %s: %w", path, err)
	}
	h.History = slices.Clone(h.History)
	return h, nil
}
