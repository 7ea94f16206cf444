// Command gnnmpi trains graph neural networks on HPC clusters. Every rank
// runs this same binary (mpirun, srun); ranks communicate only through the
// collectives of package collective.
//
// Usage:
//
//	gnnmpi [--ranks N] [--metrics FILE] [--json] COMMAND [flags]
//	mpirun -np N gnnmpi COMMAND [flags]
//
// Under an MPI launcher the MPI backend is used; otherwise --ranks N runs N
// ranks as goroutines of this process (default 1). After MPI starts, an
// error or panic on any rank aborts the whole job (MPI_Abort) with a non-zero
// exit status.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas"
	gonumblas "gonum.org/v1/gonum/blas/gonum"

	"gnnmpi/cli"
	"gnnmpi/collective"
	"gnnmpi/collective/inproc"
	"gnnmpi/collective/mpi"
	"gnnmpi/gpu"
	"gnnmpi/gpu/cuda"
	"gnnmpi/internal/cores"
	"gnnmpi/internal/memlimit"
	"gnnmpi/internal/openblas"
	"gnnmpi/nccl"
	"gnnmpi/train"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type globalFlags struct {
	ranks       int
	metrics     string
	json        bool
	commTimeout time.Duration
	// commTimeoutSet says --comm-timeout was given: under MPI the
	// watchdog is on only then (a long single-rank step, METIS on rank 0
	// of a large graph, would trip a default).
	commTimeoutSet bool
	blas           string
	blasThreads    int
	cpuprofile     string
	memprofile     string
	mpiThread      string
}

func run(args []string, stdout, stderr io.Writer) int {
	// First: a launcher that started p copies without MPI would get p
	// independent 1-rank jobs.
	if err := mpi.CheckLaunch(os.Getenv); err != nil {
		fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
		return 2
	}
	cmd, runCmd, g, code := parseArgs(args, stdout, stderr)
	if cmd == nil {
		return code
	}
	setBLASThreads(g.blasThreads, os.Getenv)
	setProcs(os.Getenv)
	setMemoryLimit(os.Getenv)
	memlimit.StartAnonWatch(50 * time.Millisecond)
	impl, blasName, err := pickBLAS(g.blas)
	if err != nil {
		fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
		return 2
	}
	// The backends every command gets: the dense products, and the CUDA
	// and NCCL libraries, loaded at run time when --device cuda needs them.
	gpu := train.Backends{CUDADeviceCount: cuda.DeviceCount, OpenCUDA: cuda.Open, NewNCCL: nccl.New}
	setBackends := func(env *cli.Env) { env.BLAS, env.BLASName, env.GPU = impl, blasName, gpu }
	if _, err := mpi.ParseThreading(g.mpiThread); err != nil {
		fmt.Fprintf(stderr, "gnnmpi: --mpi-thread: %v\n", err)
		return 2
	}
	if g.cpuprofile != "" {
		stop, err := startCPUProfile(g.cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
			return 1
		}
		defer stop()
	}
	if g.memprofile != "" {
		defer func() {
			if err := writeHeapProfile(g.memprofile); err != nil {
				fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
			}
		}()
	}
	var metrics io.Writer
	if g.metrics != "" {
		f, err := os.OpenFile(g.metrics, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
			return 1
		}
		defer f.Close()
		metrics = f
	}
	launched := mpi.Launched(os.Getenv)
	if launched {
		if g.ranks > 0 {
			fmt.Fprintf(stderr, "gnnmpi: --ranks runs in-process ranks and cannot be combined with an MPI launcher\n")
			return 2
		}
		if !mpi.Available {
			// A nompi binary under mpirun would run p independent copies.
			fmt.Fprintf(stderr, "gnnmpi: %v\n", mpi.ErrNoMPI)
			return 1
		}
		return runMPI(cmd.Name, runCmd, setBackends, g, metrics, stdout, stderr)
	}
	p := max(g.ranks, 1)
	// The in-process ranks write from goroutines of their own, and one
	// left behind by a failed job (inproc.Options.Grace) may still write
	// while the error is printed.
	stdout, stderr = &lockedWriter{w: stdout}, &lockedWriter{w: stderr}
	// Each rank's counters, kept here so that a call blocked past
	// --comm-timeout is reported with its rank's phase, as under MPI.
	stats := make([]*collective.Stats, p)
	for r := range stats {
		stats[r] = collective.NewStats()
	}
	opt := inproc.Options{Timeout: g.commTimeout, Describe: func(r int) string {
		if ph := stats[r].Phase(); ph != "" {
			return "phase " + ph
		}
		return ""
	}}
	err = inproc.Run(p, opt, func(c collective.Comm) error {
		env := cli.NewEnv(collective.WithStats(c, stats[c.Rank()]), "inproc", cmd.Name, stdout, stderr, metrics, g.json)
		setBackends(env)
		return runCmd(env)
	})
	if st := stoppedOf(err); st != nil {
		reportStopped(stderr, st, args)
		return train.ExitStopped
	}
	if err != nil {
		fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
		return 1
	}
	return 0
}

