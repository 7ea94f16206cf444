package train

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"gnnmpi/collective"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/metrics"
	"gnnmpi/model"
)

// checkpointMagic starts every checkpoint file written at an epoch's
// end; checkpointMagicStep one written inside an epoch (ckptHeader.Step),
// so that a binary that knows only the first refuses it (bad magic)
// instead of taking it for one of the epoch's end.
const (
	checkpointMagic     = "GNNMPI-CKPT-1\n"
	checkpointMagicStep = "GNNMPI-CKPT-2\n"
)

// CheckpointFile is the checkpoint's name inside the checkpoint directory.
const CheckpointFile = "checkpoint.bin"

// checkpoint is the state a run needs to continue exactly where it was.
// Random streams are keyed by (seed, epoch, step, rank), so the epoch and
// the step within it are the whole random state: what the loader had
// prepared beyond the step is prepared again from them.
type checkpoint struct {
	Header  ckptHeader
	Weights []float32 // model parameters, Model.FlattenWeights order
	Opt     []float32 // optimizer state
	Best    []float32 // parameters of the best-validation epoch (may be empty)
}

type ckptHeader struct {
	Fingerprint string `json:"fingerprint"` // the settings that must match to resume
	Epoch       int    `json:"epoch"`       // last completed epoch; with Step > 0 the epoch in progress
	// Step is the minibatch steps of Epoch done, for a checkpoint
	// written inside it (magic checkpointMagicStep); 0 at an epoch's end.
	Step int `json:"step,omitempty"`
	// Partial is, with Step > 0, every rank's loss sum, correct count and
	// seeds seen over those steps, three per rank in rank order: what
	// each rank's epoch sums go on from, so that the epoch's loss is
	// bit-identical to an uninterrupted run's.
	Partial []float64 `json:"partial,omitempty"`
	Seed    uint64    `json:"seed"`
	Ranks   int       `json:"ranks"`
	ckptRecord
	// In and Out are the model's input and output widths, which the
	// fingerprint's settings leave 0 (they come from the data): what
	// CheckpointModel needs to rebuild the model. Checkpoints written
	// before them have none.
	In      int `json:"in,omitempty"`
	Out     int `json:"out,omitempty"`
	Weights int `json:"weights"`
	Opt     int `json:"opt"`
	Best    int `json:"best"`
}

// ckptRecord is the loop's record (but the best parameters) as both kinds
// of checkpoint header hold it: embedded, its fields stand in the header's
// JSON object where it is embedded.
type ckptRecord struct {
	BestEpoch int          `json:"best_epoch"`
	BestVal   float64      `json:"best_val_acc"`
	BestTest  float64      `json:"best_test_acc"`
	History   []EpochStats `json:"history"`
}

// ckptRecordOf returns what a checkpoint header keeps of rec (not a copy:
// History is rec.history).
func ckptRecordOf(rec *record) ckptRecord {
	return ckptRecord{BestEpoch: rec.bestEpoch, BestVal: rec.bestVal, BestTest: rec.bestTest, History: rec.history}
}

// record returns the loop's record that r holds, without best parameters
// (not a copy: history is r.History).
func (r ckptRecord) record() record {
	return record{history: r.History, bestEpoch: r.BestEpoch, bestVal: r.BestVal, bestTest: r.BestTest}
}

// encode serialises ck (encodeRecord).
func (ck *checkpoint) encode() ([]byte, error) {
	magic, h, err := ck.header()
	if err != nil {
		return nil, err
	}
	return encodeRawRecord(magic, h, ck.Weights, ck.Opt, ck.Best)
}

// header returns ck's magic and its header as JSON, the arrays' lengths
// set.
func (ck *checkpoint) header() (string, json.RawMessage, error) {
	ck.Header.Weights, ck.Header.Opt, ck.Header.Best = len(ck.Weights), len(ck.Opt), len(ck.Best)
	magic := checkpointMagic
	if ck.Header.Step > 0 {
		magic = checkpointMagicStep
	}
	h, err := json.Marshal(ck.Header)
	return magic, h, err
}

// ckptWriter writes the minibatch checkpoint in the background, one write
// at a time: a step waits for a copy of the state in memory (snapshot),
// not for the disk. On physics at 2 ranks (SAGE, hidden 256: a 52 MB
// checkpoint) the synchronous write had cost about 3.6 steps
// (bench/results/ckptcost-sync-issue31.csv), the step loop now 0.28
// (ckptcost-issue31.csv). A write in flight is waited for
// before the next snapshot, and before the run returns or stops
// (trainer.flushCheckpoint), so a run that reports a checkpoint has it on
// disk; a job killed during a write keeps the one before (the write is
// atomic).
type ckptWriter struct {
	done chan error // the result of the write in flight; nil when none
	// The write in flight's arrays, reused by the next write once it is
	// done.
	weights, opt, best []float32
}

