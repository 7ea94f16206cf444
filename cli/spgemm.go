package cli

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gnnmpi/graph"
	"gnnmpi/metrics"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

func spgemmCmd() *Command {
	return &Command{
		Name:    "spgemm",
		Summary: "distributed sparse matrix product C = A·B (local, 1D, 1.5D, 2D SUMMA) of Matrix Market files",
		Usage:   "--a A.mtx [--b B.mtx | --square] --algo local|1d|1.5d|2d",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			cfg := &spgemmConfig{algo: spgemm.Algo1D, semiring: spgemm.SemiringPlusTimes}
			fs.StringVar(&cfg.a, "a", "", "A: Matrix Market file (.mtx or .mtx.gz)")
			fs.StringVar(&cfg.b, "b", "", "B: Matrix Market file")
			fs.BoolVar(&cfg.square, "square", false, "B = A (computes A·A)")
			fs.Var(&cfg.algo, "algo", "algorithm: local (rank 0 alone), 1d, 1.5d or 2d")
			fs.IntVar(&cfg.c, "c", 0, "1.5d: replication factor c, dividing the rank count (0: the c with the least predicted traffic, see spgemm.Choose15D)")
			fs.StringVar(&cfg.grid, "grid", "", "2d: grid PRxPC with PR·PC ranks (default: the most nearly square, e.g. 2x3 for 6)")
			fs.Var(&cfg.semiring, "semiring", "plus-times, min-plus (pattern entries weigh 1) or or-and")
			fs.IntVar(&cfg.threads, "threads", 0, "goroutines of each local product (0: all cores for local, 1 per rank otherwise)")
			fs.BoolVar(&cfg.staged, "staged", false, "1.5d/2d: multiply every stage as it arrives and sum (default: one product after the stages)")
			fs.IntVar(&cfg.rows, "rows", 0, "multiply only K random rows of A (the sampler's Q·A shape; 0: all rows)")
			fs.Uint64Var(&cfg.seed, "seed", 1, "random seed of --rows")
			fs.IntVar(&cfg.reps, "reps", 1, "repetitions; the median time is reported")
			fs.BoolVar(&cfg.verify, "verify", false, "check every rank's block of C against the local product, exactly")
			fs.StringVar(&cfg.out, "out", "", "write C to this Matrix Market file (gathered on rank 0)")
			return func(env *Env) error { return runSpGEMM(env, cfg) }
		},
	}
}

type spgemmConfig struct {
	a, b, grid, out        string
	algo                   spgemm.Algo
	semiring               spgemm.Semiring
	square, staged, verify bool
	c, threads, rows, reps int
	seed                   uint64
	pr, pc                 int // resolved grid
}

// check validates the flags on every rank, before any communication, and
// resolves the defaults that depend on the rank count p.
func (cfg *spgemmConfig) check(p int) error {
	if cfg.a == "" {
		return fmt.Errorf("spgemm: --a is required")
	}
	if (cfg.b == "") == !cfg.square {
		return fmt.Errorf("spgemm: give exactly one of --b and --square")
	}
	if cfg.reps < 1 || cfg.rows < 0 {
		return fmt.Errorf("spgemm: --reps must be ≥ 1 and --rows ≥ 0")
	}
	switch cfg.algo {
	case spgemm.Algo15D:
		if cfg.c == 0 {
			break // chosen from the operands, in spgemmSR
		}
		if cfg.c < 1 || p%cfg.c != 0 {
			var ok []string
			for c := 1; c <= p; c++ {
				if p%c == 0 {
					ok = append(ok, strconv.Itoa(c))
				}
			}
			return fmt.Errorf("spgemm: --c %d does not divide the %d ranks (1.5d needs a (p/c)×c grid; valid c: %s)", cfg.c, p, strings.Join(ok, ", "))
		}
		cfg.pr, cfg.pc = p/cfg.c, cfg.c
	case spgemm.Algo2D:
		if cfg.grid != "" { // else Bench takes collective.GridDims
			x, y, ok := strings.Cut(cfg.grid, "x")
			pr, err1 := strconv.Atoi(x)
			pc, err2 := strconv.Atoi(y)
			if !ok || err1 != nil || err2 != nil || pr < 1 || pc < 1 || pr*pc != p {
				return fmt.Errorf("spgemm: --grid %q: want PRxPC with PR·PC = %d ranks", cfg.grid, p)
			}
			cfg.pr, cfg.pc = pr, pc
		}
	}
	if cfg.threads <= 0 {
		cfg.threads = 1
		if cfg.algo == spgemm.AlgoLocal {
			cfg.threads = runtime.GOMAXPROCS(0)
		}
	}
	return nil
}