// lockedWriter serialises the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes b to the underlying writer, one write at a time.
func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// stoppedOf returns the *train.Stopped that err wraps, or nil.
func stoppedOf(err error) *train.Stopped {
	var st *train.Stopped
	if errors.As(err, &st) {
		return st
	}
	return nil
}

// reportStopped tells how a run stopped on request (a signal: train
// --checkpoint-on-signal) and how to resume it: the same command with
// --resume.
func reportStopped(w io.Writer, st *train.Stopped, args []string) {
	fmt.Fprintf(w, "gnnmpi: %v\n", st)
	if st.Checkpoint == "" {
		fmt.Fprintf(w, "gnnmpi: exit status %d (stopped on request)\n", train.ExitStopped)
		return
	}
	cmd := append([]string{"gnnmpi"}, args...)
	if !slices.Contains(args, "--resume") && !slices.Contains(args, "-resume") {
		cmd = append(cmd, "--resume")
	}
	fmt.Fprintf(w, "gnnmpi: exit status %d (stopped on request); resume with: %s\n", train.ExitStopped, strings.Join(cmd, " "))
}

// parseArgs parses the global flags and the command's own, on every rank
// before the backend starts, so that a bad flag fails every rank alike
// without a collective. It returns the command and the function running
// it, or a nil command and the exit code (0 after -h or help).
func parseArgs(args []string, stdout, stderr io.Writer) (cmd *cli.Command, runCmd func(*cli.Env) error, g globalFlags, code int) {
	fs := flag.NewFlagSet("gnnmpi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&g.ranks, "ranks", 0, "run N ≥ 1 in-process ranks (goroutines) instead of MPI processes (default 1)")
	fs.StringVar(&g.metrics, "metrics", "", "append JSONL metrics to this file (rank 0)")
	fs.BoolVar(&g.json, "json", false, "print the final metrics object as JSON")
	fs.DurationVar(&g.commTimeout, "comm-timeout", 10*time.Minute, "fail a communication call blocked longer than this: in-process ranks (default 10m), and under MPI when given, MPI calls and NCCL's waits for the device alike (the rank reports the call and phase and aborts the job: a hung peer or a cut link); 0: no limit")
	fs.StringVar(&g.blas, "blas", "openblas", "dense products: openblas (gonum's netlib binding) or gonum (pure Go)")
	fs.IntVar(&g.blasThreads, "blas-threads", 0, "OpenBLAS threads per rank (0: $OPENBLAS_NUM_THREADS if set, else 1: gnnmpi's own kernels use the cores, and idle OpenBLAS threads spin on them)")
	fs.StringVar(&g.cpuprofile, "cpuprofile", "", "write a CPU profile of this process to FILE (under MPI: FILE.RANK)")
	fs.StringVar(&g.memprofile, "memprofile", "", "write a heap profile of this process (in use and allocated, by call site) to FILE at the end (under MPI: FILE.RANK)")
	fs.StringVar(&g.mpiThread, "mpi-thread", "multiple", "under MPI: multiple (MPI_THREAD_MULTIPLE, blocking calls from any thread; funneled if not granted) or funneled (one MPI thread, nonblocking collectives)")
	fs.Usage = func() { cli.Help(stderr) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, g, 0
		}
		return nil, nil, g, 2
	}
	ranksSet := false
	fs.Visit(func(f *flag.Flag) {
		g.commTimeoutSet = g.commTimeoutSet || f.Name == "comm-timeout"
		ranksSet = ranksSet || f.Name == "ranks"
	})
	if ranksSet && g.ranks < 1 {
		fmt.Fprintf(stderr, "gnnmpi: --ranks %d: run at least 1 rank\n", g.ranks)
		return nil, nil, g, 2
	}
	if g.commTimeout < 0 {
		fmt.Fprintf(stderr, "gnnmpi: --comm-timeout %v: want a positive duration, or 0 for no limit\n", g.commTimeout)
		return nil, nil, g, 2
	}
	rest := fs.Args()
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "-h" || rest[0] == "--help" {
		cli.Help(stdout)
		if len(rest) == 0 {
			return nil, nil, g, 2
		}
		return nil, nil, g, 0
	}
	if cmd = cli.Lookup(rest[0]); cmd == nil {
		fmt.Fprintf(stderr, "gnnmpi: unknown command %q\n\n", rest[0])
		cli.Help(stderr)
		return nil, nil, g, 2
	}
	cfs := flag.NewFlagSet("gnnmpi "+cmd.Name, flag.ContinueOnError)
	cfs.SetOutput(stderr)
	cfs.BoolVar(&g.json, "json", g.json, "print the final metrics object as JSON")
	cfs.StringVar(&g.metrics, "metrics", g.metrics, "append JSONL metrics to this file (rank 0)")
	runCmd = cmd.Flags(cfs)
	cfs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gnnmpi %s %s [flags]\n\n%s\n\nflags:\n", cmd.Name, cmd.Usage, cmd.Summary)
		cfs.PrintDefaults()
	}
	if err := cfs.Parse(interleave(cfs, rest[1:])); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, g, 0
		}
		return nil, nil, g, 2
	}
	return cmd, runCmd, g, 0
}