// snapshot waits for the write in flight and returns the checkpoint of
// header h with copies of weights (FlattenWeights into the writer's
// buffer), opt's state and best, for start. It returns the error of the
// write it waited for.
func (w *ckptWriter) snapshot(h ckptHeader, m *model.Model, opt model.Optimizer, best []float32) (*checkpoint, error) {
	if err := w.wait(); err != nil {
		return nil, err
	}
	w.weights = m.FlattenWeights(w.weights[:0])
	w.opt = opt.AppendState(w.opt[:0])
	w.best = append(w.best[:0], best...)
	return &checkpoint{Header: h, Weights: w.weights, Opt: w.opt, Best: w.best}, nil
}

// start writes ck, a snapshot, to path in the background
// (writeRecordFile); the header is encoded at once (it shares the loop's
// record).
func (w *ckptWriter) start(path string, ck *checkpoint) error {
	magic, h, err := ck.header()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		// On a thread of its own at a lower priority (nice 10), which
		// ends with the goroutine: where the ranks keep every core busy,
		// the write takes the cycles they leave.
		runtime.LockOSThread()
		_ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 10)
		done <- writeRecordFile(path, magic, h, ck.Weights, ck.Opt, ck.Best)
	}()
	w.done = done
	return nil
}

// wait waits for the write in flight, if any, and returns its error.
func (w *ckptWriter) wait() error {
	if w.done == nil {
		return nil
	}
	err := <-w.done
	w.done = nil
	return err
}

// flushCheckpoint waits for this rank's checkpoint write in flight and
// agrees on its result over the ranks (phase metrics.PhaseCheckpoint):
// every rank returns an error if rank 0's write failed. Without a
// checkpoint directory it does nothing.
//
// flushCheckpoint is collective over t.c.
func (t *trainer) flushCheckpoint() error {
	if t.cfg.CheckpointDir == "" {
		return nil
	}
	defer collective.SetPhase(t.c, metrics.PhaseCheckpoint)()
	return collective.Agree(t.c, t.ckw.wait())
}

// decodeCheckpoint parses what encode wrote; path names the file in errors.
func decodeCheckpoint(b []byte, path string) (*checkpoint, error) {
	ck := &checkpoint{}
	magic := checkpointMagic
	if len(b) >= len(checkpointMagicStep) && string(b[:len(checkpointMagicStep)]) == checkpointMagicStep {
		magic = checkpointMagicStep
	}
	a, err := decodeRecord(b, path, magic, &ck.Header, func() []int {
		return []int{ck.Header.Weights, ck.Header.Opt, ck.Header.Best}
	})
	if err != nil {
		return nil, err
	}
	ck.Weights, ck.Opt, ck.Best = a[0], a[1], a[2]
	if (magic == checkpointMagicStep) != (ck.Header.Step > 0) || ck.Header.Step < 0 {
		return nil, fmt.Errorf("train: checkpoint %s: step %d does not match its format %q", path, ck.Header.Step, magic[:len(magic)-1])
	}
	return ck, nil
}

// writeCheckpointFile writes data to path atomically (internal/atomicfile:
// a crash leaves either the old file or the new one, never a torn one),
// creating the directory.
func writeCheckpointFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
	}
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("train: checkpoint: %w", err)
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

func (t *trainer) ckptPath() string { return filepath.Join(t.cfg.CheckpointDir, CheckpointFile) }

