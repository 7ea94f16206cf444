package cli

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"gnnmpi/collective/collectivetest"
	"gnnmpi/metrics"
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
					nc, err := nccl.NewCounted(env.Comm, nccl.NewHostMemory())
					if err != nil {
						return fmt.Errorf("selftest --backend nccl: %w", err)
					}
					env.Comm, env.Backend = nc, "nccl"
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
	var injected error
	outcomes, err := collectivetest.Verdict(c, collectivetest.Hooks{
		Before: func(i int, tc collectivetest.Case) error {
			if i != failAfter || c.Rank() != failRank {
				return nil
			}
			env.Progress("rank %d: injected failure (%s)", failRank, failMode)
			fmt.Fprintf(env.Err, "gnnmpi: rank %d: injected failure (%s) before case %s\n", c.Rank(), failMode, tc.Name)
			switch failMode {
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
			injected = fmt.Errorf("selftest: injected failure on rank %d", c.Rank())
			return injected
		},
		Failed: func(tc collectivetest.Case, err error) {
			fmt.Fprintf(env.Err, "gnnmpi: rank %d: selftest %s: %v\n", c.Rank(), tc.Name, err)
		},
	})
	switch {
	case injected != nil:
		return injected
	case err != nil:
		return fmt.Errorf("selftest %w", err)
	}
	rec := &metrics.Selftest{Cases: map[string]string{}}
	for _, o := range outcomes {
		switch {
		case !o.Ran:
			rec.Cases[o.Name] = "skip"
			env.Printf("  %-24s skip (needs %d ranks)\n", o.Name, o.MinRanks)
		case o.FailedRanks > 0:
			rec.Failed++
			rec.Cases[o.Name] = "fail"
			env.Printf("  %-24s FAIL on %d rank(s)\n", o.Name, o.FailedRanks)
		default:
			rec.Cases[o.Name] = "pass"
			env.Printf("  %-24s ok\n", o.Name)
		}
	}
	env.Printf("selftest: %d ranks, backend %s: %d of %d cases failed\n", c.Size(), env.Backend, rec.Failed, len(outcomes))
	if err := env.Finish(rec); err != nil {
		return err
	}
	if rec.Failed > 0 {
		return fmt.Errorf("selftest: %d cases failed", rec.Failed)
	}
	return nil
}
