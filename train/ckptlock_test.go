package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"gnnmpi/internal/atomicfile"
	"gnnmpi/partition"
)

// runRanksHooks trains cfg on the test graph on p in-process ranks with
// hooks h and returns every rank's result and error, and the job's: a
// rank's error ends the job (runRanksOn).
func runRanksHooks(p int, cfg Config, h Hooks) ([]*Result, []error, error) {
	return runRanksOn(p, cfg, partition.Random(sbm().NumNodes, p, 5), func(int) Hooks { return h }, true)
}

// A second job given the checkpoint directory of a running one is refused
// at its start on every rank, with a message naming the directory and the
// holder (host, pid); the first job goes on and its checkpoint is intact
// and resumable. Minibatch and pipe.
func TestSecondJobOnCheckpointDirIsRefused(t *testing.T) {
	host, err := os.Hostname()
	require.NoError(t, err)
	for _, mode := range []Mode{ModeMinibatch, ModePipe} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			const p = 2
			var once sync.Once
			var second []error
			// The first job's epoch hook, on whichever rank gets there
			// first, runs the second job while the first holds the lock.
			h := Hooks{Epoch: func(EpochStats) error {
				once.Do(func() {
					if mode == ModeMinibatch {
						cfg := testConfig("sage")
						cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Epochs = dir, 1, 2
						_, second, _ = runRanksHooks(p, cfg, Hooks{})
					} else {
						cfg := fullConfig(ModePipe)
						cfg.CheckpointDir, cfg.CheckpointEvery = dir, 1
						_, second, _ = runFullHooks(t, p, cfg, Hooks{})
					}
				})
				return nil
			}}
			var errs []error
			if mode == ModeMinibatch {
				cfg := testConfig("sage")
				cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Epochs = dir, 1, 3
				_, errs, err = runRanksHooks(p, cfg, h)
				require.NoError(t, err)
				cfg.Epochs, cfg.Resume = 4, true
				_, _, err = runRanksHooks(p, cfg, Hooks{})
				require.NoError(t, err, "the first job's checkpoint resumes")
			} else {
				cfg := fullConfig(ModePipe)
				cfg.CheckpointDir, cfg.CheckpointEvery = dir, 1
				_, errs, err = runFullHooks(t, p, cfg, h)
				require.NoError(t, err)
				requireCheckpointFiles(t, dir, p, cfg.Epochs)
			}
			require.Len(t, errs, p)
			require.Len(t, second, p)
			for r, err := range second {
				require.Error(t, err, "rank %d of the second job", r)
				msg := err.Error()
				require.Contains(t, msg, "checkpoint directory "+dir+" is in use by another job")
				require.Contains(t, msg, fmt.Sprintf("pid %d on host %s, %d ranks, since ", os.Getpid(), host, p))
			}
			lock, err := os.ReadFile(filepath.Join(dir, LockFile))
			require.NoError(t, err)
			require.Empty(t, lock, "released at the end")
		})
	}
}

// A directory holding a checkpoint is refused without --resume or
// --overwrite, leaving the checkpoint as it was; --overwrite replaces it
// with this run's, which then resumes; --resume with other settings is
// refused by the fingerprint. Minibatch and pipe.
func TestCheckpointDirOfAnotherRun(t *testing.T) {
	t.Run("minibatch", func(t *testing.T) {
		dir := t.TempDir()
		cfg := testConfig("sage")
		cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Epochs, cfg.Seed = dir, 1, 2, 1
		_, _, err := runRanksHooks(2, cfg, Hooks{})
		require.NoError(t, err)
		path := filepath.Join(dir, CheckpointFile)
		before, err := os.ReadFile(path)
		require.NoError(t, err)

		for _, seed := range []uint64{1, 2} { // the same run's or another's
			other := cfg
			other.Seed = seed
			_, errs, err := runRanksHooks(2, other, Hooks{})
			require.Error(t, err)
			for r, err := range errs {
				require.ErrorContains(t, err, "checkpoint directory "+dir+" already holds a checkpoint ("+CheckpointFile+")", "rank %d", r)
				require.ErrorContains(t, err, "--resume to continue it, --overwrite to replace it")
			}
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, before, after, "the checkpoint is left as it was")
		}

		other := cfg
		other.Seed, other.Resume, other.Epochs = 2, true, 3
		_, _, err = runRanksHooks(2, other, Hooks{})
		require.ErrorContains(t, err, "other settings")

		other.Resume, other.Overwrite, other.Epochs = false, true, 2
		_, _, err = runRanksHooks(2, other, Hooks{})
		require.NoError(t, err)
		ck, err := readCheckpoint(path)
		require.NoError(t, err)
		require.Equal(t, uint64(2), ck.Header.Seed, "replaced by the seed-2 run's")
		other.Overwrite, other.Resume, other.Epochs = false, true, 3
		_, _, err = runRanksHooks(2, other, Hooks{})
		require.NoError(t, err)
	})
	t.Run("pipe", func(t *testing.T) {
		dir := t.TempDir()
		cfg := fullConfig(ModePipe)
		cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Seed = dir, 1, 1
		_, _, err := runFullHooks(t, 2, cfg, Hooks{})
		require.NoError(t, err)
		other := cfg
		other.Seed = 2
		_, errs, err := runFullHooks(t, 2, other, Hooks{})
		require.Error(t, err)
		for r, err := range errs {
			require.ErrorContains(t, err, "already holds a checkpoint ("+FullManifestFile+", 2 rank file(s) "+fullRankPattern+")", "rank %d", r)
			require.ErrorContains(t, err, "--resume to continue it, --overwrite to replace it")
		}
		requireCheckpointFiles(t, dir, 2, cfg.Epochs)
		other.Overwrite = true
		_, _, err = runFullHooks(t, 2, other, Hooks{})
		require.NoError(t, err)
		// The manifest is the seed-2 run's now: that run resumes.
		other.Overwrite, other.Resume, other.Epochs = false, true, cfg.Epochs+1
		_, _, err = runFullHooks(t, 2, other, Hooks{})
		require.NoError(t, err)
	})
}