// makeFingerprint describes everything that must match for a resumed run to
// continue the same loss curve: the resolved settings (but the number of
// epochs, the evaluation interval and memory, the checkpointing and the
// overlap), the rank count and the data. Fingerprints are compared by
// sameFingerprint.
func (t *trainer) makeFingerprint() string {
	cfg := t.cfg
	cfg.Epochs, cfg.EvalEvery, cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Resume, cfg.EvalMemory = 0, 0, "", 0, false, 0
	cfg.EvalFanouts, cfg.EvalBatchSize = nil, 0 // how evaluation runs
	cfg.Overwrite = false
	cfg.CheckpointSteps, cfg.CheckpointInterval = 0, 0
	cfg.FeatureNorm = cfg.FeatureNorm.Resolve(t.d.NonNegative) // auto and what it chose are the same run
	cfg.Overlap, cfg.OverlapCores = false, 0
	cfg.Device = ""   // where the step ran: a run may resume on the other device
	cfg.GradComm = "" // how the gradients were summed: the same sums
	// The gradients' type and buckets are not the model's state: a run
	// may resume with others.
	cfg.GradDType, cfg.GradBucketMB = "", 0
	b, _ := json.Marshal(struct {
		Config Config
		Ranks  int
		// GlobalBatch is the global batch size Resolve turned into
		// Config.BatchSize: with it the schedule is another
		// (schedule.elastic).
		GlobalBatch int `json:",omitempty"`
		// Parts is, with the elastic schedule of a partitioned dataset,
		// the CRC-32C of its dataset parts' offsets, which cut the epoch
		// (dataID's Book, of the run parts', depends on the rank count).
		Parts uint32 `json:",omitempty"`
		dataID
	}{cfg, t.c.Size(), cfg.globalBatch, t.partsID(), dataIDOf(t.d)})
	return string(b)
}

// partsID is the CRC-32C of the dataset parts' offsets with the elastic
// schedule of a partitioned dataset, else 0.
func (t *trainer) partsID() uint32 {
	if t.sched == nil || t.sched.partTrain == nil {
		return 0
	}
	return crc32.Checksum(int64Bytes(t.d.PartOffsets), castagnoli)
}

