package mpitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A GNNPipe job (two stages, two chunks) killed with SIGKILL to mpirun and
// its ranks after a checkpoint, then resumed with --resume, ends with
// exactly the losses, best epoch and test accuracy of an uninterrupted
// run: every rank restores its own stage's weights, optimizer state and
// historical embeddings from its file of the epoch the manifest names.
func TestFullCheckpointKilledAndResumed(t *testing.T) {
	skipUnlessMPI(t)
	const np, epochs = 2, 24
	dir := t.TempDir()
	args := []string{"train", "--mode", "pipe", "--chunks", "2", "--data", "data/cora", "--model", "gcnii", "--layers", "4", "--hidden", "16",
		"--epochs", fmt.Sprint(epochs), "--seed", "5", "--eval-every", "1", "--snapshot-every", "3"}
	full := filepath.Join(dir, "full.jsonl")
	r := mpirun(t, 2*time.Minute, np, bin, append(args, "--metrics", full)...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)

	ckdir := filepath.Join(dir, "ck")
	ckargs := append(args, "--checkpoint", ckdir, "--checkpoint-every", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := startSession(t, ctx, np, append(ckargs, "--metrics", filepath.Join(dir, "killed.jsonl"))...)
	manifest := filepath.Join(ckdir, "manifest.json")
	killedAt := 0
	for killedAt == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
		if e := manifestEpoch(manifest); e >= 3 {
			killSession(t, cmd.Process.Pid)
			killedAt = e
		}
	}
	_ = cmd.Wait()
	require.NotZero(t, killedAt, "no checkpoint appeared")
	require.Less(t, killedAt, epochs, "the run must be killed before it ends")
	waitSessionGone(t, cmd.Process.Pid)
	// The rank that was writing when the kill came may have committed one
	// more checkpoint; no more.
	saved := manifestEpoch(manifest)
	require.LessOrEqual(t, saved, killedAt+1)

	resumed := filepath.Join(dir, "resumed.jsonl")
	r = mpirun(t, 2*time.Minute, np, bin, append(ckargs, "--resume", "--metrics", resumed)...)
	require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
	require.Contains(t, r.stderr, "resumed from")
	a, fa := readMetrics(t, full)
	b, fb := readMetrics(t, resumed)
	require.Len(t, a, epochs)
	start := epochs - len(b) + 1
	t.Logf("killed after the checkpoint of epoch %d; resumed at epoch %d (%v)", killedAt, start, r.took)
	require.Equal(t, saved+1, start, "resumed after the last checkpoint")
	require.Equal(t, lossesOf(a[start-1:]), lossesOf(b), "bit-identical losses after the resume")
	require.Equal(t, fa["best_epoch"], fb["best_epoch"])
	require.Equal(t, fa["test_acc"], fb["test_acc"])
	require.EqualValues(t, epochs, fb["epochs_run"])
	require.Equal(t, epochs, manifestEpoch(manifest))

	// Resuming with another chunking fails on every rank, naming the
	// manifest and the setting.
	bad := append(append([]string{}, ckargs...), "--chunks", "3", "--resume")
	r = mpirun(t, time.Minute, np, bin, bad...)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, manifest)
	require.Contains(t, r.stderr, "Config.Chunks: checkpoint 2, this run 3")
}

// manifestEpoch returns the epoch a full-graph checkpoint's manifest
// names, or 0.
func manifestEpoch(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var m struct {
		Epoch int `json:"epoch"`
	}
	if json.Unmarshal(b, &m) != nil {
		return 0
	}
	return m.Epoch
}

