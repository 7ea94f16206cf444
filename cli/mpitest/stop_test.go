package mpitest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A stop signal (train --checkpoint-on-signal) sent mid-run to mpirun or to
// one rank only, under mpirun at np 2, in minibatch mode and in GNNPipe's
// full-graph mode: every rank stops at the same boundary (minibatch: a
// step inside the epoch the signal came in; pipe: that epoch's end, its
// one optimizer step), the checkpoint is written and a run resumed from it
// ends with exactly the per-epoch losses of an uninterrupted run.
//
// SIGUSR1 to mpirun: Open MPI forwards it to every rank, every rank exits
// 75 and so does mpirun. SIGTERM to mpirun (Open MPI 4.1): mpirun exits 1,
// forwarding SIGTERM and SIGKILLing the ranks odls_base_sigkill_timeout
// (1 s) later; the ranks were seen to die of the SIGTERM (status 143) or
// to stop, report and be killed in MPI_Finalize, so for it the test
// asserts only that the job ends with a failure status. A signal to one
// rank reaches no other process: that rank's request is agreed on by all
// at a step boundary. Each rank runs under a shell that records its exit
// status and stderr. The wall-clock limits are hang guards only; the bound
// of at most two steps after the request is asserted by train's
// TestStopInsideEpochResumesExactly.
func TestStopSignalResumesExactly(t *testing.T) {
	skipUnlessMPI(t)
	const np = 2
	modes := []struct {
		name   string
		epochs int
		args   []string
	}{
		// 2 vertices a minibatch: about 35 steps an epoch on cora.
		{"minibatch", 6, []string{"train", "--data", "data/cora", "--model", "sage", "--batch-size", "2", "--eval-every", "0"}},
		// An epoch takes milliseconds: enough of them that the signal
		// comes before the last.
		{"pipe", 60, []string{"train", "--mode", "pipe", "--chunks", "2", "--data", "data/cora", "--model", "gcnii", "--layers", "4", "--hidden", "16", "--snapshot-every", "3"}},
	}
	for _, mode := range modes {
		epochs := mode.epochs
		args := append(append([]string{}, mode.args...), "--epochs", fmt.Sprint(epochs), "--seed", "5")
		var full []epochLine
		for _, tc := range []struct {
			sig    syscall.Signal
			toRank int // −1: to mpirun
		}{{syscall.SIGUSR1, -1}, {syscall.SIGTERM, -1}, {syscall.SIGUSR1, 1}, {syscall.SIGTERM, 1}} {
			to := "mpirun"
			if tc.toRank >= 0 {
				to = fmt.Sprintf("rank%d", tc.toRank)
			}
			t.Run(fmt.Sprintf("%s/%v/%s", mode.name, tc.sig, to), func(t *testing.T) {
				if tc.toRank < 0 {
					needOpenMPI(t, "mpirun forwarding SIGUSR1 and SIGTERM to the ranks is Open MPI's behaviour")
				}
				dir := t.TempDir()
				if full == nil {
					m := filepath.Join(dir, "full.jsonl")
					r := mpirun(t, 3*time.Minute, np, bin, append(args, "--metrics", m)...)
					require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
					full, _ = readMetrics(t, m)
					require.Len(t, full, epochs)
				}

				ckdir := filepath.Join(dir, "ck")
				ckargs := append(append([]string{}, args...), "--checkpoint", ckdir, "--checkpoint-every", "100")
				stopped := filepath.Join(dir, "stopped.jsonl")
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				// Each rank runs under a shell that keeps its stderr and exit
				// status in files of its own: mpirun's relay of the ranks'
				// output ends with mpirun, which SIGTERM ends first.
				status := filepath.Join(dir, "rank")
				script := `trap : TERM USR1; r=${OMPI_COMM_WORLD_RANK:-$PMI_RANK}; "$@" 2>"$0$r.err"; s=$?; echo $s >"$0$r.status"; exit $s`
				argv, env := launchCmd(np, "sh", append([]string{"-c", script, status, bin}, append(ckargs, "--metrics", stopped)...)...)
				cmd := exec.CommandContext(ctx, impl.launcher, argv...)
				cmd.Dir = root
				cmd.Env = append(os.Environ(), env...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
				var se bytes.Buffer
				cmd.Stderr = &se
				require.NoError(t, cmd.Start())
				defer killSession(t, cmd.Process.Pid)
				// Wait for epoch 2's record, then signal: epoch 3 has begun.
				const seen = 2
				for countLines(stopped) < seen && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
				require.NoError(t, ctx.Err(), "no epoch ended")
				target := cmd.Process.Pid
				if tc.toRank >= 0 {
					target = rankPID(t, cmd.Process.Pid, tc.toRank)
				}
				sent := time.Now()
				require.NoError(t, syscall.Kill(target, tc.sig))
				err := cmd.Wait()
				took := time.Since(sent)
				require.NoError(t, ctx.Err(), "the job did not end")
				waitSessionGone(t, cmd.Process.Pid)
				code := cmd.ProcessState.ExitCode()
				t.Logf("mpirun exited %d (%v) %v after the signal; its stderr:\n%s", code, err, took, se.String())
				if tc.sig == syscall.SIGTERM && tc.toRank < 0 {
					// Open MPI 4.1 forwards SIGTERM to the ranks and SIGKILLs
					// them odls_base_sigkill_timeout (1 s) later: a rank either
					// dies of the SIGTERM (143) or stops, reports and is killed
					// in MPI_Finalize, mpirun having gone. Not a stop to rely on.
					require.NotZero(t, code)
					for r := range np {
						b, err := os.ReadFile(fmt.Sprintf("%s%d.status", status, r))
						t.Logf("rank %d: exit status %q (%v)", r, b, err)
						require.NotEqual(t, "0\n", string(b), "rank %d", r)
					}
					return
				}
				// Every rank stops, reports (rank 0) and finalizes: after
				// MPI_Finalize they exit 75 together, and a rank that is
				// still on its way out when mpirun has seen the first 75
				// is killed by mpirun's abort on a non-zero status (SIGTERM:
				// 143). At least one exits 75 itself, and none otherwise.
				var own int
				for r := range np {
					b, err := os.ReadFile(fmt.Sprintf("%s%d.status", status, r))
					require.NoError(t, err, "rank %d left no exit status", r)
					require.Contains(t, []string{"75\n", "143\n"}, string(b), "rank %d's exit status", r)
					if string(b) == "75\n" {
						own++
					}
				}
				require.Positive(t, own, "no rank exited 75")
				b, err := os.ReadFile(status + "0.err")
				require.NoError(t, err)
				stderr := string(b)

				// Rank 0's report: where every rank stopped, the checkpoint,
				// and status 75.
				m := regexp.MustCompile(`gnnmpi: train: stopped on request (?:after step (\d+) of epoch (\d+)|after epoch (\d+)); checkpoint (\S+)`).FindStringSubmatch(stderr)
				require.NotNil(t, m, "no stop report; stderr:\n%s", stderr)
				require.Contains(t, stderr, "gnnmpi: exit status 75 (stopped on request); resume with: gnnmpi ")
				require.Equal(t, ckdir, m[4])
				var resumeEpoch int
				if mode.name == "minibatch" {
					require.NotEmpty(t, m[1], "minibatch stops inside the epoch; stderr:\n%s", stderr)
					step, _ := strconv.Atoi(m[1])
					resumeEpoch, _ = strconv.Atoi(m[2])
					require.Positive(t, step)
					// In the epoch the signal came in: after the one whose
					// end was seen, or later where the ranks ran ahead of
					// the test's polling and its search for the rank.
					require.Greater(t, resumeEpoch, seen, "stopped after the epoch whose end was seen")
					require.LessOrEqual(t, resumeEpoch, epochs, "the signal came before the run ended")
				} else {
					require.NotEmpty(t, m[3], "pipe stops at an epoch's end; stderr:\n%s", stderr)
					e, _ := strconv.Atoi(m[3])
					require.Greater(t, e, seen, "stopped after the epoch whose end was seen")
					require.Less(t, e, epochs, "the signal came before the last epoch")
					resumeEpoch = e + 1
				}
				require.Equal(t, 75, code, "every rank exited 75 and so does mpirun; stderr:\n%s", stderr)

				resumed := filepath.Join(dir, "resumed.jsonl")
				r := mpirun(t, 3*time.Minute, np, bin, append(ckargs, "--resume", "--metrics", resumed)...)
				require.Equal(t, 0, r.code, "stderr:\n%s", r.stderr)
				require.Contains(t, r.stderr, "resumed from")
				got, _ := readMetrics(t, resumed)
				require.Len(t, got, epochs-resumeEpoch+1)
				require.Equal(t, resumeEpoch, got[0].Epoch)
				require.Equal(t, lossesOf(full[resumeEpoch-1:]), lossesOf(got), "bit-identical losses after the resume")
			})
		}
	}
}

// countLines returns the number of complete lines in the file at path (0
// when there is none).
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte{'\n'})
}

// rankPID returns the pid of rank of the job in session sid: the process
// of bin whose environment names that rank (Open MPI's
// OMPI_COMM_WORLD_RANK, MPICH's PMI_RANK).
func rankPID(t *testing.T, sid, rank int) int {
	t.Helper()
	want := [][]byte{[]byte(fmt.Sprintf("OMPI_COMM_WORLD_RANK=%d", rank)), []byte(fmt.Sprintf("PMI_RANK=%d", rank))}
	for _, pid := range sessionProcs(sid) {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe != bin {
			continue
		}
		env, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for _, v := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(v, want[0]) || bytes.Equal(v, want[1]) {
				return pid
			}
		}
	}
	t.Fatalf("no process of rank %d in session %d", rank, sid)
	return 0
}