// startCPUProfile starts a CPU profile written to path (under MPI,
// path.RANK) and returns what stops it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(rankPath(path))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// rankPath returns path with ".RANK" added under MPI: the rank that
// mpirun (OMPI_COMM_WORLD_RANK), srun --mpi=pmix (PMIX_RANK) or a PMI
// launcher such as Hydra's mpiexec (PMI_RANK) gave this process.
func rankPath(path string) string {
	for _, v := range []string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"} {
		if r := os.Getenv(v); r != "" {
			return path + "." + r
		}
	}
	return path
}

// writeHeapProfile writes the heap profile (pprof's "heap": the memory in
// use at the last collection and all allocations, by call site) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(rankPath(path))
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runMPI runs the command on this MPI rank. Any error or panic after MPI
// starts ends the whole job through MPI_Abort, so no rank is left waiting.
func runMPI(name string, runCmd func(*cli.Env) error, setBackends func(*cli.Env), g globalFlags, metrics io.Writer, stdout, stderr io.Writer) (code int) {
	th, _ := mpi.ParseThreading(g.mpiThread) // checked by run
	world, err := mpi.InitThreading(th)
	if err != nil {
		fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
		return 1
	}
	if err := mpi.CheckWorld(os.Getenv, world.Size()); err != nil {
		// Each task is a world of its own: every one prints and exits.
		fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
		_ = mpi.Finalize()
		return 2
	}
	comm := collective.WithStats(world, nil)
	if g.commTimeoutSet {
		mpi.SetCallTimeout(g.commTimeout, func() string { return "phase " + collective.PhaseOf(comm) })
		nccl.SetWaitTimeout(g.commTimeout) // NCCL's waits for the device
	}
	fail := func(err error) {
		if errors.Is(err, collective.ErrAborted) {
			// Another rank failed and is aborting the job; give it the time
			// to print its error, then make sure the job ends.
			time.Sleep(3 * time.Second)
		} else {
			fmt.Fprintf(stderr, "gnnmpi: rank %d: %v\n", world.Rank(), err)
		}
		if world.Size() > 1 {
			collective.Abort(world, 1)
		}
		_ = mpi.Finalize()
	}
	defer func() {
		if v := recover(); v != nil {
			fail(fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
			code = 1
		}
	}()
	env := cli.NewEnv(comm, "mpi", name, stdout, stderr, metrics, g.json)
	setBackends(env)
	env.MPI = &cli.MPIAccess{Handle: mpi.FortranHandle, Call: mpi.Call}
	if err := runCmd(env); err != nil {
		if st := stoppedOf(err); st != nil {
			// Every rank stopped at the same boundary, the checkpoint
			// written: an orderly end, no abort.
			if world.Rank() == 0 {
				reportStopped(stderr, st, os.Args[1:])
			}
			if err := mpi.Finalize(); err != nil {
				fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
				return 1
			}
			return train.ExitStopped
		}
		fail(err)
		return 1
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintf(stderr, "gnnmpi: %v\n", err)
		return 1
	}
	return 0
}

// interleave moves positional arguments after the flags, so that
// `gnnmpi gen rmat --scale 20` parses like `gnnmpi gen --scale 20 rmat`.
func interleave(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			pos = append(pos, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
			// A non-boolean flag without "=" takes the next argument.
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(fs, a) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			pos = append(pos, a)
		}
	}
	return append(flags, pos...)
}

