package cli

import (
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"gnnmpi/collective"
	"gnnmpi/graph"
	"gnnmpi/internal/rng"
	"gnnmpi/sparse"
	"gnnmpi/spgemm"
)

func spgemmCmd() *Command {
	return &Command{
		Name:    "spgemm",
		Summary: "distributed sparse matrix product C = A·B (local, 1D, 1.5D, 2D SUMMA) of Matrix Market files",
		Usage:   "--a A.mtx [--b B.mtx | --square] --algo local|1d|1.5d|2d",
		Flags: func(fs *flag.FlagSet) func(*Env) error {
			cfg := &spgemmConfig{}
			fs.StringVar(&cfg.a, "a", "", "A: Matrix Market file (.mtx or .mtx.gz)")
			fs.StringVar(&cfg.b, "b", "", "B: Matrix Market file")
			fs.BoolVar(&cfg.square, "square", false, "B = A (computes A·A)")
			fs.StringVar(&cfg.algo, "algo", "1d", "algorithm: local (rank 0 alone), 1d, 1.5d or 2d")
			fs.IntVar(&cfg.c, "c", 0, "1.5d: replication factor c, dividing the rank count (0: the c with the least predicted traffic, see spgemm.Choose15D)")
			fs.StringVar(&cfg.grid, "grid", "", "2d: grid PRxPC with PR·PC ranks (default: the most nearly square, e.g. 2x3 for 6)")
			fs.StringVar(&cfg.semiring, "semiring", "plus-times", "plus-times, min-plus (pattern entries weigh 1) or or-and")
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
	a, b, algo, grid, semiring, out string
	square, staged, verify          bool
	c, threads, rows, reps          int
	seed                            uint64
	pr, pc                          int // resolved grid
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
	switch cfg.semiring {
	case "plus-times", "min-plus", "or-and":
	default:
		return fmt.Errorf("spgemm: unknown --semiring %q (want plus-times, min-plus or or-and)", cfg.semiring)
	}
	if cfg.reps < 1 || cfg.rows < 0 {
		return fmt.Errorf("spgemm: --reps must be ≥ 1 and --rows ≥ 0")
	}
	switch cfg.algo {
	case "local", "1d":
	case "1.5d":
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
	case "2d":
		cfg.pr, cfg.pc = collective.GridDims(p)
		if cfg.grid != "" {
			x, y, ok := strings.Cut(cfg.grid, "x")
			pr, err1 := strconv.Atoi(x)
			pc, err2 := strconv.Atoi(y)
			if !ok || err1 != nil || err2 != nil || pr < 1 || pc < 1 || pr*pc != p {
				return fmt.Errorf("spgemm: --grid %q: want PRxPC with PR·PC = %d ranks", cfg.grid, p)
			}
			cfg.pr, cfg.pc = pr, pc
		}
	default:
		return fmt.Errorf("spgemm: unknown --algo %q (want local, 1d, 1.5d or 2d)", cfg.algo)
	}
	if cfg.threads <= 0 {
		cfg.threads = 1
		if cfg.algo == "local" {
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
	var a, b *sparse.CSR
	err := RankZero(c, func() error {
		var err error
		env.Progress("reading %s", cfg.a)
		if a, err = graph.ReadMatrixMarket(cfg.a); err != nil {
			return err
		}
		if cfg.b != "" {
			env.Progress("reading %s", cfg.b)
			if b, err = graph.ReadMatrixMarket(cfg.b); err != nil {
				return err
			}
			if a.NCols != b.NRows {
				return fmt.Errorf("spgemm: %s is %d×%d and %s is %d×%d: A·B needs A's columns = B's rows",
					cfg.a, a.NRows, a.NCols, cfg.b, b.NRows, b.NCols)
			}
		}
		if cfg.rows > int(a.NRows) {
			return fmt.Errorf("spgemm: --rows %d exceeds the %d rows of %s", cfg.rows, a.NRows, cfg.a)
		}
		return nil
	})
	if err != nil {
		return err
	}
	restore := collective.SetPhase(c, "load")
	if a, err = spgemm.BcastMatrix(c, a, 0); err != nil {
		return err
	}
	if cfg.square {
		b = a
	} else if b, err = spgemm.BcastMatrix(c, b, 0); err != nil {
		return err
	}
	restore()
	load := time.Since(t0).Seconds()
	switch cfg.semiring {
	case "min-plus":
		return spgemmSR(env, cfg, sparse.MinPlus[float64]{}, weighted(a), weighted(b), load)
	case "or-and":
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

// sampleRows returns k distinct rows of [0, m), sorted, from the rank-free
// stream (seed, "spgemm rows"), so every rank draws the same.
func sampleRows(m int64, k int, seed uint64) []int64 {
	r := rng.New(seed, 0x5367656d6d) // "Sgemm"
	picked := map[int64]bool{}
	out := make([]int64, 0, k)
	if int64(k) > m/2 { // dense: a partial shuffle
		perm := make([]int64, m)
		for i := range perm {
			perm[i] = int64(i)
		}
		for i := range k {
			j := int64(i) + r.Int64N(m-int64(i))
			perm[i], perm[j] = perm[j], perm[i]
		}
		out = append(out, perm[:k]...)
	} else {
		for len(out) < k {
			i := r.Int64N(m)
			if !picked[i] {
				picked[i] = true
				out = append(out, i)
			}
		}
	}
	slices.Sort(out)
	return out
}

// flopsOf returns the scalar products of A·B: Σ over the entries (i, k) of
// A of the length of row k of B.
func flopsOf[T sparse.Scalar](a, b *sparse.Matrix[T]) int64 {
	var f int64
	for _, k := range a.Indices {
		f += b.Indptr[k+1] - b.Indptr[k]
	}
	return f
}

// SpGEMMResult is the outcome of `gnnmpi spgemm`.
type SpGEMMResult struct {
	Algo       string    `json:"algo"`
	Semiring   string    `json:"semiring"`
	Threads    int       `json:"threads"`
	Grid       []int     `json:"grid,omitempty"` // 1.5d: (p/c, c); 2d: (pr, pc)
	Staged     bool      `json:"staged"`
	A          string    `json:"a"`
	B          string    `json:"b"`
	Rows       int       `json:"rows,omitempty"`
	M          int64     `json:"m"`
	K          int64     `json:"k"`
	N          int64     `json:"n"`
	NNZA       int64     `json:"nnz_a"`
	NNZB       int64     `json:"nnz_b"`
	NNZC       int64     `json:"nnz_c"`
	Flops      int64     `json:"flops"`
	Seconds    float64   `json:"seconds"` // median over reps of the slowest rank's time
	SecondsMin float64   `json:"min_seconds"`
	Times      []float64 `json:"times"` // every rep's slowest-rank time
	MFLOPS     float64   `json:"mflops"`
	SumC       float64   `json:"sum_c"`    // sum of the values of C (true entries for or-and)
	Checksum   string    `json:"checksum"` // spgemm.Checksum of C, hex
	Verified   *bool     `json:"verified,omitempty"`
	Load       float64   `json:"load_seconds"`
	C          int       `json:"c,omitempty"` // 1.5d: the replication factor used
	// 1.5d with --c 0: the predicted bytes sent per rank for every c
	// (spgemm.Predict15D), of which the least chose C.
	Predicted []PredictedVolume `json:"predicted,omitempty"`
	// Bytes of one product (phase spgemm), per rank and over ranks.
	SentPerRank []int64 `json:"sent_bytes_per_rank"`
	RecvPerRank []int64 `json:"recv_bytes_per_rank"`
	MaxSent     int64   `json:"max_sent_bytes"`
	MaxRecv     int64   `json:"max_recv_bytes"`
	TotalSent   int64   `json:"total_sent_bytes"`
}

// PredictedVolume is spgemm.Volume15D in the JSON output.
type PredictedVolume struct {
	C           int     `json:"c"`
	BcastBytes  float64 `json:"bcast_bytes"`
	ReduceBytes float64 `json:"reduce_bytes"`
}

// valueSize returns the bytes of a T.
func valueSize[T sparse.Scalar]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

func spgemmSR[T sparse.Scalar, S sparse.Semiring[T]](env *Env, cfg *spgemmConfig, sr S, a, b *sparse.Matrix[T], load float64) error {
	c := env.Comm
	p, me := c.Size(), c.Rank()
	var rows []int64 // the rows of A multiplied, nil for all
	if cfg.rows > 0 {
		rows = sampleRows(a.NRows, cfg.rows, cfg.seed)
	}
	aa := a
	if rows != nil {
		aa = sparse.SelectRows(a, rows)
	}
	res := SpGEMMResult{
		Algo: cfg.algo, Semiring: cfg.semiring, Threads: cfg.threads, Staged: cfg.staged, A: cfg.a, B: cfg.b,
		Rows: cfg.rows, M: aa.NRows, K: a.NCols, N: b.NCols, NNZA: a.NNZ(), NNZB: b.NNZ(), Flops: flopsOf(aa, b), Load: load,
	}
	if cfg.square {
		res.B = cfg.a
	}
	mul, free, err := layoutProduct(env, cfg, sr, a, aa, b, rows, &res)
	if err != nil {
		return err
	}
	defer free()
	cd, first, err := timeProducts(env, cfg, mul, &res)
	if err != nil {
		return err
	}

	// Summaries of C, and the bytes of one product.
	defer collective.SetPhase(c, "verify")()
	if err := summarizeProduct(c, cd, first, &res); err != nil {
		return err
	}
	if cfg.verify {
		env.Progress("verifying against the local product")
		bad := int64(0)
		msg := verifyBlock(sr, cd, a, b, rows, cfg.threads)
		if msg != "" {
			bad = 1
			fmt.Fprintf(env.Err, "gnnmpi: rank %d: spgemm --verify: %s\n", me, msg)
		}
		if bad, err = collective.AllreduceScalar(c, bad, collective.Sum); err != nil {
			return err
		}
		ok := bad == 0
		res.Verified = &ok
		if !ok {
			return fmt.Errorf("spgemm: --verify: %d of %d ranks hold a block that differs from the local product", bad, p)
		}
	}
	if cfg.out != "" {
		full, err := spgemm.Gather(c, cd, 0)
		if err != nil {
			return err
		}
		if err := RankZero(c, func() error { return graph.WriteMatrixMarket(cfg.out, toCSR(full)) }); err != nil {
			return err
		}
	}
	printSpGEMM(env, cfg, &res, aa.NNZ(), p, load)
	return env.Finish(map[string]any{"spgemm": res})
}

// layoutProduct distributes the operands for cfg.algo (the grid's splits
// count under phase setup) and returns the product to time and what frees
// the grid. aa is a, or its rows when rows is not nil. For 1.5d without
// --c it chooses c by predicted traffic and records the predictions in res.
func layoutProduct[T sparse.Scalar, S sparse.Semiring[T]](env *Env, cfg *spgemmConfig, sr S, a, aa, b *sparse.Matrix[T], rows []int64, res *SpGEMMResult) (mul func() (*spgemm.Dist[T], error), free func() error, err error) {
	c := env.Comm
	p, me := c.Size(), c.Rank()
	o := &spgemm.Options{Threads: cfg.threads, Staged: cfg.staged}
	free = func() error { return nil }
	defer collective.SetPhase(c, "setup")()
	switch cfg.algo {
	case "local":
		mul = func() (*spgemm.Dist[T], error) {
			// Rank 0 holds every row; the others hold empty blocks.
			rb := make([]int64, p+1)
			for x := 1; x <= p; x++ {
				rb[x] = aa.NRows
			}
			d := &spgemm.Dist[T]{M: aa.NRows, N: b.NCols, RowBounds: rb, ColBounds: []int64{0, b.NCols}, I: me}
			if me != 0 {
				d.Local = &sparse.Matrix[T]{NCols: b.NCols, Indptr: []int64{0}, Indices: []int64{}, Values: []T{}}
				return d, nil
			}
			var err error
			lo := &sparse.Options{Threads: cfg.threads}
			if rows != nil {
				d.Local, err = sparse.MulRowsSR(sr, rows, a, b, lo)
			} else {
				d.Local, err = sparse.MulSR(sr, a, b, lo)
			}
			return d, err
		}
	case "1d":
		da, db := spgemm.Distribute1D(c, aa), spgemm.Distribute1D(c, b)
		mul = func() (*spgemm.Dist[T], error) { return spgemm.Mul1D(c, sr, da, db, o) }
	case "1.5d", "2d":
		if cfg.algo == "1.5d" && cfg.c == 0 {
			// Every rank holds the same operands, so all choose alike.
			var pred []spgemm.Volume15D
			cfg.c, pred = spgemm.Choose15D(aa, b, p, valueSize[T]())
			cfg.pr, cfg.pc = p/cfg.c, cfg.c
			for _, v := range pred {
				res.Predicted = append(res.Predicted, PredictedVolume{C: v.C, BcastBytes: v.Bcast, ReduceBytes: v.Reduce})
				env.Printf("1.5d c=%d: predicted bytes sent per rank: broadcasts %s, reduction %s\n", v.C, human(int64(v.Bcast)), human(int64(v.Reduce)))
			}
		}
		g, err := collective.NewGrid(c, cfg.pr, cfg.pc)
		if err != nil {
			return nil, nil, err
		}
		free = g.Free
		res.Grid = []int{cfg.pr, cfg.pc}
		if cfg.algo == "1.5d" {
			res.C = cfg.c
			da, db := spgemm.Distribute15D(g, aa), spgemm.Distribute15D(g, b)
			mul = func() (*spgemm.Dist[T], error) { return spgemm.Mul15D(g, sr, da, db, o) }
		} else {
			da, db := spgemm.Distribute2D(g, aa), spgemm.Distribute2D(g, b)
			mul = func() (*spgemm.Dist[T], error) { return spgemm.Mul2D(g, sr, da, db, o) }
		}
	}
	return mul, free, nil
}

// timeProducts runs mul cfg.reps times between barriers and records in res
// the slowest rank's time of each, their median and minimum, and the
// MFLOP/s. It returns the last product and the bytes of the first.
func timeProducts[T sparse.Scalar](env *Env, cfg *spgemmConfig, mul func() (*spgemm.Dist[T], error), res *SpGEMMResult) (*spgemm.Dist[T], collective.Snapshot, error) {
	c := env.Comm
	var cd *spgemm.Dist[T]
	var first collective.Snapshot
	for rep := range cfg.reps {
		cd = nil // let the previous product go before the next
		restore := collective.SetPhase(c, "timing")
		if err := c.Barrier(); err != nil {
			return nil, first, err
		}
		restore()
		before := collective.SnapshotOf(c)
		t := time.Now()
		var err error
		if cd, err = mul(); err != nil {
			return nil, first, err
		}
		dt := time.Since(t).Seconds()
		if rep == 0 {
			first = collective.SnapshotOf(c).Sub(before)
		}
		restore = collective.SetPhase(c, "timing")
		if dt, err = collective.AllreduceScalar(c, dt, collective.Max); err != nil {
			return nil, first, err
		}
		restore()
		res.Times = append(res.Times, dt)
		env.Progress("rep %d: %.3fs", rep+1, dt)
	}
	sorted := slices.Clone(res.Times)
	sort.Float64s(sorted)
	res.Seconds, res.SecondsMin = sorted[len(sorted)/2], sorted[0]
	if len(sorted)%2 == 0 {
		res.Seconds = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	if res.Seconds > 0 {
		res.MFLOPS = float64(res.Flops) / res.Seconds / 1e6
	}
	return cd, first, nil
}

// summarizeProduct records in res C's entries, value sum and checksum, and
// every rank's bytes of one product (first, the snapshot of the first).
func summarizeProduct[T sparse.Scalar](c collective.Comm, cd *spgemm.Dist[T], first collective.Snapshot, res *SpGEMMResult) error {
	var nnz int64
	var vsum float64
	if cd.Replica == 0 {
		nnz = cd.Local.NNZ()
		for _, v := range cd.Local.Values {
			vsum += toFloat(v)
		}
	}
	var err error
	if res.NNZC, err = collective.AllreduceScalar(c, nnz, collective.Sum); err != nil {
		return err
	}
	if res.SumC, err = collective.AllreduceScalar(c, vsum, collective.Sum); err != nil {
		return err
	}
	h, err := spgemm.Checksum(c, cd)
	if err != nil {
		return err
	}
	res.Checksum = fmt.Sprintf("%016x", h)
	ph := first.Phase(spgemm.Phase)
	sent, _, err := collective.AllgatherSlice(c, []int64{ph.SentBytes})
	if err != nil {
		return err
	}
	recv, _, err := collective.AllgatherSlice(c, []int64{ph.RecvBytes})
	if err != nil {
		return err
	}
	res.SentPerRank, res.RecvPerRank = sent, recv
	for r := range c.Size() {
		res.MaxSent, res.MaxRecv = max(res.MaxSent, sent[r]), max(res.MaxRecv, recv[r])
		res.TotalSent += sent[r]
	}
	return nil
}

// printSpGEMM prints the human-readable summary of a product (nnzA: the
// entries of the rows of A multiplied).
func printSpGEMM(env *Env, cfg *spgemmConfig, res *SpGEMMResult, nnzA int64, p int, load float64) {
	desc := cfg.algo
	switch cfg.algo {
	case "1.5d":
		desc += fmt.Sprintf(" (c=%d, %d×%d grid)", cfg.c, cfg.pr, cfg.pc)
	case "2d":
		desc += fmt.Sprintf(" (%d×%d grid)", cfg.pr, cfg.pc)
	}
	env.Printf("spgemm %s, %s, %d ranks × %d threads: C = A·B is %d×%d (A %d×%d, %d entries; B %d entries)\n",
		desc, cfg.semiring, p, cfg.threads, res.M, res.N, res.M, res.K, nnzA, res.NNZB)
	env.Printf("time      %.4fs median of %d (min %.4fs), slowest rank; load %.2fs\n", res.Seconds, cfg.reps, res.SecondsMin, load)
	env.Printf("flops     %d, %.1f MFLOP/s\n", res.Flops, res.MFLOPS)
	env.Printf("nnz(C)    %d, sum %.17g, checksum %s\n", res.NNZC, res.SumC, res.Checksum)
	env.Printf("bytes     per rank sent %v, received %v; max sent %s, total sent %s\n",
		res.SentPerRank, res.RecvPerRank, human(res.MaxSent), human(res.TotalSent))
	if res.Verified != nil {
		env.Printf("verified  every block equals the local product\n")
	}
}

// verifyBlock compares this rank's block of C with the same block of the
// local product of a and b (its rows: rows[RowOff:…] when rows is not nil),
// exactly, and describes the first difference ("" if none).
func verifyBlock[T sparse.Scalar, S sparse.Semiring[T]](sr S, cd *spgemm.Dist[T], a, b *sparse.Matrix[T], rows []int64, threads int) string {
	m := cd.Local.NRows
	sel := make([]int64, m)
	for x := range sel {
		sel[x] = cd.RowOff() + int64(x)
		if rows != nil {
			sel[x] = rows[sel[x]]
		}
	}
	ref, err := sparse.MulRowsSR(sr, sel, a, b, &sparse.Options{Threads: threads})
	if err != nil {
		return err.Error()
	}
	if cd.ColBounds[cd.J] != 0 || cd.ColBounds[cd.J+1] != cd.N {
		ref = spgemm.Distribute(ref, []int64{0, m}, cd.ColBounds, 0, cd.J, 0).Local
	}
	got := cd.Local
	if got.NRows != ref.NRows || got.NCols != ref.NCols {
		return fmt.Sprintf("block (%d,%d) is %d×%d, want %d×%d", cd.I, cd.J, got.NRows, got.NCols, ref.NRows, ref.NCols)
	}
	for i := range m {
		gr, wr := got.Row(i), ref.Row(i)
		if len(gr) != len(wr) {
			return fmt.Sprintf("row %d has %d entries, want %d", cd.RowOff()+i, len(gr), len(wr))
		}
		for x := range wr {
			g, w := got.Indptr[i]+int64(x), ref.Indptr[i]+int64(x)
			if got.Indices[g] != ref.Indices[w] || got.Values[g] != ref.Values[w] {
				return fmt.Sprintf("row %d entry %d: got (%d, %v), want (%d, %v)", cd.RowOff()+i, x,
					cd.ColOff()+got.Indices[g], got.Values[g], cd.ColOff()+ref.Indices[w], ref.Values[w])
			}
		}
	}
	return ""
}

// toFloat converts a value of C to float64 (true is 1).
func toFloat[T sparse.Scalar](v T) float64 {
	switch x := any(v).(type) {
	case float64:
		return x
	case bool:
		if x {
			return 1
		}
		return 0
	}
	return 0
}

// toCSR converts C to float64 for writing.
func toCSR[T sparse.Scalar](a *sparse.Matrix[T]) *sparse.CSR {
	if x, ok := any(a).(*sparse.CSR); ok {
		return x
	}
	out := &sparse.CSR{NRows: a.NRows, NCols: a.NCols, Indptr: a.Indptr, Indices: a.Indices, Values: make([]float64, a.NNZ())}
	for q, v := range a.Values {
		out.Values[q] = toFloat(v)
	}
	return out
}