// sessionProcs returns the live processes (not zombies) of session sid and
// their descendants.
func sessionProcs(sid int) []int {
	ents, _ := os.ReadDir("/proc")
	type proc struct{ pid, ppid, sid int }
	var all []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 4 || f[0] == "Z" {
			continue
		}
		ppid, err1 := strconv.Atoi(f[1])
		s, err2 := strconv.Atoi(f[3])
		if err1 == nil && err2 == nil {
			all = append(all, proc{pid, ppid, s})
		}
	}
	// The session's processes, then their descendants until none is
	// added: MPICH's hydra proxy and its ranks each start a session of
	// their own.
	in := map[int]bool{}
	for added := true; added; {
		added = false
		for _, p := range all {
			if !in[p.pid] && (p.sid == sid || in[p.ppid]) {
				in[p.pid], added = true, true
			}
		}
	}
	var pids []int
	for _, p := range all {
		if in[p.pid] {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

// startSession starts bin on np ranks (launchCmd) in a session of its own.
// Open MPI 4 puts every rank in a process group of its own, so the job is
// that session: mpirun and every rank are killed by their ids
// (killSession).
func startSession(t *testing.T, ctx context.Context, np int, args ...string) *exec.Cmd {
	t.Helper()
	argv, env := launchCmd(np, bin, args...)
	cmd := exec.CommandContext(ctx, impl.launcher, argv...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	require.NoError(t, cmd.Start())
	return cmd
}

// waitSessionGone fails t unless every process of session sid ends
// within 10 s.
func waitSessionGone(t *testing.T, sid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(sessionProcs(sid)) > 0; {
		require.True(t, time.Now().Before(deadline), "the killed ranks are still running")
		time.Sleep(10 * time.Millisecond)
	}
}

// killSession sends SIGKILL to every process of session sid: the job this
// test started with Setsid (mpirun, whose id is sid, and its ranks).
func killSession(t *testing.T, sid int) {
	t.Helper()
	for _, pid := range sessionProcs(sid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// While a job runs with a checkpoint directory, a second mpirun job given
// the same directory fails at its start, naming the directory and the
// first job's pid and host, and the first job's lock file names it.
// Minibatch and pipe.
func TestSecondJobOnCheckpointDirRefused(t *testing.T) {
	skipUnlessMPI(t)
	const np = 2
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"minibatch", []string{"train", "--data", "data/cora", "--model", "sage", "--epochs", "100000"}},
		{"pipe", []string{"train", "--mode", "pipe", "--chunks", "2", "--data", "data/cora", "--model", "gcnii", "--layers", "4", "--hidden", "16", "--epochs", "100000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ckdir := filepath.Join(t.TempDir(), "ck")
			// The lock is taken at the start; no checkpoint need be written
			// (one every epoch of Cora is hundreds a second, whose writes
			// slowed the second job's start to over a minute).
			args := append(tc.args, "--checkpoint", ckdir, "--checkpoint-every", "100000")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			first := startSession(t, ctx, np, args...)
			defer func() {
				killSession(t, first.Process.Pid)
				_ = first.Wait()
				waitSessionGone(t, first.Process.Pid)
			}()
			var holder struct {
				Host string `json:"host"`
				PID  int    `json:"pid"`
			}
			for holder.PID == 0 && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
				if b, err := os.ReadFile(filepath.Join(ckdir, "gnnmpi.lock")); err == nil {
					_ = json.Unmarshal(b, &holder)
				}
			}
			require.NotZero(t, holder.PID, "the first job took no lock")

			// Its start and MPI_Abort compete with the first job's two busy
			// ranks for the cores: seconds here, once over a minute in the
			// full suite on 2 cores (a hang guard, not a speed check).
			r := mpirun(t, 3*time.Minute, np, bin, args...)
			t.Logf("the second job ended %v after its start", r.took)
			require.NotEqual(t, 0, r.code, "the second job must fail")
			require.Contains(t, r.stderr, fmt.Sprintf("gnnmpi: rank 0: train: checkpoint directory %s is in use by another job (pid %d on host %s, %d ranks, since ", ckdir, holder.PID, holder.Host, np))
			require.NotEmpty(t, sessionProcs(first.Process.Pid), "the first job still runs")
			b, err := os.ReadFile(filepath.Join(ckdir, "gnnmpi.lock"))
			require.NoError(t, err)
			require.Contains(t, string(b), fmt.Sprintf(`"pid":%d`, holder.PID), "and holds the lock")
		})
	}
}