func runSpGEMM(env *Env, cfg *spgemmConfig) error {
	c := env.Comm
	if err := cfg.check(c.Size()); err != nil {
		return err
	}
	// Rank 0 reads, then broadcasts (phase load).
	t0 := time.Now()
	paths := []string{cfg.a}
	if cfg.b != "" {
		paths = append(paths, cfg.b)
	}
	ms, err := graph.BcastMatrixMarket(c, paths, func(ms []*sparse.CSR) error {
		a := ms[0]
		if len(ms) > 1 && a.NCols != ms[1].NRows {
			return fmt.Errorf("spgemm: %s is %d×%d and %s is %d×%d: A·B needs A's columns = B's rows",
				cfg.a, a.NRows, a.NCols, cfg.b, ms[1].NRows, ms[1].NCols)
		}
		if cfg.rows > int(a.NRows) {
			return fmt.Errorf("spgemm: --rows %d exceeds the %d rows of %s", cfg.rows, a.NRows, cfg.a)
		}
		return nil
	}, env.Progress)
	if err != nil {
		return err
	}
	a, b := ms[0], ms[len(ms)-1]
	load := time.Since(t0).Seconds()
	switch cfg.semiring {
	case spgemm.SemiringMinPlus:
		return spgemmSR(env, cfg, sparse.MinPlus[float64]{}, weighted(a), weighted(b), load)
	case spgemm.SemiringOrAnd:
		return spgemmSR(env, cfg, sparse.OrAnd{}, boolean(a), boolean(b), load)
	}
	return spgemmSR(env, cfg, sparse.PlusTimes[float64]{}, a, b, load)
}

// weighted returns a with every entry of a pattern weighing 1.
func weighted(a *sparse.CSR) *sparse.CSR {
	if a.Values != nil {
		return a
	}
	v := make([]float64, a.NNZ())
	for q := range v {
		v[q] = 1
	}
	return &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices, Values: v}
}

// boolean returns a with entries true where non-zero; a pattern stays one.
func boolean(a *sparse.CSR) *sparse.Matrix[bool] {
	out := &sparse.Matrix[bool]{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices}
	if a.Values != nil {
		out.Values = make([]bool, len(a.Values))
		for q, v := range a.Values {
			out.Values[q] = v != 0
		}
	}
	return out
}

func spgemmSR[T sparse.Scalar, S sparse.Semiring[T]](env *Env, cfg *spgemmConfig, sr S, a, b *sparse.Matrix[T], load float64) error {
	o := spgemm.BenchOptions{Algo: string(cfg.algo), Threads: cfg.threads, Staged: cfg.staged,
		C: cfg.c, Pr: cfg.pr, Pc: cfg.pc, Reps: cfg.reps, Rows: cfg.rows, Seed: cfg.seed, Verify: cfg.verify,
		Progress: env.Progress, Log: env.Err}
	if cfg.out != "" {
		o.Write = func(c *sparse.CSR) error { return graph.WriteMatrixMarket(cfg.out, c) }
	}
	res, _, free, err := spgemm.Bench(env.Comm, sr, a, b, o)
	if err != nil {
		return err
	}
	defer free()
	res.Semiring, res.A, res.B, res.Load = string(cfg.semiring), cfg.a, cfg.b, load
	if cfg.square {
		res.B = cfg.a
	}
	for _, v := range res.Predicted {
		env.Printf("1.5d c=%d: predicted bytes sent per rank: broadcasts %s, reduction %s\n", v.C, human(int64(v.BcastBytes)), human(int64(v.ReduceBytes)))
	}
	printSpGEMM(env, cfg, res, env.Comm.Size(), load)
	return env.Finish(&metrics.SpGEMMFinal{SpGEMM: metrics.SpGEMM(*res)})
}

// printSpGEMM prints the human-readable summary of a product.
func printSpGEMM(env *Env, cfg *spgemmConfig, res *spgemm.BenchResult, p int, load float64) {
	desc := string(cfg.algo)
	switch cfg.algo {
	case spgemm.Algo15D:
		desc += fmt.Sprintf(" (c=%d, %d×%d grid)", res.C, res.Grid[0], res.Grid[1])
	case spgemm.Algo2D:
		desc += fmt.Sprintf(" (%d×%d grid)", res.Grid[0], res.Grid[1])
	}
	env.Printf("spgemm %s, %s, %d ranks × %d threads: C = A·B is %d×%d (A %d×%d, %d entries; B %d entries)\n",
		desc, cfg.semiring, p, cfg.threads, res.M, res.N, res.M, res.K, res.NNZARows, res.NNZB)
	env.Printf("time      %.4fs median of %d (min %.4fs), slowest rank; load %.2fs\n", res.Seconds, cfg.reps, res.SecondsMin, load)
	env.Printf("flops     %d, %.1f MFLOP/s\n", res.Flops, res.MFLOPS)
	env.Printf("nnz(C)    %d, sum %.17g, checksum %s\n", res.NNZC, res.SumC, res.Checksum)
	env.Printf("bytes     per rank sent %v, received %v; max sent %s, total sent %s\n",
		res.SentPerRank, res.RecvPerRank, human(res.MaxSent), human(res.TotalSent))
	if res.Verified != nil {
		env.Printf("verified  every block equals the local product\n")
	}
}
