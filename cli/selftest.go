package cli

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"gnnmpi/collective"
	"gnnmpi/collective/collectivetest"
	"gnnmpi/nccl"
)

func selftestCmd() *Command {
	return &Command{
		Name:    "selftest",
		Summary: "run the collective conformance suite on this backend (checks an MPI installation)",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			failRank := fs.Int("fail-rank", -1, "fault injection: this rank fails (-1: none)")
			failMode := fs.String("fail-mode", "error", "how the rank fails: error (returns an error), panic, exit (exits without finalizing MPI), kill (SIGKILL itself), hang (blocks forever without communicating: the others' --comm-timeout ends the job)")
			failAfter := fs.Int("fail-after", 3, "the failing rank fails after this many cases")
			backend := fs.String("backend", "", "run the suite on this backend instead of the launcher's: nccl (NCCL over the MPI ranks, staging through host memory: for an NCCL that takes host pointers, such as the tests' fake; "+nccl.LibDirEnv+" names its directory)")
			return func(env *Env) error {
				switch *backend {
				case "":
				case "nccl":
					if env.Backend != "mpi" {
						return fmt.Errorf("selftest --backend nccl: runs under mpirun (the MPI backend), not %s", env.Backend)
					}
					nc, err := nccl.New(env.Comm, nccl.NewHostMemory())
					if err != nil {
						return fmt.Errorf("selftest --backend nccl: %w", err)
					}
					env.Comm = collective.WithStats(nc, collective.StatsOf(env.Comm))
					env.Backend = "nccl"
				default:
					return fmt.Errorf("selftest: unknown --backend %q (want nccl)", *backend)
				}
				return selftest(env, *failRank, *failMode, *failAfter)
			}
		},
	}
}

func selftest(env *Env, failRank int, failMode string, failAfter int) error {
	c := env.Comm
	switch failMode {
	case "error", "panic", "exit", "kill", "hang":
	default:
		return fmt.Errorf("selftest: unknown --fail-mode %q (want error, panic, exit, kill or hang)", failMode)
	}
	cases := collectivetest.Cases()
	failed := make([]int64, len(cases))
	ran := make([]bool, len(cases))
	for i, tc := range cases {
		if i == failAfter && c.Rank() == failRank {
			env.Progress("rank %d: injected failure (%s)", failRank, failMode)
			fmt.Fprintf(env.Err, "gnnmpi: rank %d: injected failure (%s) before case %s\n", c.Rank(), failMode, tc.Name)
			switch failMode {
			case "error":
				return fmt.Errorf("selftest: injected failure on rank %d", c.Rank())
			case "panic":
				panic("selftest: injected panic")
			case "exit":
				os.Exit(3)
			case "kill":
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			case "hang":
				for { // a stuck rank: only a watchdog or the launcher ends the job
					time.Sleep(time.Hour)
				}
			}
		}
		if c.Size() < tc.MinRanks {
			continue
		}
		ran[i] = true
		restore := collective.SetPhase(c, tc.Name)
		err := tc.Fn(c)
		restore()
		if err != nil {
			if collectivetest.IsCommError(err) {
				return fmt.Errorf("selftest %s: %w", tc.Name, err)
			}
			fmt.Fprintf(env.Err, "gnnmpi: rank %d: selftest %s: %v\n", c.Rank(), tc.Name, err)
			failed[i] = 1
		}
	}
	restore := collective.SetPhase(c, "verdict")
	if err := collective.AllreduceSlice(c, failed, collective.Sum); err != nil {
		return err
	}
	restore()
	nfail := 0
	results := map[string]string{}
	for i, tc := range cases {
		switch {
		case !ran[i]:
			results[tc.Name] = "skip"
			env.Printf("  %-24s skip (needs %d ranks)\n", tc.Name, tc.MinRanks)
		case failed[i] > 0:
			nfail++
			results[tc.Name] = "fail"
			env.Printf("  %-24s FAIL on %d rank(s)\n", tc.Name, failed[i])
		default:
			results[tc.Name] = "pass"
			env.Printf("  %-24s ok\n", tc.Name)
		}
	}
	env.Printf("selftest: %d ranks, backend %s: %d of %d cases failed\n", c.Size(), env.Backend, nfail, len(cases))
	if err := env.Finish(map[string]any{"cases": results, "failed": nfail}); err != nil {
		return err
	}
	if nfail > 0 {
		return fmt.Errorf("selftest: %d cases failed", nfail)
	}
	return nil
}