// Resume and Overwrite exclude each other, and Overwrite needs a
// checkpoint directory.
func TestOverwriteSettings(t *testing.T) {
	for _, tc := range []struct {
		dir               string
		resume, overwrite bool
		want              string
	}{
		{"ck", true, true, "give one of them"},
		{"", false, true, "overwrite needs a checkpoint directory"},
		{"ck", false, true, ""},
	} {
		c := testConfig("sage").Common
		c.CheckpointDir, c.CheckpointEvery, c.Resume, c.Overwrite = tc.dir, 1, tc.resume, tc.overwrite
		err := c.Validate()
		if tc.want == "" {
			require.NoError(t, err)
		} else {
			require.ErrorContains(t, err, tc.want)
		}
	}
}

// Temporary files that killed writes left beside the checkpoint (the
// minibatch file, the manifest and the rank files) are removed when the
// lock is taken, with a log line naming them; other files stay.
func TestTemporariesOfKilledWritesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	var tmps []string
	for _, name := range []string{CheckpointFile, FullManifestFile, FullRankFile(1, 3)} {
		f, err := atomicfile.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		_, err = f.Write(make([]byte, 1<<10))
		require.NoError(t, err)
		require.NoError(t, f.Close()) // neither committed nor aborted: killed
		tmps = append(tmps, filepath.Base(f.Name()))
	}
	keep := filepath.Join(dir, ".notes.tmp1")
	require.NoError(t, os.WriteFile(keep, nil, 0o644))

	cfg := testConfig("sage")
	cfg.CheckpointDir, cfg.CheckpointEvery, cfg.Epochs = dir, 1, 1
	var mu sync.Mutex
	var logs []string
	_, _, err := runRanksHooks(2, cfg, Hooks{Log: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}})
	require.NoError(t, err)
	for _, tmp := range tmps {
		require.NoFileExists(t, filepath.Join(dir, tmp))
	}
	require.FileExists(t, keep)
	joined := strings.Join(logs, "\n")
	require.Contains(t, joined, fmt.Sprintf("checkpoint directory %s: removed 3 temporary file(s) of interrupted writes: ", dir))
	for _, tmp := range tmps {
		require.Contains(t, joined, tmp)
	}
}

// lockHolderEnv makes the test binary a lock holder (TestLockHolderProcess)
// for TestStaleLockOfKilledJob.
const lockHolderEnv = "GNNMPI_TEST_LOCK_HOLDER"

// TestLockHolderProcess is not a test: run with lockHolderEnv=dir, it takes
// dir's lock, says "locked" and sleeps until it is killed.
func TestLockHolderProcess(t *testing.T) {
	dir := os.Getenv(lockHolderEnv)
	if dir == "" {
		t.Skip("a helper process of TestStaleLockOfKilledJob")
	}
	_, _, err := tryLockDir(dir, lockHolder{Host: "holder-host", PID: os.Getpid(), Since: time.Now().UTC(), Ranks: 3})
	require.NoError(t, err)
	fmt.Println("locked")
	time.Sleep(time.Minute)
}

// The lock of another process is refused, naming it; once that process is
// killed (SIGKILL: no release), the lock is free, and taking it reports the
// dead holder as stale.
func TestStaleLockOfKilledJob(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	locked := false
	for !locked && sc.Scan() {
		locked = sc.Text() == "locked"
	}
	require.True(t, locked, "the holder process took the lock")

	me := lockHolder{Host: "me", PID: os.Getpid(), Since: time.Now().UTC(), Ranks: 1}
	_, _, err = tryLockDir(dir, me)
	require.ErrorContains(t, err, fmt.Sprintf("checkpoint directory %s is in use by another job (pid %d on host holder-host, 3 ranks, since ", dir, cmd.Process.Pid))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	l, stale, err := tryLockDir(dir, me)
	require.NoError(t, err)
	require.NotNil(t, stale, "the dead job's lock is reported")
	require.Equal(t, cmd.Process.Pid, stale.PID)
	require.Equal(t, "holder-host", stale.Host)
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	require.NoError(t, err)
	var now lockHolder
	require.NoError(t, json.Unmarshal(b, &now))
	require.Equal(t, me.PID, now.PID, "the lock file names the new holder")
	l.release()
	_, stale, err = tryLockDir(dir, me)
	require.NoError(t, err)
	require.Nil(t, stale, "a released lock is not stale")
}