func int64Bytes(x []int64) []byte {
	b := make([]byte, 0, 8*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

func int32Bytes(x []int32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return b
}

// save writes the checkpoint after epoch with the loop's record (rank 0;
// every rank holds the same model and optimizer state).
func (t *trainer) save(epoch int, rec *record) error {
	return t.write(epoch, 0, nil, rec)
}

// saveStep writes the checkpoint after step steps of epoch, with the
// loop's record of the epochs before (stepSaver): the epoch's loss and
// accuracy sums of every rank so far, gathered on every rank (phase
// metrics.PhaseCheckpoint), go with it. With the device step the weights
// and moments are downloaded first.
//
// saveStep is collective over t.c.
func (t *trainer) saveStep(epoch, step int, rec *record) error {
	start := time.Now()
	defer func() { t.ep.ckptSecs += time.Since(start).Seconds() }()
	if t.dev != nil {
		if err := t.dev.download(t.m); err != nil {
			return err
		}
	}
	restore := collective.SetPhase(t.c, metrics.PhaseCheckpoint)
	all, _, err := collective.AllgatherSlice(t.c, []float64{t.ep.lossSum, t.ep.correct, t.ep.seen})
	restore()
	if err != nil {
		return err
	}
	return collective.Agree(t.c, t.write(epoch, step, all, rec))
}

// write writes the checkpoint after step steps of epoch (0: all of it)
// with every rank's epoch sums partial (rank 0): it copies the state and
// leaves its encoding and the file's write to t.ckw, returning the error
// of the write before it.
func (t *trainer) write(epoch, step int, partial []float64, rec *record) error {
	if t.c.Rank() != 0 {
		return nil
	}
	h := ckptHeader{Fingerprint: t.fingerprint, Epoch: epoch, Step: step, Partial: partial, Seed: t.cfg.Seed, Ranks: t.c.Size(),
		ckptRecord: ckptRecordOf(rec), In: t.m.Config().In, Out: t.m.Config().Out}
	ck, err := t.ckw.snapshot(h, t.m, t.opt, rec.best)
	if err != nil {
		return err
	}
	if !finite(ck.Weights) {
		return fmt.Errorf("train: epoch %d: parameters are not finite; not checkpointing", epoch)
	}
	return t.ckw.start(t.ckptPath(), ck)
}

// resume restores the model, the optimizer and the loop's record from the
// checkpoint (bcastCheckpoint), which must have this run's fingerprint.
func (t *trainer) resume() (resumed, error) {
	ck, err := t.bcastCheckpoint()
	if err != nil {
		return resumed{}, err
	}
	if err := t.resumable(ck); err != nil {
		return resumed{}, err
	}
	if len(ck.Weights) != t.m.NumParams() {
		return resumed{}, fmt.Errorf("train: checkpoint %s has %d parameters, the model %d", t.ckptPath(), len(ck.Weights), t.m.NumParams())
	}
	t.m.SetWeights(ck.Weights)
	if err := t.opt.SetState(ck.Opt); err != nil {
		return resumed{}, fmt.Errorf("train: checkpoint %s: %w", t.ckptPath(), err)
	}
	h := ck.Header
	if h.Step > 0 {
		r := t.c.Rank()
		if len(h.Partial) != 3*h.Ranks {
			return resumed{}, fmt.Errorf("train: checkpoint %s: %d epoch sums for %d ranks", t.ckptPath(), len(h.Partial), h.Ranks)
		}
		if h.Step >= t.sched.nb {
			return resumed{}, fmt.Errorf("train: checkpoint %s: step %d of an epoch of %d", t.ckptPath(), h.Step, t.sched.nb)
		}
		switch {
		case h.Ranks == t.c.Size():
			copy(t.resumeSums[:], h.Partial[3*r:3*r+3])
		case r == 0:
			// At another rank count rank 0 goes on from every rank's
			// sums (the epoch's are their total), the others from 0.
			for q := range h.Ranks {
				for k := range 3 {
					t.resumeSums[k] += h.Partial[3*q+k]
				}
			}
		}
	}
	rec := h.record()
	rec.history, rec.best = slices.Clone(rec.history), slices.Clone(ck.Best)
	return resumed{epoch: h.Epoch, step: h.Step, rec: rec, from: t.ckptPath()}, nil
}

// elasticKeys are the fingerprint's fields that may differ between the
// run that wrote a checkpoint and the run resuming it with the elastic
// schedule (schedule.elastic): the rank count, the per-rank batch size
// Resolve derives from it and the partition of the vertices over the
// ranks, none of which changes a step's global minibatch.
var elasticKeys = []string{"Ranks", "Config.BatchSize", "Book"}

// resumable reports why the run cannot resume from ck, or nil: ck must
// have this run's fingerprint, but for the rank count, which may differ
// with the elastic schedule (elasticKeys).
func (t *trainer) resumable(ck *checkpoint) error {
	if sameFingerprint(ck.Header.Fingerprint, t.fingerprint) {
		return nil
	}
	path, p, q := t.ckptPath(), ck.Header.Ranks, t.c.Size()
	fa, fb, ok := flatFingerprints(ck.Header.Fingerprint, t.fingerprint)
	if ok && p != q {
		for _, k := range elasticKeys {
			delete(fa, k)
			delete(fb, k)
		}
		if maps.Equal(fa, fb) {
			if t.sched.elastic {
				return nil
			}
			if t.d.Partitioned() {
				return settingErrorf("train: checkpoint %s was written at %d ranks, this run has %d: its minibatches depend on the rank count (each rank shuffles and cuts its own parts' training vertices); resume with %d ranks, or train with %s N, whose steps take the same global minibatches at any rank count the parts suit",
					path, p, q, p, SettingGlobalBatchSize)
			}
			return settingErrorf("train: checkpoint %s was written at %d ranks, this run has %d: its minibatches depend on the rank count (each rank shuffles and cuts its own share of the training vertices and samples with its own streams); resume with %d ranks, or train with %s %s and %s N, whose steps take the same global minibatches at any rank count",
				path, p, q, p, SettingShuffle, ShuffleGlobal, SettingGlobalBatchSize)
		}
	}
	return fmt.Errorf("train: checkpoint %s was written by a run with other settings; resume needs the same model, data, partition, seed and rank count; %s", path, fingerprintDiff(ck.Header.Fingerprint, t.fingerprint))
}

// bcastCheckpoint reads the checkpoint on rank 0 and broadcasts it to
// every rank (phase setup); every rank returns an error if rank 0 could
// not read it: rank 0 the reason, the others one wrapping
// collective.ErrAborted.
//
// bcastCheckpoint is collective over t.c.
func (t *trainer) bcastCheckpoint() (*checkpoint, error) {
	c := t.c
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	var data []byte
	var rerr error
	if c.Rank() == 0 {
		ck, err := readCheckpoint(t.ckptPath())
		if err == nil {
			data, err = ck.encode()
		}
		rerr = err
	}
	n := []int64{int64(len(data))}
	if rerr != nil {
		n[0] = -1
	}
	if err := collective.BcastSlice(c, n, 0); err != nil {
		return nil, err
	}
	if n[0] < 0 {
		if rerr == nil {
			rerr = fmt.Errorf("train: rank 0 could not read the checkpoint %s (%w)", t.ckptPath(), collective.ErrAborted)
		}
		return nil, rerr
	}
	if c.Rank() != 0 {
		data = make([]byte, n[0])
	}
	if err := collective.BcastSlice(c, data, 0); err != nil {
		return nil, err
	}
	return decodeCheckpoint(data, t.ckptPath())
}
