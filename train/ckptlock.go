package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"gnnmpi/collective"
	"gnnmpi/internal/atomicfile"
	"gnnmpi/metrics"
)

// LockFile is the name, inside the checkpoint directory, of the lock file
// that makes the directory one job's for the job's lifetime: rank 0 holds
// an exclusive flock(2) on it and writes its holder (lockHolder) into it
// for the message that refuses a second job.
const LockFile = "gnnmpi.lock"

// fullRankPattern matches the names of every full-graph rank file
// (FullRankFile) in filepath.Match's syntax.
const fullRankPattern = "checkpoint-rank*-epoch*.bin"

// lockHolder is what the lock file records of the job that holds it.
type lockHolder struct {
	Host  string    `json:"host"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
	Ranks int       `json:"ranks"`
}

func (h lockHolder) String() string {
	return fmt.Sprintf("pid %d on host %s, %d ranks, since %s", h.PID, h.Host, h.Ranks, h.Since.Format(time.RFC3339))
}

// dirLock is a held lock on a checkpoint directory.
type dirLock struct {
	f *os.File
}

// release empties the lock file, so that the next holder does not take it
// for a dead job's, and drops the lock. A nil lock is a no-op.
func (l *dirLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// lockCheckpointDir makes cc.CheckpointDir this job's until the returned
// function is called (defer it; the kernel drops the lock when the process
// dies, however it dies). Rank 0 creates the directory, takes the lock
// (tryLockDir), refuses a directory that holds a checkpoint unless the run
// resumes it or overwrites it (checkExisting) and removes the temporary
// files of interrupted writes (removeTemporaries); every rank returns
// rank 0's error, so a refused job fails on every rank before anything is
// written. Without a checkpoint directory it does nothing and makes no
// collective call; a run that resumes from a directory that does not
// exist is not given one (the resume then fails, creating nothing).
//
// lockCheckpointDir is collective over c when cc.CheckpointDir is set.
func lockCheckpointDir(c collective.Comm, cc *Common, log func(string, ...any)) (func(), error) {
	if cc.CheckpointDir == "" {
		return func() {}, nil
	}
	if log == nil {
		log = func(string, ...any) {}
	}
	defer collective.SetPhase(c, metrics.PhaseSetup)()
	var l *dirLock
	var err error
	if c.Rank() == 0 {
		l, err = takeCheckpointDir(cc, c.Size(), log)
	}
	if err := collective.Agree(c, err); err != nil {
		l.release()
		return nil, err
	}
	return l.release, nil
}

// takeCheckpointDir is rank 0's part of lockCheckpointDir on a job of
// ranks ranks.
func takeCheckpointDir(cc *Common, ranks int, log func(string, ...any)) (*dirLock, error) {
	dir := cc.CheckpointDir
	if _, err := os.Stat(dir); cc.Resume && errors.Is(err, os.ErrNotExist) {
		return nil, nil // nothing to resume: the resume says so
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("train: checkpoint directory: %w", err)
	}
	host, _ := os.Hostname()
	l, stale, err := tryLockDir(dir, lockHolder{Host: host, PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second), Ranks: ranks})
	if err != nil {
		return nil, err
	}
	if stale != nil {
		log("checkpoint directory %s: the lock of %s was left by a job that ended without releasing it (killed?); taken over", dir, stale)
	}
	if err := checkExisting(dir, cc.Resume, cc.Overwrite); err != nil {
		l.release()
		return nil, err
	}
	removed, err := removeTemporaries(dir)
	if err != nil {
		l.release()
		return nil, err
	}
	if len(removed) > 0 {
		log("checkpoint directory %s: removed %d temporary file(s) of interrupted writes: %s", dir, len(removed), strings.Join(removed, ", "))
	}
	return l, nil
}

// tryLockDir takes the lock on dir's LockFile without waiting and records
// me in it. It fails, naming the holder, if another job holds it. If the
// lock file names a holder although the lock was free, that job died
// holding it (a job that ends releases the lock and empties the file), and
// tryLockDir returns it as stale.
func tryLockDir(dir string, me lockHolder) (l *dirLock, stale *lockHolder, err error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("train: checkpoint directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := "a job that has not yet written its name"
			if h, ok := readHolder(f); ok {
				holder = h.String()
			}
			return nil, nil, fmt.Errorf("train: checkpoint directory %s is in use by another job (%s; lock file %s): one job per checkpoint directory; give this run another --checkpoint, or wait for that job to end", dir, holder, path)
		}
		return nil, nil, fmt.Errorf("train: cannot lock the checkpoint directory %s (flock %s: %w); its file system must support flock(2) (Lustre: mount with -o flock)", dir, path, err)
	}
	l = &dirLock{f: f}
	if h, ok := readHolder(f); ok {
		stale = &h
	}
	b, _ := json.Marshal(me)
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err != nil {
		l.release()
		return nil, nil, fmt.Errorf("train: checkpoint directory lock %s: %w", path, err)
	}
	return l, stale, nil
}

// readHolder reads the holder that the lock file f records, if any.
func readHolder(f *os.File) (lockHolder, bool) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	var h lockHolder
	if err != nil || len(b) == 0 || json.Unmarshal(b, &h) != nil {
		return lockHolder{}, false
	}
	return h, true
}

// checkExisting refuses a directory that holds a checkpoint, minibatch or
// full-graph, unless the run resumes it (whose fingerprint the resume then
// checks) or overwrites it.
func checkExisting(dir string, resume, overwrite bool) error {
	if resume || overwrite {
		return nil
	}
	var found []string
	for _, name := range []string{CheckpointFile, FullManifestFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			found = append(found, name)
		}
	}
	if ranks, _ := filepath.Glob(filepath.Join(dir, fullRankPattern)); len(ranks) > 0 {
		found = append(found, fmt.Sprintf("%d rank file(s) %s", len(ranks), fullRankPattern))
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("train: checkpoint directory %s already holds a checkpoint (%s), which this run would replace: --resume to continue it, --overwrite to replace it, or another --checkpoint", dir, strings.Join(found, ", "))
}

// removeTemporaries removes the temporary files (atomicfile.TempPrefix)
// of every checkpoint file in dir, left by writes that were killed: with
// the directory's lock held no writer is alive. It returns their names.
func removeTemporaries(dir string) ([]string, error) {
	var removed []string
	for _, name := range []string{CheckpointFile, FullManifestFile, fullRankPattern} {
		tmps, _ := filepath.Glob(filepath.Join(dir, atomicfile.TempPrefix(name)+"*"))
		for _, p := range tmps {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return removed, fmt.Errorf("train: removing a temporary file of an interrupted checkpoint write: %w", err)
			}
			removed = append(removed, filepath.Base(p))
		}
	}
	return removed, nil
}