func isBoolFlag(fs *flag.FlagSet, arg string) bool {
	f := fs.Lookup(strings.TrimLeft(arg, "-"))
	if f == nil {
		return true // unknown: let Parse report it
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// setBLASThreads sets OpenBLAS's thread count: n if positive, else
// $OPENBLAS_NUM_THREADS if set (OpenBLAS read it at start-up), else 1.
func setBLASThreads(n int, getenv func(string) string) {
	if n <= 0 {
		if getenv("OPENBLAS_NUM_THREADS") != "" {
			return
		}
		n = 1
	}
	openblas.SetThreads(n)
}

// setProcs lowers GOMAXPROCS to the cores this rank can use
// (cores.PerRank) when a launcher started several ranks on this host, so
// that the ranks' parallel loops do not take turns on shared cores,
// unless $GOMAXPROCS is set. The ranks on the host come from the
// launcher's variables (gpu.LocalRankFromEnv); in-process ranks share one
// process, whose GOMAXPROCS stays.
func setProcs(getenv func(string) string) {
	if getenv("GOMAXPROCS") != "" || !mpi.Launched(getenv) {
		return
	}
	if _, local, ok := gpu.LocalRankFromEnv(getenv); ok && local > 1 {
		runtime.GOMAXPROCS(cores.Mine(local))
	}
}

// pickBLAS returns the dense-product implementation named by --blas. A
// binary built with -tags noblas has only the pure-Go one.
func pickBLAS(name string) (blas.Float32Level3, string, error) {
	switch name {
	case "openblas":
		if !openblas.Available {
			return gonumblas.Implementation{}, "gonum", nil
		}
		return openblas.Implementation(), openblas.Name(), nil
	case "gonum":
		return gonumblas.Implementation{}, "gonum", nil
	}
	return nil, "", fmt.Errorf("unknown --blas %q (want openblas or gonum)", name)
}

// setMemoryLimit gives the Go collector a soft limit of 90% of what this
// process may allocate (internal/memlimit: the memory cgroup's limit, the
// address-space rlimit, or MemAvailable), unless GOMEMLIMIT sets one: near
// a cgroup's limit the heap is then collected harder instead of growing to
// twice its live size and meeting the kernel's out-of-memory killer.
func setMemoryLimit(getenv func(string) string) {
	if getenv("GOMEMLIMIT") != "" {
		return
	}
	if b := memlimit.Available(); b.Source != "unknown" && b.Bytes > 0 {
		debug.SetMemoryLimit(b.Bytes / 10 * 9)
	}
}
